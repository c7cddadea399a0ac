"""The code under test attacks the scorer from inside the scoring process (docs/scoring.md, "Threat
model"). Each attack is appended to a sandbox whose honest score is known: the baseline (raw 0,
net 0: plausible code that implements no requirement) or the full gold (net 8) with a forbidden
import. The attacked score is never higher than the honest one, and a forged run says so."""

from __future__ import annotations

import textwrap

import pytest
from conftest import apply_patch

from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.scoring import score_sandbox


def score(tier2, sandbox, backend):
    return score_sandbox(tier2, sandbox, tokens=TokenUsage.reported(0), backend=backend)


def append(sandbox, rel, code):
    path = sandbox / rel
    path.write_text(path.read_text() + "\n" + textwrap.dedent(code))


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.slow)])
def isolating(request):
    """Each isolating backend the scorer runs under (docker's run of this suite takes 1.5 minutes:
    `pytest -m slow`)."""
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.bwrap import BwrapBackend

    if request.param == "docker":
        return make_backend("docker", {"image_record": str(request.getfixturevalue("docker_image"))})
    if not BwrapBackend.available():
        pytest.skip("bubblewrap is not available")
    return make_backend("bwrap")


# Registers the attack's plugin `_Flip` with pytest, found by walking up the call stack (no gc).
REGISTER_BY_THE_STACK = """
import sys as _sys
_f = _sys._getframe()
while _f is not None:
    _cfg = _f.f_locals.get("config") or getattr(_f.f_locals.get("session"), "config", None)
    if _cfg is not None and hasattr(_cfg, "pluginmanager"):
        _cfg.pluginmanager.register(_Flip(), "flip")
        break
    _f = _f.f_back
"""

# -- the runner's own objects, changed at import time -------------------------------------------
RUNNER_ATTACKS = {
    "report objects say passed": """
        import _pytest.reports as _r
        _init = _r.TestReport.__init__
        def _forged(self, *a, **k):
            _init(self, *a, **k)
            self.outcome, self.longrepr = "passed", None
        _r.TestReport.__init__ = _forged
    """,
    "a test function's call does nothing": """
        import _pytest.python as _p
        _p.Function.runtest = lambda self: None
    """,
    "the report maker is replaced": """
        import _pytest.runner as _run
        _make = _run.call_and_report
        def _quiet(item, when, log=True, **kw):
            report = _make(item, when, log=False, **kw)
            report.outcome, report.longrepr = "passed", None
            if log:
                item.ihook.pytest_runtest_logreport(report=report)
            return report
        _run.call_and_report = _quiet
    """,
    "a plugin found through the object graph flips outcomes": """
        import gc as _gc
        class _Flip:
            def pytest_runtest_logreport(self, report):
                report.outcome, report.longrepr = "passed", None
        for _o in _gc.get_objects():
            if type(_o).__name__ == "PytestPluginManager":
                _o.register(_Flip(), "flip")
                break
    """,
    "a hook wrapper found through the call stack flips outcomes (only the sentinels see it)": """
        import sys as _sys
        import pluggy as _pluggy
        class _Flip:
            @_pluggy.HookimplMarker("pytest")(hookwrapper=True)
            def pytest_runtest_makereport(self, item, call):
                outcome = yield
                report = outcome.get_result()
                report.outcome, report.longrepr = "passed", None
    """,
}


