"""Workload data: parsing, the tier_2 sprint, and validate-workload."""

from __future__ import annotations

import shutil

import pytest
from conftest import specsnap

from sdcs_bench.trial.workload import _parse_workload, split_requirements
from sdcs_bench.trial.workload_model import NEUTRAL_PROMPT
from sdcs_bench.trial.workload_registry import registered_workloads, workload_dir


def test_tier2_shape(tier2):
    assert tier2.id == "tier_2" and "tier_2a_fintech" in tier2.aliases
    assert [r.id for r in tier2.requirements] == [
        "R-LED-1", "R-LED-2", "R-LED-3", "R-BIL-1", "R-BIL-2", "R-BIL-3", "R-RBA-1", "R-RBA-2"
    ]
    assert {r.package for r in tier2.requirements} == {"ledger", "billing", "rbac"}
    assert [s.name for s in tier2.schedule] == ["S1", "S2"]
    assert str(tier2.schedule[0].cleave) == "first_py_edit"
    assert tier2.schedule[1].prompt == NEUTRAL_PROMPT
    for req in tier2.requirements:
        assert req.text.startswith(f"### {req.id} — ") and req.text in tier2.schedule[0].prompt
    assert "tests/test_baseline.py::test_tax_exactly_at_threshold" in tier2.baseline_tests


def test_wiring_forbids_rules_importing_audit(tier2):
    from sdcs_bench.scoring.boundaries import load_wiring

    contracts = load_wiring(tier2.baseline_dir / "wiring.yaml")["contracts"]
    assert any(c.get("source_modules") == ["rbac.rules"] and c.get("forbidden_modules") == ["rbac.audit"] for c in contracts)


def test_split_requirements_stops_at_the_next_heading():
    text = "Intro\n### R-A-1 — one\nalpha\n### R-A-2 — two\nbeta\n### Notes\nnot a requirement\n"
    assert split_requirements(text) == {"R-A-1": "### R-A-1 — one\nalpha", "R-A-2": "### R-A-2 — two\nbeta"}


# The real-repository corpus beyond click and isort (docs/real_repos.md#the-corpus): each validates
# in half a minute to four minutes on 2 cores (every fix alone against the whole suite): the slow run;
# the default run checks their data (tests/test_real_bugs.py).
CORPUS = {w for w in registered_workloads() if (workload_dir(w) / "bugs.yaml").is_file()} - {"click", "isort"}
SLOW_TO_VALIDATE = {"tier_3", "tier_4", "isort", *CORPUS}


# tier_3 and tier_4 (24 and 36 requirements, each with its summary and, in tier 4, superseded
# patches checked; the default run still scores both through the pipeline on their closed forms)
# and isort (each of its 11 fixes against its whole suite: 8 minutes on 2 cores) are `slow`; click,
# the other real repository, validates in the default run (its sdist comes from the download cache).
@pytest.mark.parametrize("workload", [pytest.param(w, marks=pytest.mark.slow) if w in SLOW_TO_VALIDATE else w
                                      for w in sorted(registered_workloads())])
def test_validate_workload_passes_for_every_registered_workload(workload):
    result = specsnap("validate-workload", workload)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all" in result.stdout and "checks passed" in result.stdout


@pytest.mark.slow  # (40 s: a whole validation twice; the default run validates every workload once)
def test_validate_workload_reports_a_broken_gold_precisely(tier2, tmp_path):
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.pipeline.validate import validate_workload

    broken = tmp_path / "tier_2"
    shutil.copytree(tier2.root, broken)
    patch = broken / "gold" / "R-BIL-3.patch"
    patch.write_text(_break_constant(patch.read_text()))
    checks = validate_workload(_parse_workload(broken), make_backend("auto"))
    assert checks.failures
    assert any("R-BIL-3" in f for f in checks.failures)


def _break_constant(patch: str) -> str:
    """Change the first added line that carries a digit, so the gold no longer meets its tests."""
    lines = patch.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("+") and not line.startswith("+++") and any(ch.isdigit() for ch in line):
            digit = next(ch for ch in line if ch.isdigit())
            lines[i] = line.replace(digit, str((int(digit) + 1) % 10), 1)
            return "".join(lines)
    raise AssertionError("no constant to break")


def test_unknown_workload_names_the_choices():
    result = specsnap("validate-workload", "tier_9")
    assert result.returncode == 2
    assert "unknown workload 'tier_9'" in result.stderr and "tier_2" in result.stderr


def test_tier1_starts_from_a_skeleton_and_arms_its_cleave_after_the_first_commit():
    from sdcs_bench.trial.workload import load_workload

    tier1 = load_workload("tier_1")
    assert tier1.baseline_gold is not None and (tier1.baseline_dir / "TASK.md").is_file()
    assert str(tier1.schedule[0].cleave) == "first_py_edit_after_commit"
    assert "TASK.md" in tier1.schedule[0].prompt and len(tier1.requirements) == 6
    assert all(r.from_summary is not None for r in tier1.requirements)  # no one-line summary suffices
