"""Scoring is a pure function of source files + hidden tests: hostile sandboxes cannot vote."""

from __future__ import annotations

import importlib.util
import json
import marshal
import subprocess
import sys

import pytest
from conftest import apply_patch, specsnap

from sdcs_bench.scoring import score_sandbox
from sdcs_bench.core.tokens import TokenUsage


def score(tier2, sandbox, backend, tokens=0):
    return score_sandbox(tier2, sandbox, tokens=TokenUsage.reported(tokens), backend=backend)


def with_gold(tier2, sandbox):
    for req in tier2.requirements:
        apply_patch(sandbox, req.gold)
    return sandbox


def test_baseline_scores_zero_and_keeps_the_baseline(tier2, make_sandbox, backend):
    card = score(tier2, make_sandbox(), backend)
    assert (card["raw"], card["net"], card["baseline_ok"], card["protected_ok"], card["violations"]) == (0, 0, True, True, 0)
    assert card["hidden_run"]["report_trusted"]


def test_full_gold_scores_eight_and_tes_follows_the_budget(tier2, make_sandbox, backend):
    sandbox = with_gold(tier2, make_sandbox())
    card = score(tier2, sandbox, backend)
    assert card["raw"] == card["net"] == 8 and card["tes"] == 8
    assert all(card["requirements"].values())
    over_budget = score(tier2, sandbox, backend, tokens=2 * tier2.budget_tokens)
    assert over_budget["tes"] == 4.0 and over_budget["tokens"]["source"] == "estimated"


def test_single_requirement_maps_to_its_own_tests(tier2, make_sandbox, backend):
    sandbox = make_sandbox()
    apply_patch(sandbox, tier2.requirement("R-BIL-3").gold)
    card = score(tier2, sandbox, backend)
    assert card["raw"] == 1 and card["requirements"]["R-BIL-3"]


FORCE_PASS = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""


def test_a_conftest_that_forces_passes_is_ignored(tier2, make_sandbox, backend):
    sandbox = make_sandbox()
    (sandbox / "conftest.py").write_text(FORCE_PASS)
    (sandbox / "billing" / "conftest.py").write_text(FORCE_PASS)
    card = score(tier2, sandbox, backend)
    assert card["raw"] == 0
    assert any("conftest.py" in e for e in card["excluded_from_scoring_copy"])


def test_an_edited_visible_test_zeroes_net(tier2, make_sandbox, backend):
    sandbox = with_gold(tier2, make_sandbox())
    test_file = sandbox / "tests" / "test_billing.py"
    test_file.write_text(test_file.read_text() + "\n# weakened\n")
    card = score(tier2, sandbox, backend)
    assert card["raw"] == 8 and not card["protected_ok"] and card["net"] == 0
    assert card["protected_changed"] == ["tests/test_billing.py (modified)"]


@pytest.mark.parametrize(
    "name,text",
    [
        ("pytest.ini", "[pytest]\naddopts = -k 'not tax' -p no:junitxml\n"),
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '--co'\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = -x --deselect specsnap_hidden\n"),
        ("tox.ini", "[pytest]\naddopts = --collect-only\n"),
    ],
)
def test_sandbox_pytest_configuration_is_ignored(tier2, make_sandbox, backend, name, text):
    sandbox = with_gold(tier2, make_sandbox())
    (sandbox / name).write_text(text)
    card = score(tier2, sandbox, backend)
    assert card["raw"] == 8 and card["baseline_ok"]


def _stale_pyc(source_path, code_text):
    """A cached module compiled from other code, stamped to look valid for ``source_path``."""
    code = compile(code_text, str(source_path), "exec")
    st = source_path.stat()
    data = bytearray(importlib.util.MAGIC_NUMBER)
    data += (0).to_bytes(4, "little") + int(st.st_mtime).to_bytes(4, "little") + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    data += marshal.dumps(code)
    cache = source_path.parent / "__pycache__" / f"{source_path.stem}.{sys.implementation.cache_tag}.pyc"
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(bytes(data))


def test_stale_pycache_is_never_loaded(tier2, make_sandbox, backend, tmp_path):
    sandbox = make_sandbox()
    gold_tree = with_gold(tier2, make_sandbox(name="gold"))
    target = sandbox / "ledger" / "balances.py"
    _stale_pyc(target, (gold_tree / "ledger" / "balances.py").read_text())
    # The trap is real: plain Python in the sandbox loads the gold code from the stale cache.
    probe = subprocess.run(
        [sys.executable, "-c", "import ledger.balances as b; print(hasattr(b, 'top_accounts'))"],
        cwd=sandbox, capture_output=True, text=True,
    )
    assert probe.stdout.strip() == "True"
    card = score(tier2, sandbox, backend)
    assert card["raw"] == 0 and not card["requirements"]["R-LED-1"]


