"""Cross-agent handoff (docs/protocol.md#handoff): the grid axis ``successor`` runs every session
after the first with another agent, by config only; the trial, scorecard, leaderboard and report
name both; reference pairs land on their closed forms; real harnesses continue each other's work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import arm

from sdcs_bench.agents.expectations import expected_reference_score
from sdcs_bench.pipeline.labels import handoff_label
from sdcs_bench.trial import config
from sdcs_bench.trial.workload import load_workload


def _plan(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "sdcs_bench.cli", "plan", "--results", str(tmp_path)]
    for o in overrides:
        argv += ["--override", o]
    return subprocess.run(argv, capture_output=True, text=True)


def _expect(first: str, then: str, arm_name: str = "State_MD_Only") -> int:
    return expected_reference_score(load_workload("tier_2"), arm(arm_name), config.entity("agent", first),
                                    config.entity("variant", "none"), successor=config.entity("agent", then))["net"]


def test_a_handoff_is_a_grid_axis_named_in_the_trial_id_and_planned_once_when_it_is_the_agent_itself(tmp_path):
    run = _plan(tmp_path, "agent=[ref_verbatim_notes,ref_amnesiac]", "successor=[same,ref_amnesiac]", "arm=Vanilla",
                "variant=none", "seed=[0]")
    assert run.returncode == 0, run.stderr
    cells = next(tmp_path.glob("*/plan/cells.tsv"))
    rows = [line.split("\t") for line in cells.read_text().splitlines()]
    header, rows = rows[0], rows[1:]
    agents = sorted(r[header.index("agent")] for r in rows)
    assert agents == ["ref_amnesiac", "ref_verbatim_notes", "ref_verbatim_notes.then.ref_amnesiac"]
    trial = next(cells.parent.glob("trials/*then*.json"))
    data = json.loads(trial.read_text())
    assert data["agent"]["name"] == "ref_verbatim_notes" and data["successor"]["name"] == "ref_amnesiac"
    assert "__ref_verbatim_notes.then.ref_amnesiac__" in data["trial_id"]


@pytest.mark.parametrize("overrides,message", [
    (["successor=[gpt_9]"], "unknown successor 'gpt_9'; valid choices: aider_gpt5, "),
    (["workload=[standards]", "agent=[ref_follow_standard]", "successor=[ref_amnesiac]", "variant=[none]"],
     "runs a whole trial alone"),
])
def test_a_bad_successor_is_one_line_before_any_work(tmp_path, overrides, message):
    run = _plan(tmp_path, *overrides)
    assert run.returncode == 2 and message in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())
    assert "same" in run.stderr or "gpt_9" not in message


def test_reference_pairs_have_closed_forms_of_their_own():
    # A note-writer followed by an amnesiac: the notes carry every requirement across (the
    # amnesiac reads the notes file it finds); the reverse: nothing was noted, one edit survives.
    assert _expect("ref_verbatim_notes", "ref_amnesiac") == 8
    assert _expect("ref_amnesiac", "ref_verbatim_notes") == 1
    # Pairs whose score neither agent reaches alone (verbatim alone 8, null 0, reverter 0,
    # amnesiac 1, diff_check 8 in this arm):
    assert _expect("ref_verbatim_notes", "ref_null") == 1  # the cleaved edit, nobody to finish
    assert _expect("ref_reverter", "ref_verbatim_notes") == 1  # nothing noted: only the uncommitted edit
    assert _expect("ref_amnesiac", "ref_diff_check") == 0  # it undoes the edit it cannot account for
    assert expected_reference_score(load_workload("tier_2"), arm("Vanilla"), config.entity("agent", "ref_oracle"),
                                    config.entity("variant", "none"),
                                    successor=config.entity("agent", "replay_codex")) is None  # a model: no closed form


def test_a_handoff_row_names_both_sources():
    assert handoff_label("reference policy", "reference policy") == "reference policy"
    assert handoff_label("real agent: gpt-5 via codex", "reference policy") == \
        "real agent: gpt-5 via codex, then reference policy"
    assert handoff_label("reference policy", "") == "reference policy"


def _snakemake(tmp_path: Path, name: str, **axes: list[str]):
    from test_pipeline import run_grid

    return run_grid(tmp_path, "smoke", name, **axes)


@pytest.mark.pipeline
def test_reference_pairs_land_on_their_closed_forms(tmp_path):
    board, _ = _snakemake(tmp_path, "pairs", workload=["tier_2"], arm=["State_MD_Only"],
                          agent=["ref_verbatim_notes", "ref_amnesiac"],
                          successor=["ref_amnesiac", "ref_null", "ref_verbatim_notes"], variant=["none"])
    assert len(board) == 6 and board["matches_expected"].all(), board.to_string()
    net = dict(zip(board["agent"], board["net"]))
    assert net["ref_verbatim_notes.then.ref_amnesiac"] == 8 and net["ref_amnesiac.then.ref_verbatim_notes"] == 1
    assert net["ref_verbatim_notes.then.ref_null"] == 1 and net["ref_verbatim_notes"] == 8
    assert set(board["source"]) == {"reference policy"}


@pytest.mark.pipeline
def test_real_harnesses_of_different_wire_protocols_hand_over_in_both_directions(tmp_path):
    """Claude Code (Anthropic Messages) and Codex (OpenAI Responses), each on its replay script:
    S1 by one is cleaved, S2 by the other finishes and commits; the scorecard names both, each
    session's ledger is its own agent's, and the leaderboard's source says who ran."""
    board, run = _snakemake(tmp_path, "relay", workload=["tier_2"], arm=["AGENTS_MD_Only"],
                            agent=["replay_claude_code", "replay_codex"],
                            successor=["replay_codex", "replay_claude_code"], variant=["none"])
    assert len(board) == 4
    for first, then, protocols in (("claude_code", "codex", ("anthropic", "openai")),
                                   ("codex", "claude_code", ("openai", "anthropic"))):
        name = f"replay_{first}.then.replay_{then}"
        row = board[board["agent"] == name].iloc[0]
        assert row["source"] == f"replay ({first}, scripted, no model), then replay ({then}, scripted, no model)"
        trial = run / "trials" / f"tier_2__AGENTS_MD_Only__{name}__none__s0"
        card = json.loads((trial / "score" / "scorecard.json").read_text())
        assert card["agent"] == name and card["successor"]["name"] == f"replay_{then}"
        s1, s2 = card["diagnostics"]["sessions"]
        assert (s1["agent"], s1["harness"], s1["status"]) == (f"replay_{first}", first, "cleaved")
        assert (s2["agent"], s2["harness"], s2["status"]) == (f"replay_{then}", then, "ok")
        for session, protocol in zip(("session_1", "session_2"), protocols):
            rows = [json.loads(line) for line in (trial / session / "ledger.jsonl").read_text().splitlines()]
            assert rows and {r["protocol"].split("_")[0] for r in rows if r.get("kind") == "generate"} == {protocol}
        log = subprocess.run(["git", "log", "--format=%s"], cwd=_final_tree(trial), capture_output=True, text=True).stdout
        assert "finish" in log.split("\n")[0]
        assert card["tokens"]["total"] == s1["tokens"] + s2["tokens"] and card["valid"] is True


def _final_tree(trial: Path) -> Path:
    """The repository as the last session left it (its snapshot, unpacked)."""
    import tarfile

    out = trial / "final-tree"
    if not out.exists():
        out.mkdir()
        with tarfile.open(trial / "session_2" / "snapshot.tar.gz") as tar:
            tar.extractall(out, filter="data")
    return out