@pytest.mark.parametrize("attack", list(RUNNER_ATTACKS))
def test_changing_the_runner_from_inside_scores_zero_and_says_why(attack, tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    code = textwrap.dedent(RUNNER_ATTACKS[attack])
    append(sandbox, "billing/__init__.py", code + (REGISTER_BY_THE_STACK if "class _Flip" in code and "gc" not in code else ""))
    card = score(tier2, sandbox, isolating)
    assert card["tampered"], card["hidden_run"]["tail"]
    assert (card["raw"], card["net"], card["tes"]) == (0, 0, 0) and not any(card["requirements"].values())
    assert card["tamper_evidence"]
    if "only the sentinels" in attack:
        assert any(e.startswith("sentinel ") for e in card["tamper_evidence"]), card["tamper_evidence"]
    if "replaced" in attack or "objects" in attack or "does nothing" in attack:
        assert any(e.startswith("runner changed") for e in card["tamper_evidence"]), card["tamper_evidence"]
    assert card["diagnostics"]["suspicious_source"], "the static scan lists the attack"


FLIP_BY_NAME = """
import sys as _sys, pluggy as _pluggy
_KNOWN = set(KNOWN)   # the hidden tests' names, public in the repository
class _Flip:
    @_pluggy.HookimplMarker("pytest")(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if item.originalname in _KNOWN and report.failed:
            report.outcome, report.longrepr = "passed", None
"""

FLIP_THE_UNTWINNED = """
import ast as _ast, inspect as _inspect, sys as _sys, textwrap as _tw, pluggy as _pluggy
def _shape(fn):
    tree = _ast.parse(_tw.dedent(_inspect.getsource(fn)))
    for node in _ast.walk(tree):
        if isinstance(node, _ast.Constant):
            node.value = 0
        if isinstance(node, _ast.FunctionDef):
            node.name = "_"
        if isinstance(node, _ast.UnaryOp) and isinstance(node.op, _ast.Not):
            node.op = _ast.Invert()
    return _ast.dump(tree)
class _Flip:
    @_pluggy.HookimplMarker("pytest")(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        shapes = [_shape(i.function) for i in item.session.items if i.module is item.module]
        if report.failed and shapes.count(_shape(item.function)) == 1:  # a test with no look-alike
            report.outcome, report.longrepr = "passed", None
"""


def test_knowing_the_hidden_tests_names_forges_nothing(tier2, make_sandbox, isolating):
    names = sorted({t.rpartition("::")[2] for r in tier2.requirements for t in r.tests})
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", f"KNOWN = {names!r}\n" + FLIP_BY_NAME + REGISTER_BY_THE_STACK)
    card = score(tier2, sandbox, isolating)
    assert (card["raw"], card["net"]) == (0, 0)  # the run's names are not the repository's


def test_flipping_the_tests_that_have_no_look_alike_gains_no_requirement(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", FLIP_THE_UNTWINNED + REGISTER_BY_THE_STACK)
    card = score(tier2, sandbox, isolating)
    assert (card["raw"], card["net"]) == (0, 0), card["requirements"]


def test_a_tracer_that_jumps_over_assertions_is_evidence(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", """
        import sys as _sys
        def _skip_asserts(frame, event, arg):
            if "specsnap_hidden" in frame.f_code.co_filename:
                def local(frame, event, arg):
                    if event == "line":
                        import linecache
                        if linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip().startswith("assert"):
                            try:
                                frame.f_lineno = frame.f_lineno + 1
                            except ValueError:
                                pass
                    return local
                return local
        _sys.settrace(_skip_asserts)
    """)
    card = score(tier2, sandbox, isolating)
    assert card["tampered"] and card["net"] == 0
    assert any("sys.settrace" in e for e in card["tamper_evidence"]), card["tamper_evidence"]


def test_an_object_that_equals_everything_is_caught_by_the_failing_twins(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", """
        class _Everything:
            def __eq__(self, other):
                return True
            __hash__ = object.__hash__
        import billing.fees as _fees
        for _name in dir(_fees):
            if not _name.startswith("_") and callable(getattr(_fees, _name)):
                setattr(_fees, _name, lambda *a, **k: _Everything())
    """)
    card = score(tier2, sandbox, isolating)
    assert card["tampered"] and card["net"] == 0
    assert any("passed together with" in e for e in card["tamper_evidence"]), card["tamper_evidence"]


# -- the report and the exit status, rewritten at interpreter exit ------------------------------
def test_a_rewritten_report_and_a_forced_exit_status_score_zero(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", """
        import atexit as _atexit, os as _os, re as _re, sys as _sys
        def _lie():
            junit = next(a.split("=", 1)[1] for a in _sys.argv if a.startswith("--junitxml="))
            with open(junit) as fh:
                text = fh.read()
            text = _re.sub(r"<(failure|error)\\b.*?</\\1>", "", text, flags=_re.S)
            text = _re.sub(r'(failures|errors)="\\d+"', r'\\1="0"', text)
            with open(junit, "w") as fh:
                fh.write(text)
            _os._exit(0)
        _atexit.register(_lie)
    """)
    card = score(tier2, sandbox, isolating)
    assert card["tampered"] and (card["raw"], card["net"]) == (0, 0)
    evidence = " | ".join(card["tamper_evidence"])
    assert "exit status forced" in evidence and "report rewritten" in evidence, evidence
    assert card["hidden_run"]["exit_code"] == 0  # the lie happened, and was not believed


# -- the hidden tests, rewritten on disk while they are collected -------------------------------
REWRITE = """
    import pathlib as _pl, re as _re
    for _p in _pl.Path(__file__).resolve().parents[1].glob("specsnap_hidden/**/test_r_*.py"):
        try:
            _p.write_text(_re.sub(r"(?m)^(\\s*)(assert .*|with pytest.raises.*)$", r"\\1pass", _p.read_text()))
        except OSError:
            pass
"""


def test_rewriting_the_hidden_tests_is_refused_and_reported(tier2, make_sandbox, backend):
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", REWRITE)
    card = score(tier2, sandbox, backend)
    assert card["tampered"] and (card["raw"], card["net"]) == (0, 0)
    evidence = " | ".join(card["tamper_evidence"])
    assert "write: " in evidence and "specsnap_hidden" in evidence, evidence
    if backend.enforces_read_only:
        assert "test tree changed" not in evidence  # the mount refused the write
    else:
        assert "test tree changed during the run" in evidence


# -- forbidden imports through machinery that is not an import statement ------------------------
REACH = {
    "importlib.__import__": "import importlib\nfees = importlib.__import__(NAME, fromlist=['_'])",
    "importlib's bootstrap": "import importlib._bootstrap\nfees = importlib._bootstrap._gcd_import(NAME)",
    "a loader run on a spec": (
        "import importlib.util, os\n"
        "path = os.path.join(os.path.dirname(__file__), '..', *NAME.split('.')) + '.py'\n"
        "spec = importlib.util.spec_from_file_location('_f', path)\n"
        "fees = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(fees)"
    ),
    "a file executed by path": (
        "import os, types\n"
        "path = os.path.join(os.path.dirname(__file__), '..', *NAME.split('.')) + '.py'\n"
        "fees = types.SimpleNamespace()\n"
        "with open(path) as fh:\n    exec(compile(fh.read(), '<x>', 'exec'), fees.__dict__)"
    ),
    "sys.modules": "import sys\nfees = sys.modules[NAME]",
}


@pytest.mark.parametrize("how", list(REACH))
def test_a_forbidden_module_reached_by_any_machinery_is_a_violation(how, tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    for req in tier2.requirements:
        apply_patch(sandbox, req.gold)
    assert score(tier2, sandbox, isolating)["net"] == 8  # the honest score of this sandbox
    reach = textwrap.indent(REACH[how], "    ")
    append(sandbox, "ledger/balances.py", (
        'NAME = "bil" + "ling.fees"   # computed: no static analysis names it\n\n'
        f"def _reach():\n{reach}\n    return fees\n\n"
        "_honest = account_balances\n\n"
        "def account_balances(entries):\n    _reach().card_processing_fee(100)\n    return _honest(entries)\n"
    ))
    card = score(tier2, sandbox, isolating)
    assert card["net"] == 0 and card["violations"] >= 1, card["boundaries"]
    found = [d for d in card["boundaries"]["details"] if d["importer"] == "ledger.balances"
             and d["imported"].startswith("billing")]
    assert found and found[0]["dynamic"], card["boundaries"]


GUT_THE_PROBE = """
import sys as _sys
_probe = next((m for m in list(_sys.modules.values()) if (getattr(m, "__file__", "") or "").endswith("conftest.py")), None)
for _name, _value in list(vars(_probe).items()) if _probe else []:
    if _name.startswith("__") or _name.startswith("pytest_"):
        continue
    if isinstance(_value, list) and _value and isinstance(_value[0], bool):
        _value[0] = True                      # a switch
    elif isinstance(_value, set):
        _value.add(("ledger.balances", "billing.fees"))   # already sent, so never sent
    elif isinstance(_value, dict):
        _value.clear()                        # forget what is whose
    elif callable(_value) and not isinstance(_value, type):
        setattr(_probe, _name, lambda *a, **k: None)       # silence it
    elif isinstance(_value, (str, tuple, int)) and _name.isupper() is False:
        setattr(_probe, _name, type(_value)())
"""


def test_gutting_the_probe_through_its_module_hides_no_forbidden_import(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    for req in tier2.requirements:
        apply_patch(sandbox, req.gold)
    append(sandbox, "ledger/balances.py", GUT_THE_PROBE + (
        "\n_honest = account_balances\n\n"
        "def account_balances(entries):\n"
        "    _sys.modules['bil' + 'ling.fees'].card_processing_fee(100)\n"
        "    return _honest(entries)\n"
    ))
    card = score(tier2, sandbox, isolating)
    assert card["net"] == 0 and card["violations"] >= 1, card["boundaries"]
    assert any(d["importer"] == "ledger.balances" and d["imported"].startswith("billing") and d["dynamic"]
               for d in card["boundaries"]["details"]), card["boundaries"]


def test_reaching_into_the_probes_own_state_is_evidence(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", """
        import sys as _sys
        for _m in list(_sys.modules.values()):
            if (getattr(_m, "__file__", "") or "").endswith("conftest.py"):
                for _f in list(vars(_m).values()):
                    if callable(_f) and getattr(_f, "__defaults__", None):
                        for _d in _f.__defaults__:
                            if isinstance(_d, set):
                                _d.clear()
    """)
    card = score(tier2, sandbox, isolating)
    assert card["tampered"] and card["net"] == 0
    assert any(e.startswith("probe read") for e in card["tamper_evidence"]), card["tamper_evidence"]


# -- the honest cases ---------------------------------------------------------------------------
def test_honest_runs_are_not_tampered_and_carry_sentinels(tier2, make_sandbox, backend):
    sandbox = make_sandbox()
    base = score(tier2, sandbox, backend)
    for req in tier2.requirements:
        apply_patch(sandbox, req.gold)
    gold = score(tier2, sandbox, backend)
    for card in (base, gold):
        assert not card["tampered"] and card["tamper_evidence"] == []
        assert card["sentinels"]["failing_twins"] >= 2 and card["sentinels"]["same_twins"] >= 2
        assert card["diagnostics"]["suspicious_source"] == []
    assert (base["net"], gold["net"]) == (0, 8)


def test_lines_forged_into_the_verdict_pipe_are_evidence_not_a_crash(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    append(sandbox, "billing/__init__.py", """
        import json as _json, os as _os
        _fd = _json.loads(_os.environ["SPECSNAP_PROBE"])["fd"]
        _os.write(_fd, b'{"event": "report"}\\n{"event": "report", "nodeid": [], "when": 1, "outcome": "passed"}\\n')
    """)
    card = score(tier2, sandbox, isolating)
    assert card["tampered"] and card["net"] == 0
    assert sum("is not the probe's" in e for e in card["tamper_evidence"]) == 2, card["tamper_evidence"]


def test_honest_code_that_skips_or_sets_its_own_module_class_is_not_tampered(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    for req in tier2.requirements:
        apply_patch(sandbox, req.gold)
    append(sandbox, "rbac/roles.py", """
        import sys as _sys, types as _types
        class _Lazy(_types.ModuleType):
            pass
        _sys.modules[__name__].__class__ = _Lazy   # the documented recipe for module properties
    """)
    append(sandbox, "billing/fees.py", """
        import unittest as _unittest
        def card_processing_fee(amount_cents):
            raise _unittest.SkipTest("not on this platform")
    """)
    card = score(tier2, sandbox, isolating)
    assert not card["tampered"], card["tamper_evidence"]
    assert not card["baseline_ok"] and card["net"] == 0  # a skipped baseline test is not a pass


def test_suspicious_source_is_listed_without_zeroing(tier2, make_sandbox, isolating):
    sandbox = make_sandbox()
    for req in tier2.requirements:
        apply_patch(sandbox, req.gold)
    append(sandbox, "billing/fees.py", """
        def _never_called():
            import atexit, sys
            atexit.register(lambda: None)
            return sys._getframe().f_back, open("specsnap_hidden/x.py", "w")
    """)
    card = score(tier2, sandbox, isolating)
    assert card["net"] == 8 and not card["tampered"]
    whats = " | ".join(f["what"] for f in card["diagnostics"]["suspicious_source"])
    for needle in ("exit-time hooks", "reads the call stack", "names the hidden tests", "writes a file"):
        assert needle in whats, whats