def test_a_forbidden_static_import_is_a_violation(tier2, make_sandbox, backend):
    sandbox = with_gold(tier2, make_sandbox())
    rules = sandbox / "rbac" / "rules.py"
    rules.write_text(rules.read_text() + "\n\ndef _late():\n    from rbac import audit  # function-local\n    return audit\n")
    card = score(tier2, sandbox, backend)
    assert card["raw"] == 8 and card["violations"] >= 1 and card["net"] == 0
    assert any(d["importer"] == "rbac.rules" and d["imported"] == "rbac.audit" for d in card["boundaries"]["details"])


def test_a_dynamic_import_is_caught_while_the_hidden_tests_run(tier2, make_sandbox, backend):
    sandbox = with_gold(tier2, make_sandbox())
    rules = sandbox / "rbac" / "rules.py"
    rules.write_text(rules.read_text() + "\n\nimport importlib\n_AUDIT = importlib.import_module('rbac' + '.au' + 'dit')\n")
    card = score(tier2, sandbox, backend)
    assert card["net"] == 0
    found = [d for d in card["boundaries"]["details"] if d["importer"] == "rbac.rules" and d["imported"] == "rbac.audit"]
    assert found and found[0]["dynamic"]


def test_a_run_that_lies_with_its_exit_code_passes_nothing(tier2, make_sandbox, backend):
    sandbox = with_gold(tier2, make_sandbox())
    init = sandbox / "ledger" / "__init__.py"
    init.write_text("import os\nos._exit(0)\n" + init.read_text())
    card = score(tier2, sandbox, backend)
    assert card["raw"] == 0 and not card["baseline_ok"] and not card["hidden_run"]["report_trusted"]


def test_evaluate_sandbox_cli_writes_the_scorecard(make_sandbox, tmp_path):
    sandbox = make_sandbox("Vanilla")
    out = tmp_path / "card.json"
    result = specsnap("evaluate-sandbox", "--tier", "2", "--sandbox", str(sandbox), "--tokens", "1107107",
                      "--json-out", str(out))
    assert result.returncode == 0, result.stderr
    card = json.loads(out.read_text())
    assert card["tokens"]["total"] == 1107107 and card["net"] == 0 and card["arm"] == "Vanilla"


def test_evaluate_sandbox_refuses_a_directory_that_is_not_a_sandbox(tmp_path):
    out = tmp_path / "card.json"
    result = specsnap("evaluate-sandbox", "--tier", "2", "--sandbox", str(tmp_path), "--json-out", str(out))
    assert result.returncode == 2
    assert "not a SpecSnap sandbox" in result.stderr and "scaffold-sandbox" in result.stderr
    assert not out.exists()


def test_no_planted_name_is_left_out_with_a_deselected_test(tmp_path):
    """pytest's --deselect matches node ids by prefix: a test the run leaves out (a real repository's
    excluded test) must never take a renamed test or a twin with it, or that twin is "never
    reported" and an honest run reads as tampered."""
    import random

    from sdcs_bench.scoring.sentinels import SentinelSettings, plant

    words = ["chain", "args", "opts"]
    module = "\n\n".join(f"def test_{a}_{b}():\n    assert {i} == {i}\n"
                         for i, (a, b) in enumerate((a, b) for a in words for b in words if a != b))
    for seed in range(200):
        tree = tmp_path / str(seed)
        tree.mkdir()
        (tree / "test_m.py").write_text(module)
        planted, renamed = plant(tree, "h", SentinelSettings(1.0, 1.0, 0), random.Random(seed),
                                 untwinned=frozenset({"h/test_m.py::test_chain_args"}))
        left_out = renamed["h/test_m.py::test_chain_args"]
        others = [n for n in [*renamed.values(), *(s.nodeid for s in planted)] if n != left_out]
        assert not [n for n in others if n.startswith(left_out)], (seed, left_out)


def test_a_module_whose_import_fails_again_and_again_is_no_evidence(tier2, tmp_path):
    """An honest suite may import a module whose body raises (isort's `import isort.__main__` exits)
    more than once. Python drops the failed module, and the next attempt's new module object can
    sit at the same address: the import audit must not read the probe's own class swap on it as
    "probe removed" (it once did, and the honest run scored as tampered)."""
    import shutil

    from sdcs_bench.pipeline.validate import _tree
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.scoring.scorer import evaluate_tree
    from sdcs_bench.trial.workload import _parse_workload

    root = tmp_path / "tier_2"
    shutil.copytree(tier2.root, root)
    (root / "baseline" / "billing" / "_exits.py").write_text('raise SystemExit("a command-line entry point")\n')
    (root / "hidden" / "test_hidden_exits.py").write_text(
        f"# {tier2.canary}\nimport pytest\n\n\n@pytest.mark.parametrize('attempt', range(60))\n"
        "def test_entry_point_exits(attempt):\n    with pytest.raises(SystemExit):\n"
        "        import billing._exits  # noqa: F401\n")
    workload = _parse_workload(root)
    result = evaluate_tree(workload, _tree(workload, tmp_path, "baseline", []), make_backend("auto"))
    assert not result["tampered"], result["tamper_evidence"][:3]
    assert sum("test_entry_point_exits" in str(key) for key in result["run"]["reported"]) == 60  # all ran
