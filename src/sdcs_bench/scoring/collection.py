"""Which functions of a test module pytest collects, and under which node ids, read from the source
alone (the scorer renames hidden tests and plants sentinels before any code runs).

pytest's own rules, as its ``python`` and ``unittest`` plugins apply them:

- a module is collected when its file name matches ``python_files`` (globs; default
  ``test_*.py *_test.py``);
- a module-level function when its name matches ``python_functions`` (a prefix, or a glob where the
  pattern has ``*?[``; default ``test``);
- a class when it subclasses ``unittest.TestCase`` (whatever its name): every method whose name
  starts with ``test`` (unittest's own prefix), its bases' included; nested classes are not;
- otherwise a class whose name matches ``python_classes`` (default ``Test``) and that has no
  ``__init__`` or ``__new__``: every method matching ``python_functions``, its bases' included, and
  every nested class that is itself such a class (node id ``module::Outer::Inner::name``);
- a class that sets ``__test__ = False`` is not collected.

Bases are followed within the module (a base imported from elsewhere is not seen; a class that
subclasses one is collected by its name, as pytest would unless that base is a ``TestCase``).
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Func = ast.FunctionDef | ast.AsyncFunctionDef
UNITTEST_CLASSES = ("TestCase", "IsolatedAsyncioTestCase")


def _matches(name: str, patterns: Iterable[str]) -> bool:
    """pytest's ``_matches_prefix_or_glob_option``."""
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            if fnmatch.fnmatch(name, pattern):
                return True
        elif name.startswith(pattern):
            return True
    return False


@dataclass(frozen=True)
class Rules:
    files: tuple[str, ...] = ("test_*.py", "*_test.py")
    classes: tuple[str, ...] = ("Test",)
    functions: tuple[str, ...] = ("test",)

    @classmethod
    def from_ini(cls, path: Path | None) -> Rules:
        """The rules a ``pytest.ini`` sets (its ``[pytest]`` section), pytest's defaults elsewhere."""
        if path is None or not Path(path).is_file():
            return cls()
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(Path(path).read_text(errors="replace"))
        except configparser.Error:
            return cls()
        section = parser["pytest"] if parser.has_section("pytest") else {}
        default = cls()

        def words(key: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
            value = section.get(key) if section else None
            return tuple(value.split()) if value and value.split() else fallback

        return cls(words("python_files", default.files), words("python_classes", default.classes),
                   words("python_functions", default.functions))

    def module(self, filename: str) -> bool:
        return any(fnmatch.fnmatch(filename, p) for p in self.files)

    def function(self, name: str) -> bool:
        return _matches(name, self.functions)

    def test_class(self, name: str) -> bool:
        return _matches(name, self.classes)


@dataclass
class Collected:
    """One collected test: the classes of its node id, and the function that runs (which may be
    defined in a base class: ``owner`` is the class whose body holds it, None at module level)."""

    classes: list[str]
    func: Func
    owner: ast.ClassDef | None
    unittest: bool = False

    @property
    def name(self) -> str:
        return self.func.name


def _unittest_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names under which the module sees ``unittest`` and its TestCase classes."""
    modules, classes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "unittest":
                    modules.add(alias.asname or "unittest")
        elif isinstance(node, ast.ImportFrom) and node.module in ("unittest", "unittest.case"):
            for alias in node.names:
                if alias.name in UNITTEST_CLASSES:
                    classes.add(alias.asname or alias.name)
    return modules, classes


class _Module:
    def __init__(self, tree: ast.Module, rules: Rules) -> None:
        self.rules = rules
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.ut_modules, self.ut_classes = _unittest_names(tree)

    def bases(self, cls: ast.ClassDef, scope: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
        return [scope[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in scope and scope[b.id] is not cls]

    def is_unittest(self, cls: ast.ClassDef, scope: dict[str, ast.ClassDef], seen: frozenset = frozenset()) -> bool:
        if cls.name in seen:
            return False
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.ut_classes:
                return True
            if (isinstance(base, ast.Attribute) and base.attr in UNITTEST_CLASSES
                    and isinstance(base.value, (ast.Name, ast.Attribute))
                    and (ast.unparse(base.value) in self.ut_modules or ast.unparse(base.value) == "unittest.case")):
                return True
        return any(self.is_unittest(b, scope, seen | {cls.name}) for b in self.bases(cls, scope))

    def methods(self, cls: ast.ClassDef, scope: dict[str, ast.ClassDef]) -> list[tuple[str, Func, ast.ClassDef]]:
        """(name, def, the class that defines it) for every method the class has, bases followed
        within the module, the nearest definition winning (as attribute lookup does)."""
        found: dict[str, tuple[Func, ast.ClassDef]] = {}
        order: list[str] = []

        def visit(c: ast.ClassDef, seen: set[str]) -> None:
            if c.name in seen:
                return
            seen.add(c.name)
            for node in c.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in found:
                    found[node.name] = (node, c)
                    order.append(node.name)
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                        if isinstance(target, ast.Name) and target.id not in found:
                            found[target.id] = (None, c)  # shadowed by a plain attribute: no test
                            order.append(target.id)
            for base in self.bases(c, scope):
                visit(base, seen)

        visit(cls, set())
        return [(n, found[n][0], found[n][1]) for n in order if found[n][0] is not None]

    def disabled(self, cls: ast.ClassDef) -> bool:
        for node in cls.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__test__" for t in node.targets):
                return isinstance(node.value, ast.Constant) and not node.value.value
        return False

    def has_constructor(self, cls: ast.ClassDef, scope: dict[str, ast.ClassDef]) -> bool:
        return any(name in ("__init__", "__new__") for name, _, _ in self.methods(cls, scope))

    def collect_class(self, cls: ast.ClassDef, path: list[str], scope: dict[str, ast.ClassDef]) -> list[Collected]:
        if self.disabled(cls):
            return []
        if self.is_unittest(cls, scope):
            return [Collected([*path, cls.name], func, owner, unittest=True)
                    for name, func, owner in sorted(self.methods(cls, scope), key=lambda m: m[0])
                    if name.startswith("test")]
        if not self.rules.test_class(cls.name) or self.has_constructor(cls, scope):
            return []
        found = [Collected([*path, cls.name], func, owner) for name, func, owner in self.methods(cls, scope)
                 if self.rules.function(name)]
        inner = {n.name: n for n in cls.body if isinstance(n, ast.ClassDef)}
        for node in cls.body:
            if isinstance(node, ast.ClassDef):
                found += self.collect_class(node, [*path, cls.name], {**scope, **inner})
        return found


def collect(tree: ast.Module, rules: Rules | None = None) -> list[Collected]:
    """Every test pytest collects from this module, in the module's order."""
    rules = rules or Rules()
    module = _Module(tree, rules)
    found: list[Collected] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and rules.function(node.name):
            found.append(Collected([], node, None))
        elif isinstance(node, ast.ClassDef):
            found += module.collect_class(node, [], module.classes)
    return found
