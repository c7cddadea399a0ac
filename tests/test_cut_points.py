"""Cut points as data (docs/protocol.md#cut-points): ``nth_py_edit:N``, ``after_tokens:T`` and
``after_turns:N`` as variants of any workload's schedule; the token and turn rules counted by the
proxy for a real harness and by the meter for a reference policy, each landing on its closed form."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import arm
from harness_support import run_replay_session, scaffold_tier2, served_entries, served_usage

from sdcs_bench.agents.expectations import expected_reference_score
from sdcs_bench.core.tokens import count_tokens, meter_tokens
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.session.cleave import CleaveController
from sdcs_bench.session.integrity import Watched, known_commits, session_integrity
from sdcs_bench.trial import config
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.trial.workload_model import CleaveRule

ROOT = Path(__file__).resolve().parents[1]


# -- the rules -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["after_tokens:-1", "after_tokens:0", "after_tokens", "after_turns:x",
                                  "after_turns:1.5", "nth_py_edit:0", "after_minutes:3"])
def test_a_bad_cut_rule_is_one_clear_error(text):
    with pytest.raises(SpecSnapError) as err:
        CleaveRule.parse(text)
    said = str(err.value)
    assert "\n" not in said.strip() and text.split(":")[0] in said
    assert "after_tokens" in said or "positive whole number" in said


def test_rules_round_trip_and_say_what_they_count():
    for text in ("after_tokens:2000", "after_turns:3", "nth_py_edit:5", "first_py_edit", "none"):
        assert str(CleaveRule.parse(text)) == text
    assert CleaveRule.parse("after_tokens:5").metered and not CleaveRule.parse("nth_py_edit:5").metered
    assert CleaveRule.parse("nth_py_edit:5").edit_limit == 5 and CleaveRule.parse("after_turns:2").edit_limit is None


@pytest.mark.parametrize("tier", ["tier_1", "tier_2", "tier_4"])
def test_a_cut_variant_replaces_the_rule_of_every_cleaved_session_only(tier):
    workload = load_workload(tier)
    for variant in ("cut_nth_3", "cut_turns_2", "cut_tokens_2000"):
        cfg = config.entity("variant", variant)
        sessions = effective_schedule(workload, cfg)
        for own, cut in zip(workload.schedule, sessions):
            assert cut.cleave == (CleaveRule.parse(cfg["cleave"]) if own.cleave.active else own.cleave)


def test_the_variants_are_listed():
    import sys

    variants = set(config.options("variant"))
    assert {f"cut_nth_{n}" for n in (1, 2, 3, 5, 8)} <= variants
    assert {"cut_turns_1", "cut_turns_2", "cut_tokens_2000"} <= variants
    shown = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "list", "variants"], capture_output=True, text=True,
                           env={**__import__("os").environ, "COLUMNS": "400"})
    assert shown.returncode == 0 and "cut_share_50" in shown.stdout and "cut_tokens_8000" in shown.stdout
    # the handoff is a grid axis, and the list of variants says where it is
    assert "grid axis `successor`" in shown.stdout and 'successor=[ref_null]' in shown.stdout


def test_the_meter_counts_o200k_tokens_of_each_text_a_step_handles():
    assert meter_tokens("hello world") == count_tokens("hello world") == 2
    assert meter_tokens("hello world", "", "hello world") == 4  # per text, summed; an empty text is free
    assert meter_tokens() == 0


# -- the closed forms ------------------------------------------------------------------------------
def _expect(agent: str, arm_name: str, variant: str, tier: str = "tier_2") -> dict:
    return expected_reference_score(load_workload(tier), arm(arm_name), config.entity("agent", agent),
                                    config.entity("variant", variant))


def test_a_turn_cut_counts_the_read_then_each_patch():
    tier2 = load_workload("tier_2")
    prompt = tier2.schedule[0].prompt
    one = _expect("ref_amnesiac", "Vanilla", "cut_turns_1")
    assert one["s1_cut"] == {"at_turns": 1, "at_tokens": meter_tokens(prompt)}
    assert one["net"] == 0 and one["no_cleave"] is False  # cut before anything: S2 knows nothing
    four = _expect("ref_amnesiac", "Vanilla", "cut_turns_4")
    first_two = [r.gold.read_text() for r in tier2.requirements[:3]]
    assert four["s1_cut"] == {"at_turns": 4, "at_tokens": meter_tokens(prompt, *first_two)}
    assert four["net"] == 2  # two patches applied and committed before the third call reached the cut
    assert four["s1_edit_survived"] is None  # a token or turn rule cuts no edit


def test_notes_cost_tokens_and_turns_on_the_meter():
    vanilla = _expect("ref_verbatim_notes", "Vanilla", "cut_turns_2")
    noted = _expect("ref_verbatim_notes", "State_MD_Only", "cut_turns_2")
    assert noted["s1_cut"]["at_tokens"] > vanilla["s1_cut"]["at_tokens"]  # its second call writes the notes
    assert noted["net"] == 0  # cut before the notes were written: nothing carried
    assert _expect("ref_verbatim_notes", "State_MD_Only", "cut_turns_4")["net"] == 8


def test_a_token_cut_that_is_never_reached_is_no_cleave():
    result = _expect("ref_oracle", "Vanilla", "cut_tokens_8000")
    assert result["no_cleave"] is True and "s1_cut" not in result and result["net"] == 8


def test_nth_edit_cuts_have_closed_forms_in_order():
    nets = [_expect("ref_amnesiac", "Vanilla", f"cut_nth_{n}")["net"] for n in (1, 2, 3, 5, 8)]
    assert nets == [1, 2, 3, 5, 8]
    assert _expect("ref_amnesiac", "Vanilla", "cut_nth_1") == {**_expect("ref_amnesiac", "Vanilla", "none")}


def test_a_policy_without_a_meter_refuses_a_token_cut_before_any_work():
    from sdcs_bench.pipeline.plan.compat import check_policy_meters

    rules = [CleaveRule.parse("after_tokens:100")]
    fact = next(a for a in config.options("agent") if config.entity("agent", a).get("policy", {}).get("on_missing_fact"))
    with pytest.raises(SpecSnapError, match="does not meter"):
        check_policy_meters(config.entity("agent", fact), {"name": "cut_tokens_100"}, rules)
    check_policy_meters(config.entity("agent", "ref_amnesiac"), {"name": "cut_tokens_100"}, rules)
    check_policy_meters(config.entity("agent", fact), {"name": "cut_nth_3"}, [CleaveRule.parse("nth_py_edit:3")])


# -- the controller --------------------------------------------------------------------------------
def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    for argv in (["init", "-q", "-b", "main"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                                                   "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, env=env)
    return repo


def test_the_call_that_reaches_the_token_cut_fires_it_and_every_later_call_is_refused(tmp_path):
    repo = _repo(tmp_path)
    controller = CleaveController(repo, CleaveRule.parse("after_tokens:100"), [])
    controller.start()
    try:
        assert controller.refusal() is None
        assert controller.count_call(60, seq=1) is False and not controller.fired.is_set()
        assert controller.refusal() is None
        assert controller.count_call(50, seq=3) is True
        assert controller.refusal() == "cleaved"
        assert controller.count_call(500, seq=4) is True and controller.tokens == 110  # nothing counted after it
        rec = controller.record
        assert (rec["by"], rec["at_tokens"], rec["at_turns"], rec["ledger_seq"], rec["path"]) == ("proxy", 110, 2, 3, None)
        assert (repo / ".git/specsnap/guard").read_text().strip() == "cleaved"
        assert controller.known_at_fire == known_commits(repo)
    finally:
        controller.stop()


def test_a_commit_that_lands_after_a_token_cut_makes_the_session_invalid(tmp_path):
    repo = _repo(tmp_path)
    rule = CleaveRule.parse("after_turns:1")
    before = known_commits(repo)
    fired = before | set()
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null", "commit", "-q",
                    "--allow-empty", "-m", "late"], cwd=repo, check=True)
    common = dict(rule=rule, exempt=[], cleave={"fired": True, "path": None}, commits_before=before, before={}, after={})
    late = session_integrity(repo, **common, watched=Watched(known_at_fire=fired))
    assert late["ok"] is False and "after the cut" in late["problem"] and len(late["commits"]) == 1
    in_time = session_integrity(repo, **common, watched=Watched(known_at_fire=known_commits(repo)))
    assert in_time["ok"] is True, in_time


# -- real harnesses on the replay server -----------------------------------------------------------
@pytest.mark.parametrize("agent", ["replay_claude_code", "replay_codex"])
def test_a_real_harness_is_cut_at_the_call_that_reaches_the_token_count(tmp_path, agent):
    """Session 2 of the harness's replay script (three replies): the second reply's usage takes the
    total past T, so the cut fires there; the third is never answered."""
    first = served_usage(agent, 2, 1).total
    workdir = scaffold_tier2(tmp_path / "repo")
    run = run_replay_session(agent, workdir, tmp_path / "s", 2, cleave=f"after_tokens:{first + 1}", timeout_s=120)
    cleave = run.record["cleave"]
    assert run.record["status"] == "cleaved" and cleave["fired"] and cleave["by"] == "proxy", cleave
    assert cleave["at_turns"] == 2 and cleave["at_tokens"] == served_usage(agent, 2, 1, 2).total
    assert served_entries(run.ledger) == [1, 2]  # answered; anything after is refused and ledgered as such
    answered = [r for r in run.ledger if r.get("kind") == "generate" and not r.get("refused")]
    assert answered[-1]["seq"] == cleave["ledger_seq"]
    assert all(r["refused"] and r["refused_reason"] == "cleaved" for r in run.ledger
               if r.get("kind") == "generate" and r["seq"] > cleave["ledger_seq"])
    assert cleave["integrity"]["ok"] is True
    at = cleave["counted"].pop("at")  # when each counted call was answered
    assert cleave["counted"] == {"calls": 2, "tokens": cleave["at_tokens"], "by": "proxy",
                                 "per_call": [first, cleave["at_tokens"] - first]}
    assert len(at) == 2 and at[0] <= at[1] <= cleave["wall_time"]
    assert "edit_uncommitted" not in cleave and cleave["path"] is None


@pytest.mark.parametrize("agent", ["replay_claude_code", "replay_codex"])
def test_a_real_harness_is_cut_at_its_nth_answered_call(tmp_path, agent):
    workdir = scaffold_tier2(tmp_path / "repo")
    run = run_replay_session(agent, workdir, tmp_path / "s", 2, cleave="after_turns:1", timeout_s=120)
    cleave = run.record["cleave"]
    assert run.record["status"] == "cleaved" and cleave["at_turns"] == 1 and cleave["rule"] == "after_turns:1"
    assert served_entries(run.ledger) == [1]
    assert run.git("rev-parse", "HEAD").strip() == run.start_head  # its commit came after the cut: never landed


def test_a_turn_cut_that_is_never_reached_is_recorded_as_no_cleave(tmp_path):
    workdir = scaffold_tier2(tmp_path / "repo")
    run = run_replay_session("replay_codex", workdir, tmp_path / "s", 2, cleave="after_turns:50", timeout_s=120)
    cleave = run.record["cleave"]
    assert cleave["fired"] is False and cleave["no_cleave"] is True and cleave["counted"]["calls"] == 3
    assert run.record["status"] == "ok"


# -- reference policies through the pipeline ----------------------------------------------------------
def _sweep(tmp_path: Path, name: str, **axes: list[str]):
    from test_pipeline import run_grid

    return run_grid(tmp_path, "cut_sweep", name, **axes)


@pytest.mark.pipeline
def test_cuts_at_a_share_of_the_control_s_tokens_land_on_their_closed_forms_and_draw_the_curve(tmp_path):
    board, run = _sweep(tmp_path, "shares", workload=["tier_2"], arm=["State_MD_Only"], agent=["ref_compressed_notes"],
                        variant=["uninterrupted", "cut_share_25", "cut_share_75", "cut_turns_4"])
    assert len(board) == 4 and board["matches_expected"].all(), board.to_string()
    assert set(board["cut_rule"].dropna()) == {"after_token_share:25", "after_token_share:75", "after_turns:4"}
    trial = "tier_2__State_MD_Only__ref_compressed_notes__cut_share_75__s0"
    card = json.loads((run / "trials" / trial / "score" / "scorecard.json").read_text())
    share = card["diagnostics"]["sessions"][0]["cut_share"]
    control = json.loads((run / "trials" / trial.replace("cut_share_75", "uninterrupted") / "score" /
                          "scorecard.json").read_text())
    assert share["control"] == trial.replace("cut_share_75", "uninterrupted")
    assert share["control_tokens"] == control["diagnostics"]["sessions"][0]["meter_tokens"] == \
        card["expected"]["control_tokens"] > 0
    assert share["resolved"] == f"after_tokens:{-(-75 * share['control_tokens'] // 100)}"
    assert (run / "plots" / "survival_curve.svg").is_file() and (run / "report" / "plots" / "survival_curve.svg").is_file()


def test_a_share_cut_without_its_control_in_the_study_is_one_line_before_any_work(tmp_path):
    import sys

    run = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--study", "cut_sweep", "--results",
                          str(tmp_path), "--override", "workload=[tier_2]", "--override", "variant=[cut_share_50]"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "add the variant 'uninterrupted'" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


def test_only_the_control_of_a_share_cut_keeps_its_meter(tmp_path):
    import sys

    run = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--study", "cut_sweep", "--results",
                          str(tmp_path), "--override", "workload=[tier_2]", "--override", "arm=[Vanilla]", "--override",
                          "agent=[ref_amnesiac]", "--override", "variant=[uninterrupted,cut_share_50,cut_nth_2]"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    keep = {p.stem.split("__")[3]: json.loads(p.read_text()).get("keep_meter", False)
            for p in tmp_path.glob("*/plan/trials/*.json")}
    assert keep == {"uninterrupted": True, "cut_share_50": False, "cut_nth_2": False}


@pytest.mark.pipeline
@pytest.mark.slow
def test_the_sweep_lands_on_its_closed_forms_at_every_kind_of_cut(tmp_path):
    board, run = _sweep(tmp_path, "sweep", workload=["tier_2"], arm=["Vanilla", "State_MD_Only"],
                        agent=["ref_verbatim_notes", "ref_compressed_notes"],
                        variant=["uninterrupted", "cut_nth_1", "cut_nth_3", "cut_turns_2", "cut_turns_4", "cut_share_25",
                                 "cut_share_75", "cut_tokens_2000", "cut_tokens_8000"])
    assert len(board) == 36 and board["matches_expected"].all(), board.to_string()
    card = json.loads((run / "trials/tier_2__State_MD_Only__ref_verbatim_notes__cut_turns_2__s0/score/"
                       "scorecard.json").read_text())
    s1 = card["diagnostics"]["sessions"][0]
    assert (s1["cleave_rule"], s1["cut_by"], s1["cut_at_turns"]) == ("after_turns:2", "meter", 2)
    assert s1["cut_at_tokens"] == card["expected"]["s1_cut"]["at_tokens"]


def test_the_hand_run_proxy_refuses_every_call_after_the_one_that_reaches_the_cut(tmp_path):
    """`specsnap proxy --cut after_tokens:T`: what EXTERNAL_AGENT_PROTOCOL.md tells a person cutting
    a hand-run agent by tokens; a rule the proxy cannot count is one line before it serves."""
    import re
    import signal
    import sys

    import httpx

    script = tmp_path / "s.yaml"
    script.write_text(json.dumps({"responses": [{"text": f"r{i}", "usage": {"uncached_input": 40, "output": 10}}
                                                for i in range(4)]}))
    ledger = tmp_path / "ledger.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "sdcs_bench.cli", "proxy", "--replay", str(script), "--ledger",
                             str(ledger), "--cut", "after_tokens:90"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        url = re.search(r"on (http://\S+);", proc.stderr.readline()).group(1)
        codes = [httpx.post(url + "/v1/chat/completions", json={"model": "m"}).status_code for _ in range(3)]
        said = proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert codes == [200, 200, 403]  # 50, then 100 >= 90: the second is the last answered
    assert "reached at call 2" in said and "100 tokens" in said
    assert json.loads(out)["total"] == 100
    bad = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "proxy", "--ledger", str(ledger), "--cut",
                          "nth_py_edit:2"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "after_tokens" in bad.stderr and len(bad.stderr.strip().splitlines()) <= 2
