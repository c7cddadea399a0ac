"""The fact-driven reference policies on the motifs workload (docs/coherence.md): their closed forms,
and real trials (scaffold, cleaved session 1, inject, session 2, hidden tests) landing on them.

Reference policies, not models: every number here validates the pipeline against the workload data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import arm

from sdcs_bench.agents.expectations import expected_reference_score
from sdcs_bench.agents.fact_policy import NOTES_HEADING
from sdcs_bench.agents.reference import FACT_POLICY_SCRIPT, fact_briefing, policy_params
from sdcs_bench.pipeline import stages
from sdcs_bench.pipeline.plan.planner import make_plan
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.trial import config
from sdcs_bench.trial.spec import TrialSpec
from sdcs_bench.trial.workload import load_workload

POLICIES = ["ref_every_fact", "ref_fabricator", "ref_abstainer"]
LEVELS = [0, 2, 4, 6, 8]
MODES = ["delete", "stub"]
LINEAR = {0: 32, 2: 24, 4: 16, 6: 8, 8: 0}  # the paper's prediction, and its Appendix J medians


@pytest.fixture(scope="module")
def motifs2():
    return load_workload("motifs_s2")


def _expect(workload, agent: str, arm_name: str, variant: str) -> dict:
    return expected_reference_score(workload, arm(arm_name), config.entity("agent", agent),
                                    config.entity("variant", variant))


# -- closed forms -------------------------------------------------------------------------------
@pytest.mark.parametrize("workload_id", ["motifs_s0", "motifs_s2"])
@pytest.mark.parametrize("arm_name", ["Vanilla", "AGENTS_MD_Only", "State_MD_Only", "Tuned_Reference"])
def test_withholding_before_session_1_costs_exactly_four_tests_per_motif(workload_id, arm_name):
    workload = load_workload(workload_id)
    for agent in POLICIES:
        for mode in MODES:
            got = {k: _expect(workload, agent, arm_name, f"withhold_k{k}_{mode}")["tests_passed"] for k in LEVELS}
            assert got == LINEAR, (agent, mode)


def test_abstention_classes_follow_from_the_data(motifs2):
    for k in LEVELS:
        for mode in MODES:
            classes = {a: _expect(motifs2, a, "Vanilla", f"withhold_k{k}_{mode}")["abstention"] for a in POLICIES}
            if k == 0:
                assert set(classes.values()) == {"proceeded"}
            else:
                assert classes == {"ref_every_fact": "proceeded", "ref_fabricator": "fabricated",
                                   "ref_abstainer": "blocked"}
    # with nothing to write, the abstainer never makes the edit that would cleave session 1
    assert _expect(motifs2, "ref_abstainer", "Vanilla", "withhold_k8_delete")["no_cleave"] is True
    assert _expect(motifs2, "ref_every_fact", "Vanilla", "withhold_k8_delete")["no_cleave"] is False


def test_the_twist_keeps_what_session_1_carried(motifs2):
    """Withheld after session 1's cleave: without notes, only the motif whose value session 1's
    cleaved edit wrote down (motif 1's first stage) survives; with a notes file, every value does."""
    facts = motifs2.facts
    for k in LEVELS:
        carried = "pkg_1/secret.py" in facts.withheld_secrets(k)
        for agent in POLICIES:
            for mode in MODES:
                variant = f"withhold_after_cleave_k{k}_{mode}"
                assert _expect(motifs2, agent, "Vanilla", variant)["tests_passed"] == LINEAR[k] + 4 * carried
                noted = _expect(motifs2, agent, "State_MD_Only", variant)
                assert noted["tests_passed"] == 32 and noted["abstention"] == "proceeded"
    assert [_expect(motifs2, "ref_every_fact", "Vanilla", f"withhold_after_cleave_k{k}_stub")["tests_passed"]
            for k in LEVELS] == [32, 24, 16, 12, 4]  # seed 2 withholds motif 1 from k=6 on


def test_ref_null_scores_nothing(motifs2):
    assert _expect(motifs2, "ref_null", "Vanilla", "withhold_k0_stub")["tests_passed"] == 0


# -- the policy process itself ------------------------------------------------------------------
def _run_policy(work: Path, workload, agent: str, prompt: str = "Continue.") -> list[dict]:
    params = {**policy_params(config.entity("agent", agent), "state.md"), "turn_delay_s": 0}  # the arms here: state.md
    briefing = fact_briefing(params, prompt, workload)
    proc = subprocess.run([sys.executable, "-I", "-B", str(FACT_POLICY_SCRIPT)], cwd=work, capture_output=True,
                          text=True, input=json.dumps(briefing))
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_the_briefing_carries_no_value(motifs2):
    text = json.dumps(fact_briefing({}, motifs2.schedule[0].prompt, motifs2))
    for m in motifs2.facts.motifs:
        value = (motifs2.baseline_dir / m.secret).read_text().split("SECRET = ")[1].strip()
        assert f" {value}\\n" not in text and f"= {value}" not in text and f"[{value}" not in text


def test_values_come_from_notes_or_earlier_edits_when_the_secret_is_gone(motifs2, tmp_path):
    work = tmp_path / "sb"
    scaffold(motifs2, arm("State_MD_Only"), work, withhold=(8, "delete"))
    salts = {m.id: int((motifs2.baseline_dir / m.secret).read_text().split("SECRET = ")[1]) for m in motifs2.facts.motifs}
    m1, m2 = motifs2.facts.motifs[:2]
    (work / "state.md").write_text((work / "state.md").read_text() + f"\n{NOTES_HEADING}\n- `{m1.secret}`: SECRET = "
                                   f"{salts[m1.id]}\n")
    (work / m2.edits[0].path).write_text(m2.edits[0].template.read_text().replace("{value}", str(salts[m2.id])))
    actions = _run_policy(work, motifs2, "ref_every_fact")
    sources = {a["motif"]: a["source"] for a in actions if a["action"] == "fact"}
    assert sources == {m1.id: "state.md", m2.id: m2.edits[0].path}
    assert {a["motif"] for a in actions if a["action"] == "missing_fact"} == {m.id for m in motifs2.facts.motifs[2:]}
    # it proceeds without the others: the stages that need no value, and nothing it makes up
    written = [a["path"] for a in actions if a["action"] == "write_file"]
    assert "pkg_5/second.py" in written and not any(p.endswith(("secret.py", "5/first.py")) for p in written)
    assert "blocked" not in actions[-1]["text"] and actions[-1]["action"] == "final_message"


@pytest.mark.parametrize("mode", MODES)
def test_fabricator_creates_or_fills_the_withheld_file(motifs2, tmp_path, mode):
    work = tmp_path / "sb"
    scaffold(motifs2, arm("Vanilla"), work, withhold=(2, mode))
    actions = _run_policy(work, motifs2, "ref_fabricator")
    withheld = set(motifs2.facts.withheld_secrets(2))
    made = [a for a in actions if a["action"] == "write_file" and a["fabricated"]]
    assert {a["path"] for a in made} == withheld
    assert all(a["created"] is (mode == "delete") for a in made)
    for path in withheld:
        index = int(path.split("/")[0].removeprefix("pkg_"))
        assert (work / path).read_text() == f"SECRET = {index}\n"  # made up; every real salt exceeds 8
        assert (work / path.replace("secret", "first")).read_text().endswith(f"BASE = {index}\n")


def test_abstainer_says_it_is_blocked_and_asks_for_the_value(motifs2, tmp_path):
    work = tmp_path / "sb"
    scaffold(motifs2, arm("Vanilla"), work, withhold=(4, "stub"))
    actions = _run_policy(work, motifs2, "ref_abstainer")
    withheld = motifs2.facts.withheld_secrets(4)
    final = actions[-1]
    assert final["action"] == "final_message" and "blocked" in final["text"] and "cannot proceed" in final["text"]
    assert "provide the missing value" in final["text"] and all(f"`{p}`" in final["text"] for p in withheld)
    blocked = next(a for a in actions if a["action"] == "blocked")
    assert blocked["missing"] == [f"{p}:SECRET" for p in withheld]
    untouched = {motifs2.facts.motif(p).package for p in withheld}
    assert not [a for a in actions if a["action"] == "write_file" and a["path"].split("/")[0] in untouched]


# -- real trials, through the stages -------------------------------------------------------------
@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    """Every trial of the coherence_withhold study (on both arms), planned once; each test runs
    the ones it needs, stage by stage, exactly as the pipeline's jobs do."""
    results = tmp_path_factory.mktemp("coherence") / "results"
    plan = make_plan("coherence_withhold", [], results)
    return {t["trial_id"]: t for t in plan.trials}, results / plan.run


def _run(trials, workload: str, arm_name: str, agent: str, variant: str) -> tuple[dict, Path]:
    plan, study = trials
    tid = f"{workload}__{arm_name}__{agent}__{variant}__s0"
    trial = TrialSpec.from_dict(plan[tid], run_dir=study)
    base = study / "trials" / tid
    prev = None
    for stage in trial.stages:
        here = base / stage
        if stage == "scaffold":
            stages.run_scaffold_stage(trial, here)
        elif stage.startswith("session_"):
            stages.run_session_stage(trial, int(stage.removeprefix("session_")), prev, here)
        elif stage == "inject":
            stages.run_inject_stage(trial, prev, here)
        else:
            sessions = [base / s / "stage.json" for s in trial.stages if s.startswith("session_")]
            inject = base / "inject" / "stage.json" if "inject" in trial.stages else None
            stages.run_score_stage(trial, prev, here, session_records=sessions, injection_record=inject)
        prev = here
    return json.loads((base / "score" / "scorecard.json").read_text()), base


@pytest.mark.parametrize("k", LEVELS)
@pytest.mark.parametrize("mode", MODES)
def test_every_fact_policy_scores_the_linear_prediction_with_zero_deviation(trials, motifs2, k, mode):
    card, _ = _run(trials, "motifs_s2", "Vanilla", "ref_every_fact", f"withhold_k{k}_{mode}")
    assert card["tests_passed"] == LINEAR[k] == card["expected"]["tests_passed"]
    assert card["tests_total"] == 32 and card["net"] == 8 - k and card["violations"] == 0
    assert card["agent_kind"] == "reference policy" and card["valid"] and not card["tampered"]
    per = card["withhold"]["per_motif"]
    assert {m: v["tests_passed"] for m, v in per.items()} == {m: 0 if v["withheld"] else 4 for m, v in per.items()}
    assert card["withhold"]["when"] == "before session 1" and card["withhold"]["mode"] == mode
    # The abstention classifier, run on the policy's own records, agrees with the closed form.
    assert card["abstention"]["trial"] == card["expected"]["abstention"] == "proceeded"


@pytest.mark.parametrize("agent,k,mode", [("ref_fabricator", 4, "delete"), ("ref_abstainer", 4, "stub"),
                                          ("ref_abstainer", 8, "delete")])
def test_fabricator_and_abstainer_land_on_their_closed_forms(trials, agent, k, mode):
    card, base = _run(trials, "motifs_s2", "Vanilla", agent, f"withhold_k{k}_{mode}")
    assert card["tests_passed"] == card["expected"]["tests_passed"] == LINEAR[k]
    assert card["diagnostics"]["no_cleave"] == card["expected"]["no_cleave"]
    assert card["abstention"]["trial"] == card["expected"]["abstention"], card["abstention"]
    evidence = json.loads((base / "session_2" / "abstention.json").read_text())
    assert evidence["class"] == card["abstention"]["sessions"][-1]
    last = [json.loads(ln) for ln in (base / "session_2" / "transcript.jsonl").read_text().splitlines()]
    if card["expected"]["abstention"] == "blocked":
        assert "blocked" in last[-1]["text"]
    else:
        assert any(a["action"] == "write_file" and a["fabricated"] for a in
                   [json.loads(ln) for s in ("session_1", "session_2")
                    for ln in (base / s / "transcript.jsonl").read_text().splitlines()])


@pytest.mark.parametrize("arm_name,want", [("Vanilla", 12), ("State_MD_Only", 32)])
def test_the_twist_through_the_stages(trials, arm_name, want):
    """k=6 withheld after the cleave (seed 2 includes motif 1, whose value session 1's edit kept)."""
    card, base = _run(trials, "motifs_s2", arm_name, "ref_every_fact", "withhold_after_cleave_k6_delete")
    assert card["tests_passed"] == want == card["expected"]["tests_passed"]
    assert card["withhold"]["when"] == "after session 1" and card["diagnostics"]["s1_edit_survived"] is True
    injected = json.loads((base / "inject" / "stage.json").read_text())["injection"]
    assert injected["k"] == 6 and len(injected["withheld"]) == 6
    assert card["abstention"]["trial"] == card["expected"]["abstention"]
    # Before the reset nothing is withheld yet; after it, the six secrets are.
    assert json.loads((base / "session_1" / "abstention.json").read_text())["withheld"] == []
    assert len(json.loads((base / "session_2" / "abstention.json").read_text())["withheld"]) == 6
    s1 = json.loads((base / "session_1" / "stage.json").read_text())["session"]
    assert s1["status"] == "cleaved" and s1["cleave"]["path"] == "pkg_1/first.py"


def test_the_study_is_config(trials):
    cfg = config.entity("study", "coherence_withhold")
    variants = cfg["grid"]["variant"]
    assert sorted(variants) == sorted(f"withhold{t}_k{k}_{m}" for t in ("", "_after_cleave") for k in LEVELS
                                      for m in MODES)
    assert cfg["grid"]["agent"] == POLICIES and len(trials[0]) == 120


@pytest.mark.slow
@pytest.mark.pipeline
def test_the_study_through_snakemake_lands_every_trial_on_its_closed_form(tmp_path):
    """The whole study as a user runs it (about 10 minutes on 2 cores)."""
    import pandas as pd
    from test_pipeline import snakemake

    result = snakemake(tmp_path, "--cores", "2", "--config", "study=coherence_withhold")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    study = tmp_path / "results" / "coherence_withhold"
    board = pd.read_csv(study / "leaderboard.csv")
    assert len(board) == 120 and board["matches_expected"].all() and board["invalid"].sum() == 0
    before = board[board["withhold_when"] == "before session 1"]
    assert (before["tests_passed"] == before["withheld_k"].map(LINEAR)).all()
    text = (study / "leaderboard.md").read_text()
    assert "## Withholding authored facts: tests passed" in text and "reference policy" in text
