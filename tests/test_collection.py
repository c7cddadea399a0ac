"""The scorer's test discovery follows pytest's own collection rules (``scoring/collection.py``):
checked against pytest itself, which collects the same modules in a subprocess."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sdcs_bench.scoring.collection import Rules, collect
from sdcs_bench.scoring.sentinels import SentinelSettings, plant

MODULES = {
    "test_unit.py": '''
        import unittest
        from unittest import TestCase as Case
        import pytest

        class Cases(unittest.TestCase):          # a TestCase, whatever its name
            def test_none(self):
                self.assertIsNone(None)
            def helper(self):
                pass

        class More(Case):
            def test_none(self):                  # the same method name in another class
                self.assertEqual(1, 1)
            def testJoined(self):
                self.assertTrue(True)

        class Derived(Cases):                     # inherits test_none from Cases
            def test_extra(self):
                assert 2 == 2

        class TestPlain:
            def test_none(self):
                assert None is None
            class TestNested:
                def test_inner(self):
                    assert 3 == 3
            class NotATest:
                def test_ignored(self):
                    assert False

        class TestWithInit:
            def __init__(self):
                pass
            def test_never(self):
                assert False

        class TestOff:
            __test__ = False
            def test_never(self):
                assert False

        class Base:
            def test_from_base(self):
                assert 4 == 4

        class TestChild(Base):
            pass

        @pytest.mark.parametrize("x", [1, 2])
        def test_param(x):
            assert x in (1, 2)

        def helper_test():
            pass
    ''',
    "other_test.py": '''
        def test_in_a_suffix_module():
            assert 5 == 5
    ''',
    "not_collected.py": '''
        def test_here_too():
            assert False
    ''',
}

CUSTOM_INI = "[pytest]\npython_files = check_*.py\npython_classes = Check\npython_functions = check_ should_*\n"
CUSTOM = {
    "check_custom.py": '''
        import unittest

        class CheckThings:
            def check_one(self):
                assert 1 == 1
            def test_not_by_these_rules(self):
                assert False
            def it_should_work(self):
                assert False
            def should_work(self):
                assert True

        class Units(unittest.TestCase):
            def test_still_unittest(self):
                self.assertTrue(True)
            def check_not_unittest(self):
                self.fail()

        def check_top():
            assert 2 == 2
    ''',
}


def _write(root: Path, modules: dict[str, str], ini: str = "[pytest]\n") -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text(ini)
    for name, text in modules.items():
        (root / name).write_text(textwrap.dedent(text))


def _pytest_ids(root: Path) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"], cwd=root,
                         capture_output=True, text=True).stdout
    return {line.partition("[")[0] for line in out.splitlines() if "::" in line}


def _ours(root: Path) -> set[str]:
    rules = Rules.from_ini(root / "pytest.ini")
    found = set()
    for path in sorted(root.glob("*.py")):
        if rules.module(path.name):
            for t in collect(ast.parse(path.read_text()), rules):
                found.add("::".join([path.name, *t.classes, t.name]))
    return found


@pytest.mark.parametrize("modules,ini", [(MODULES, "[pytest]\n"), (CUSTOM, CUSTOM_INI)], ids=["defaults", "custom"])
def test_discovery_collects_exactly_what_pytest_collects(tmp_path, modules, ini):
    _write(tmp_path / "suite", modules, ini)
    theirs = _pytest_ids(tmp_path / "suite")
    assert theirs, "pytest collected nothing: the oracle would prove nothing"
    assert _ours(tmp_path / "suite") == theirs


def test_renamed_tests_are_still_collected_and_map_one_to_one(tmp_path):
    """After planting, pytest collects every renamed original (under its new id, the same class
    path) and every twin; duplicate method names in different classes get different new names."""
    suite = tmp_path / "suite"
    _write(suite, MODULES)
    before = _pytest_ids(suite)
    planted, renamed = plant(suite, "suite", SentinelSettings(1.0, 0.5, 1), random.Random(7),
                             rules=Rules.from_ini(suite / "pytest.ini"))
    after = {f"suite/{i}" for i in _pytest_ids(suite)}
    originals = {f"suite/{i}" for i in before}
    assert set(renamed) == originals
    assert set(renamed.values()) <= after  # every original runs, under its new name
    assert {s.nodeid for s in planted} <= after and planted
    assert {old.rsplit("::", 1)[0] for old in renamed} == {new.rsplit("::", 1)[0] for new in renamed.values()}
    assert len(set(renamed.values())) == len(renamed)
    # an inherited method is renamed once, where it is defined, and mapped under each class
    cases = renamed["suite/test_unit.py::Cases::test_none"].rsplit("::", 1)[1]
    assert renamed["suite/test_unit.py::Derived::test_none"].endswith("::Derived::" + cases)
    assert renamed["suite/test_unit.py::More::test_none"].rsplit("::", 1)[1] != cases


def test_the_planters_source_segments_are_the_parsers():
    """The sentinel planter reads each decorator's and assertion's text by its own line table
    (scoring/sentinels.py: ``ast.get_source_segment`` splits the whole module at every call): the
    same text, whatever the line ends and the characters, for every node of every hidden test."""
    import ast

    from sdcs_bench.core.paths import project_root
    from sdcs_bench.scoring.sentinels import _segment

    sources = [p.read_text() for p in sorted((project_root() / "tiers").glob("*/hidden/**/*.py"))]
    # line ends of every kind the parser knows, and characters str.splitlines() would split on
    # but the parser does not (a form feed, NEL, the line and paragraph separators) inside strings
    sources.append("x = 1\r\ny = 'a\x0cb'\rz = (1,\n 2)\n# é\nw = 'é\x85' + \"ü\u2028\" \\\n    + 'x\u2029y'\n"
                   "\x0cv = [w,\r\n     y]\n")
    checked = 0
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if hasattr(node, "end_lineno"):
                assert _segment(source, node) == (ast.get_source_segment(source, node) or ""), ast.dump(node)[:80]
                checked += 1
    assert checked > 1000
