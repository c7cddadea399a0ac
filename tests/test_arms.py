"""Arms are config: texts, sources, generators, per-workload caps."""

from __future__ import annotations

import hashlib
import re

import pytest
from conftest import arm

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial.generators import app_map
from sdcs_bench.trial.arms import Arm


def test_app_map_reads_the_baseline_syntax_tree(tier2):
    text = app_map(tier2.baseline_dir, list(tier2.packages))
    for package in tier2.packages:
        assert f"## package `{package}`" in text
    assert "- `billing/tax.py` (`billing.tax`)" in text
    assert "compute_tax(" in text
    assert re.search(r"`rbac/audit.py`.*\n(  - public: .*\n)?  - imports: .*rbac\.rules", text)
    assert "sha256" not in text


def test_gate_i_manifest_hashes_every_module(tier2):
    text = app_map(tier2.baseline_dir, list(tier2.packages), hashes=True)
    recorded = dict(re.findall(r"^- `([^`]+)` \(`[^`]*`\) sha256 `([0-9a-f]{64})`", text, re.MULTILINE))
    modules = sorted(p.relative_to(tier2.baseline_dir).as_posix() for pkg in tier2.packages
                     for p in (tier2.baseline_dir / pkg).rglob("*.py"))
    assert sorted(recorded) == modules
    for path, digest in recorded.items():
        assert hashlib.sha256((tier2.baseline_dir / path).read_bytes()).hexdigest() == digest


def test_function_local_imports_are_listed(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    from . import b\n    return b\n")
    (tmp_path / "pkg" / "b.py").write_text("X = 1\n")
    assert "  - imports: pkg" in app_map(tmp_path, ["pkg"])


@pytest.mark.parametrize("workload,cap", [("tier_2", 500), ("tier_3", 1200), ("tier_4", 1200)])
def test_tuned_reference_cap_depends_on_the_tier(workload, cap, tmp_path, tier2):
    tuned = arm("Tuned_Reference")
    assert tuned.notes_cap(workload) == cap
    files = tuned.render(tier2.baseline_dir, workload, list(tier2.packages))
    assert f"within {cap} tokens" in files["AGENTS.md"] and f"at most {cap} tokens" in files["state.md"]
    assert "sha256" not in files["app_map.md"]


def test_gate_i_is_tuned_reference_plus_the_drift_rule(tier2):
    gate = arm("Gate_I").render(tier2.baseline_dir, "tier_2", list(tier2.packages))
    tuned = arm("Tuned_Reference").render(tier2.baseline_dir, "tier_2", list(tier2.packages))
    assert gate["AGENTS.md"].startswith(tuned["AGENTS.md"]) and "DRIFT" in gate["AGENTS.md"]
    assert "sha256" in gate["app_map.md"] and gate["state.md"] == tuned["state.md"]


@pytest.mark.parametrize("name", ["State_MD_Original_Rule", "State_MD_Original_Rule_Detail",
                                  "State_MD_InPlace_Rule", "State_MD_InPlace_Rule_Detail"])
def test_wording_arms_differ_only_in_their_rule(name, tier2):
    text = arm(name).render(tier2.baseline_dir, "tier_2", [])["AGENTS.md"]
    assert ("ONLY" in text) == ("Original" in name)
    assert ("in place" in text) == ("InPlace" in name)
    assert ("ordering rules" in text) == name.endswith("_Detail")


def test_a_bad_arm_fails_before_any_work():
    with pytest.raises(SpecSnapError, match="unknown generator 'ast_map'; valid choices: app_map"):
        Arm.from_config({"name": "X", "files": [{"path": "m.md", "generator": "ast_map"}]})
    with pytest.raises(SpecSnapError, match="does not exist"):
        Arm.from_config({"name": "X", "files": [{"path": "m.md", "source": "conf/arm/texts/nope.md"}]})
