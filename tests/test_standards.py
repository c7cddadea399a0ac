"""The standards workload (docs/coherence.md): layouts from composed variants, the syntactic
predicates, the scorecard's decisions, and the standards reference policies' closed forms."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from sdcs_bench.agents.expectations import expected_reference_score
from sdcs_bench.agents.reference import POLICY_SCRIPT
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.scoring.standards import PREDICATES, classify, form_of, standards_report
from sdcs_bench.trial import config
from sdcs_bench.trial import policy_rules
from sdcs_bench.trial import standards as st
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.workload import load_workload

CELLS = [(c, p, s) for c in (4, 10) for p in ("normal", "inverted") for s in ("correct", "none", "stale")]


def variant_name(conflicts: int, polarity: str, standard: str) -> str:
    return f"conflicts_{conflicts}+polarity_{polarity}+standard_{standard}"


@pytest.fixture(scope="module")
def wl():
    return load_workload("standards")


@pytest.fixture(scope="module")
def spec(wl):
    return wl.standards


def vanilla() -> Arm:
    return Arm.from_config(config.entity("arm", "Vanilla"))


# -- variants and layouts ------------------------------------------------------------------------------
def test_a_composed_variant_is_its_parts_merged(spec):
    v = config.entity("variant", "conflicts_4+polarity_inverted+standard_stale")
    assert v["name"] == "conflicts_4+polarity_inverted+standard_stale"
    assert v["standards"] == {"conflicts": 4, "polarity": "inverted", "standard": "stale"}
    both = config.entity("variant", "uninterrupted+standard_none")
    assert both["schedule"] == "single_session" and both["standards"] == {"standard": "none"}
    # an axis the variant leaves out comes from the workload's defaults
    assert spec.layout(both["standards"]).settings() == {"conflicts": 10, "polarity": "normal", "standard": "none"}


@pytest.mark.parametrize("name, message", [
    ("conflicts_4+conflicts_10", "conflicts_4 and conflicts_10 both set standards.conflicts"),
    ("conflicts_4+conflicts_4", "names a part twice"),
    ("conflicts_4+polarity_sideways", "unknown variant 'polarity_sideways'; valid choices: conflicts_10, conflicts_4"),
])
def test_a_bad_composition_is_one_clear_error(name, message):
    with pytest.raises(SpecSnapError, match=message.replace("+", r"\+")):
        config.entity("variant", name)


def test_bad_layout_values_name_the_valid_ones(spec, wl, tmp_path):
    with pytest.raises(SpecSnapError, match=r"conflicts 11 is not a count .*valid choices: 0, 1, 10, 2"):
        spec.layout({"conflicts": 11})
    with pytest.raises(SpecSnapError, match="unknown polarity 'sideways'; valid choices: inverted, normal"):
        spec.layout({"polarity": "sideways"})
    with pytest.raises(SpecSnapError, match="unknown standard condition 'old'; valid choices: correct, none, stale"):
        spec.layout({"standard": "old"})
    with pytest.raises(SpecSnapError, match="'colour' is not an axis"):
        spec.layout({"colour": "red"})
    # before anything is written
    with pytest.raises(SpecSnapError, match="unknown standard condition"):
        scaffold(wl, vanilla(), tmp_path / "sb", {"name": "x", "standards": {"standard": "old"}})
    assert not (tmp_path / "sb").exists()


def test_a_standards_variant_on_another_workload_stops_the_plan(tmp_path):
    from sdcs_bench.pipeline.plan.planner import make_plan

    with pytest.raises(SpecSnapError, match="workload tier_2 is of family 'synthetic'; only workloads of family "
                                            "'standards' have one; valid choices: standards"):
        make_plan("smoke", ["variant=[standard_stale]", "agent=[ref_null]", "arm=[Vanilla]"], tmp_path / "results")
    assert not (tmp_path / "results").exists()


# Where STYLE.md and the existing code disagree, and how many surfaces the code writes the better way:
# written out per cell (docs/coherence.md's table), not computed by the code under test.
DISAGREE = {("correct", "normal"): "c", ("stale", "inverted"): "c", ("correct", "inverted"): "10-c",
            ("stale", "normal"): "10-c", ("none", "normal"): "0", ("none", "inverted"): "0"}


@pytest.mark.parametrize("conflicts, polarity, standard", CELLS)
def test_each_layout_places_the_sources_as_designed(spec, conflicts, polarity, standard):
    layout = spec.layout(config.entity("variant", variant_name(conflicts, polarity, standard))["standards"])
    n = {"c": conflicts, "10-c": 10 - conflicts, "0": 0}[DISAGREE[(standard, polarity)]]
    assert len(layout.disagreeing()) == n
    code_better = sum(f == "better" for f in layout.code_forms().values())
    assert code_better == (10 - conflicts if polarity == "normal" else conflicts)
    files = spec.layout_files(layout)
    assert ("STYLE.md" in files) == (standard != "none")
    if standard != "none":
        for surface in spec.surfaces:
            stated = [f for f in st.FORMS if surface.rules[f] in policy_rules.norm(files["STYLE.md"])]
            assert stated == ["better" if standard == "correct" else "worse"]
    for h in spec.existing:
        assert classify(files[h.module], h) == layout.code_forms()
    if conflicts == 4:  # the surfaces the study names first are contested first
        assert layout.contested == ("money", "field_access", "clock", "log_format")


# -- the predicates ------------------------------------------------------------------------------------
# Hand-written here, beside the workload's own examples (which validate-workload runs).
EXTRA = [
    ("money", "total = sum(parts) // len(parts)\n", "better"),
    ("money", "total = amount\ntotal /= 3\n", "worse"),
    ("field_access", "x = other.get('a', 0)\ny = payload['b']\n", "worse"),
    ("field_access", "def handle_example_received(p):\n    return p['amount_cents']\n", "worse"),
    ("clock", "from datetime import datetime, UTC\nnow = datetime.now(UTC)\n", "better"),
    ("clock", "import datetime\nnow = datetime.datetime.today()\n", "worse"),
    ("timestamp_format", "x = now.date().isoformat()\n", "better"),
    ("log_format", "logging.info('fee %d', fee)\n", "better"),
    ("log_format", "self.logger.error(f'bad {x}')\n", "worse"),
    ("log_format", "log.log(20, 'fee %s', fee)\n", "better"),
    ("handler_name", "async def handle_example_received(payload):\n    return {}\n", "better"),
    ("response_keys", "return_value = dict(fee_cents=1)\n", "absent"),
    ("response_keys", "out = {'processedAt': t, 'processed_at': t}\n", "mixed"),
    ("rate_source", "fee = amount * config.EXAMPLE_FEE_BP // 10_000\n", "better"),
    ("rate_source", "fee = amount * 321.0\n", "absent"),
    ("validation", "def handle_example_received(p):\n    raise ValidationError\n", "better"),
    ("validation", "def handle_example_received(p):\n    return {'error_code': 1}\n", "absent"),
    ("none_check", "ok = None is not note\n", "better"),
    ("none_check", "ok = note != None\n", "worse"),
]


def _examples(spec):
    for surface in spec.surfaces:
        for ex in surface.examples:
            yield surface.id, ex["source"], ex["expect"]


@pytest.mark.parametrize("surface, source, expect", EXTRA)
def test_predicates_classify_hand_written_examples(spec, surface, source, expect):
    assert (form_of(PREDICATES[surface](ast.parse(source), spec.example_context)) or "absent") == expect


def test_the_workloads_own_examples_classify_as_labelled(spec):
    wrong = [(s, src, e) for s, src, e in _examples(spec)
             if (form_of(PREDICATES[s](ast.parse(src), spec.example_context)) or "absent") != e]
    assert not wrong
    assert len(list(_examples(spec))) >= 40


def test_any_mix_of_forms_classifies_as_written(spec):
    rng = random.Random(14)
    for h in (*spec.existing, *spec.tasks):
        for _ in range(12):
            forms = {s: rng.choice(st.FORMS) for s in st.SURFACES}
            assert classify(st.render(st.handler_pieces(h), forms), h) == forms, h.id


def test_a_handler_that_does_not_parse_makes_no_decision(spec, tmp_path):
    layout = spec.default_layout
    st.write_layout(spec, layout, tmp_path)
    task = spec.tasks[0]
    (tmp_path / task.module).write_text(st.gold_source(task).replace("):", ")", 1))
    report = standards_report(spec, layout, tmp_path)
    entry = report["handlers"][task.id]
    assert entry["present"] and not entry["parses"] and report["decisions"] == 0
    assert report["follows"]["absent"] == 10 * len(spec.tasks)


# -- closed forms -------------------------------------------------------------------------------------
# The share of decisions the two standards policies write the better way, per cell, written out:
# following the written standard gives 1 under a correct one and 0 under a stale one; without one it
# follows the code, whose better share is (10 - c)/10 under normal polarity and c/10 under inverted.
FOLLOW_CODE = {(4, "normal"): 0.6, (10, "normal"): 0.0, (4, "inverted"): 0.4, (10, "inverted"): 1.0}


def closed_share(policy: str, conflicts: int, polarity: str, standard: str) -> float:
    if policy == "ref_follow_standard" and standard != "none":
        return {"correct": 1.0, "stale": 0.0}[standard]
    return FOLLOW_CODE[(conflicts, polarity)]


@pytest.mark.parametrize("policy", ["ref_follow_standard", "ref_follow_code"])
@pytest.mark.parametrize("conflicts, polarity, standard", CELLS)
def test_closed_form_of_the_standards_policies(wl, policy, conflicts, polarity, standard):
    variant = config.entity("variant", variant_name(conflicts, polarity, standard))
    exp = expected_reference_score(wl, vanilla(), config.entity("agent", policy), variant)
    share = closed_share(policy, conflicts, polarity, standard)
    assert exp["raw"] == exp["net"] == 12 and exp["s1_edit_survived"] is True and exp["no_cleave"] is False
    got = exp["standards"]
    assert got["decisions"] == 120 and got["better"] == round(120 * share)
    assert got["better_share"] == share
    contested = got["contested_follows"]
    sided = contested["standard"] + contested["code"]
    if policy == "ref_follow_standard" and standard != "none":
        assert contested["code"] == 0 and got["follows"]["code"] == got["follows"]["neither"] == 0
    if policy == "ref_follow_code":
        assert contested["standard"] == 0 and got["follows"]["standard"] == got["follows"]["neither"] == 0
    assert sided == 12 * len(wl.standards.layout(variant["standards"]).disagreeing())


def test_generic_policies_on_the_standards_workload(wl):
    variant = config.entity("variant", "conflicts_4+polarity_inverted+standard_stale")
    oracle = expected_reference_score(wl, vanilla(), config.entity("agent", "ref_oracle"), variant)
    assert oracle["raw"] == 12 and oracle["standards"]["better_share"] == 1.0  # the gold: the better form
    null = expected_reference_score(wl, vanilla(), config.entity("agent", "ref_null"), variant)
    assert null["raw"] == 0 and null["standards"]["decisions"] == 0 and null["standards"]["handlers_written"] == []
    amnesiac = expected_reference_score(wl, vanilla(), config.entity("agent", "ref_amnesiac"), variant)
    assert amnesiac["raw"] == 0  # the tasks are in no prompt: only the queue issues them


def test_a_standards_policy_elsewhere_writes_nothing(tier2):
    exp = expected_reference_score(tier2, vanilla(), config.entity("agent", "ref_follow_standard"),
                                   config.entity("variant", "none"))
    assert exp["raw"] == 0 and exp["no_cleave"] is True and "standards" not in exp


def test_uninterrupted_writes_everything_in_one_uncleaved_session(wl):
    variant = config.entity("variant", "uninterrupted+standard_stale")
    exp = expected_reference_score(wl, vanilla(), config.entity("agent", "ref_follow_standard"), variant)
    assert exp["raw"] == 12 and exp["s1_edit_survived"] is None and exp["standards"]["better"] == 0


# -- the policy process itself, on a scaffolded sandbox ------------------------------------------------
def _run_policy(sandbox: Path, wl, policy: str) -> list[dict]:
    briefing = {"params": {**config.entity("agent", policy)["policy"], "turn_delay_s": 0}, "prompt": "",
                "skills": [], "standards": st.policy_briefing(wl.standards)}
    proc = subprocess.run([sys.executable, "-I", str(POLICY_SCRIPT)], cwd=sandbox, input=json.dumps(briefing),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("policy", ["ref_follow_standard", "ref_follow_code"])
@pytest.mark.parametrize("cell", [(4, "normal", "stale"), (10, "inverted", "none")])
def test_the_policy_process_lands_on_its_closed_form(wl, tmp_path, policy, cell):
    variant = config.entity("variant", variant_name(*cell))
    scaffold(wl, vanilla(), tmp_path / "sb", variant)
    actions = _run_policy(tmp_path / "sb", wl, policy)
    decided = next(a for a in actions if a["action"] == "decide")
    # it read its source from the disk: STYLE.md where it follows the standard and one exists
    expected_source = "standard" if policy == "ref_follow_standard" and cell[2] != "none" else "code"
    assert set(decided["sources"].values()) == {expected_source}
    assert [a["task"] for a in actions if a["action"] == "implement"] == [t.id for t in wl.standards.tasks]
    report = standards_report(wl.standards, wl.standards.layout(variant["standards"]), tmp_path / "sb")
    want = expected_reference_score(wl, vanilla(), config.entity("agent", policy), variant)["standards"]
    assert {k: report[k] for k in st.COMPARED} == {k: want[k] for k in st.COMPARED}
    assert report["better_share"] == closed_share(policy, *cell) and report["sources_modified"] == []


def test_an_edited_source_is_recorded(wl, tmp_path):
    variant = config.entity("variant", "conflicts_4+polarity_normal+standard_correct")
    scaffold(wl, vanilla(), tmp_path / "sb", variant)
    layout = wl.standards.layout(variant["standards"])
    (tmp_path / "sb" / "STYLE.md").write_text("# nothing\n")
    (tmp_path / "sb" / wl.standards.existing[0].module).unlink()
    report = standards_report(wl.standards, layout, tmp_path / "sb")
    assert report["sources_modified"] == ["STYLE.md", f"{wl.standards.existing[0].module} (deleted)"]


def test_the_scorecard_carries_the_decisions_and_the_leaderboard_checks_them(wl, tmp_path):
    from sdcs_bench.pipeline.rows import matches as _matches, standards_columns as _standards_columns

    variant = config.entity("variant", "conflicts_10+polarity_normal+standard_correct")
    layout = wl.standards.layout(variant["standards"])
    scaffold(wl, vanilla(), tmp_path / "sb", variant)
    _run_policy(tmp_path / "sb", wl, "ref_follow_code")
    report = standards_report(wl.standards, layout, tmp_path / "sb")
    expected = expected_reference_score(wl, vanilla(), config.entity("agent", "ref_follow_code"), variant)
    card = {"net": 12, "standards": report}
    assert _matches(card, expected)
    columns = _standards_columns(report, expected["standards"])
    assert columns["std_better_share"] == 0.0 and columns["std_followed_standard_share"] == 0.0
    assert columns["std_contested_decisions"] == 120
    # one decision written otherwise is a mismatch
    module = tmp_path / "sb" / wl.standards.tasks[0].module
    module.write_text(module.read_text().replace("datetime.now()", "datetime.now(timezone.utc)"))
    assert not _matches({"net": 12, "standards": standards_report(wl.standards, layout, tmp_path / "sb")}, expected)


def test_scaffold_sandbox_takes_a_variant(tmp_path):
    from conftest import ROOT

    env = {"PYTHONPATH": str(ROOT / "src"), "SPECSNAP_ROOT": str(ROOT), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "scaffold-sandbox", "--workload", "standards",
                          "--arm", "Vanilla", "--variant", "polarity_inverted+standard_none", "--dest",
                          str(tmp_path / "sb")], capture_output=True, text=True, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "sb" / "STYLE.md").exists() and (tmp_path / "sb" / "tasks.py").is_file()
    meta = json.loads((tmp_path / "sb" / ".git" / "specsnap" / "sandbox.json").read_text())
    assert meta["standards_layout"] == {"conflicts": 10, "polarity": "inverted", "standard": "none"}
    bad = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "scaffold-sandbox", "--workload", "tier_2", "--arm",
                          "Vanilla", "--variant", "standard_stale", "--dest", str(tmp_path / "t2")],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    assert bad.returncode == 2 and "only workloads of family 'standards' have one" in bad.stderr
    assert not (tmp_path / "t2").exists()


# -- validation ---------------------------------------------------------------------------------------
def test_the_family_checks_pass_and_can_fail(wl, tmp_path):
    import dataclasses

    from sdcs_bench.pipeline.validate import Checks, check_standards

    checks = Checks()
    check_standards(checks, wl, counts=(4, 10))
    assert checks.failures == [] and checks.passed > 900
    # a mislabelled example, a gold that is not the better form, a rule STYLE.md no longer states
    surfaces = list(wl.standards.surfaces)
    surfaces[0] = dataclasses.replace(surfaces[0], examples=({"expect": "better", "source": "fee = a / 2\n"},
                                                             *surfaces[0].examples))
    surfaces[2] = dataclasses.replace(surfaces[2], rules={"better": "Use the aware clock.", "worse": "aware clock"})
    broken = dataclasses.replace(wl, standards=dataclasses.replace(wl.standards, surfaces=tuple(surfaces)))
    checks = Checks()
    check_standards(checks, broken, counts=(4,))
    assert any("surface money, example 1: the predicate finds worse" in f for f in checks.failures)
    assert any("STYLE.md states ['better', 'worse'] for clock, not ['better']" in f for f in checks.failures)

