"""Sentinel tests: twins of real hidden tests planted for one scoring run, whose verdicts are known
relative to their originals, so that a run in which the code under test forged verdicts shows it.

For each scoring run, a random share of the hidden tests (drawn from an unpredictable seed) gets

- a **failing twin**: the same test, under a new plausible name, with one expectation changed
  (a literal ``assert X == 7`` becomes ``assert X == 9``; where there is none, a top-level
  ``assert E`` becomes ``assert not (E)``). The original and its failing twin cannot both pass.
  Both passing is tampering, whether the runner lied or the code returned an object that equals
  everything or read its expected value from the test.
- a **same twin**: the same test under a new name. Its verdict must equal the original's, so a
  forger that knows the real tests' names (and flips only those) shows itself.

Every real test is renamed too, so a forger that knows the hidden tests' names learns nothing from
them. Twins are written from the original's own text (same formatting, same decorators, same
fixtures), next to it (a failing twin before or after at random; a same twin after), so neither
their names, their text nor their places tell them from real tests. What the scorer knows about
them never enters the scoring process.
"""

from __future__ import annotations

import ast
import io
import random
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sdcs_bench.scoring.collection import Collected, Rules, collect
from sdcs_bench.core.timing import timed

_SIMPLE_STRING = re.compile(r"""^([rRuU]?)(['"])([^'"\\\n]*)\2$""")
_WORDS = re.compile(r"[a-z][a-z0-9]*")


@dataclass(frozen=True)
class SentinelSettings:
    failing_share: float   # share of the tests that can carry a changed expectation given a failing twin
    same_share: float      # share of all tests given a same twin
    minimum: int           # at least this many of each kind where the suite allows

    @classmethod
    def from_config(cls, data: dict[str, Any]) -> SentinelSettings:
        return cls(float(data["failing_share"]), float(data["same_share"]), int(data["minimum"]))

    @classmethod
    def default(cls) -> SentinelSettings:
        """The project's settings (``conf/config.yaml`` ``scoring.sentinels``), for scoring outside
        the pipeline; a pipeline stage takes them from its trial file."""
        from sdcs_bench.core.paths import conf_dir
        from sdcs_bench.trial.config import read_yaml

        return cls.from_config(read_yaml(conf_dir() / "config.yaml")["scoring"]["sentinels"])


@dataclass(frozen=True)
class Sentinel:
    nodeid: str     # as pytest names it, relative to the scoring copy's root
    kind: str       # "failing_twin" | "same_twin"
    of: str         # the original test's node id in this run (renamed)
    change: str     # what differs from the original ("" for a same twin)
    original: str   # the original test's own node id

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@lru_cache(maxsize=8)
def _lines(source: str) -> tuple[bytes, ...]:
    """``source``'s lines (their ends kept; split where the parser splits them), as UTF-8."""
    return tuple(line.encode() for line in io.StringIO(source, newline=""))


def _segment(source: str, node: ast.AST) -> str:
    """``ast.get_source_segment(source, node)``, without splitting the whole source at every call
    (a test module is asked for a segment per decorator and assertion)."""
    end, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if end is None or end_col is None:
        return ""
    lines, first, col = _lines(source), node.lineno - 1, node.col_offset
    if first == end - 1:
        return lines[first][col:end_col].decode()
    return b"".join([lines[first][col:], *lines[first + 1:end - 1], lines[end - 1][:end_col]]).decode()


def _literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, str, bytes)


def _twinnable(func: ast.FunctionDef | ast.AsyncFunctionDef, source: str) -> bool:
    """A test whose verdict can be repeated: not skipped or xfailed, not reading its own node
    (``request``), not parametrized from anything but literals (a generator is consumed once)."""
    for d in func.decorator_list:
        text = _segment(source, d)
        if "xfail" in text or "skip" in text:
            return False
        if "parametrize" in text and isinstance(d, ast.Call):
            try:
                [ast.literal_eval(a) for a in d.args[1:]] + [ast.literal_eval(k.value) for k in d.keywords]
            except ValueError:
                return False
    return "request" not in {a.arg for a in func.args.args + func.args.kwonlyargs}


def _changes(func: ast.FunctionDef | ast.AsyncFunctionDef, source: str) -> list[tuple[str, ast.AST]]:
    """Ways to make a twin that cannot pass together with its original: change a literal of a
    top-level ``assert X == <literal>`` ("literal"), or negate a top-level ``assert E`` ("negate").
    A top-level statement runs whenever the test passes."""
    if not _twinnable(func, source):
        return []
    if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Try)) for n in ast.walk(func)):
        return []
    found: list[tuple[str, ast.AST]] = []
    for stmt in func.body:
        if not isinstance(stmt, ast.Assert):
            continue
        found.append(("negate", stmt.test))
        if isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1 and isinstance(stmt.test.ops[0], ast.Eq):
            for side in (stmt.test.left, stmt.test.comparators[0]):
                if _literal(side) and side.lineno == side.end_lineno:
                    text = _segment(source, side)
                    if isinstance(side.value, int) or _SIMPLE_STRING.match(text):
                        found.append(("literal", side))
    return found


def _changed_literal(node: ast.Constant, text: str, rng: random.Random) -> str:
    if isinstance(node.value, int):
        value = node.value + rng.choice([-1, 1]) * rng.randint(1, 9)
        return f"{value:_}" if "_" in text else str(value)
    prefix, quote, body = _SIMPLE_STRING.match(text).groups()
    extra = rng.choice("abcdefghijklmnopqrstuvwxyz")
    return f"{prefix}{quote}{body}{extra}{quote}"


def _name(vocabulary: list[str], taken: set[str], rng: random.Random, deselected: set[str],
          for_deselected: bool = False) -> str:
    """A new test name made of the module's own test-name words. pytest's ``--deselect`` matches
    node ids by prefix, so no name may start with a name in ``deselected`` (the new names of the
    tests this run leaves out), and the name of a test to be left out may not be the start of a
    name already taken."""
    for attempt in range(10_000):
        words = rng.sample(vocabulary, k=min(len(vocabulary), rng.randint(2, 4)))
        if len(words) < 2 or attempt > 50:
            words.append(str(rng.randint(2, 99)))
        name = "test_" + "_".join(words)
        if name in taken or any(name.startswith(d) for d in deselected):
            continue
        if for_deselected and any(t.startswith(name) for t in taken):
            continue
        taken.add(name)
        if for_deselected:
            deselected.add(name)
        return name
    raise RuntimeError("no free test name")  # pragma: no cover


def _replace(lines: list[str], node: ast.AST, text: str, first: int) -> list[str]:
    """``lines`` (the function's, starting at source line ``first``) with ``node``'s span replaced."""
    out = list(lines)
    a, b = node.lineno - first, node.end_lineno - first
    head = out[a].encode()[: node.col_offset]
    tail = out[b].encode()[node.end_col_offset:]
    out[a:b + 1] = (head + text.encode() + tail).decode().split("\n")
    return out


def _twin_text(source: str, lines: list[str], func: ast.FunctionDef | ast.AsyncFunctionDef, name: str,
               change: tuple[str, ast.AST] | None, rng: random.Random) -> tuple[str, str]:
    """The original test's own lines (decorators included), renamed and changed; and the change."""
    first = (func.decorator_list[0].lineno if func.decorator_list else func.lineno)
    body = lines[first - 1:func.end_lineno]
    said = ""
    if change is not None:
        kind, node = change
        text = _segment(source, node)
        new = _changed_literal(node, text, rng) if kind == "literal" else f"not ({text})"
        body = _replace(body, node, new, first)
        said = f"line {node.lineno}: {text.splitlines()[0][:60]} -> {new.splitlines()[0][:60]}"
    i = func.lineno - first
    body[i] = re.sub(rf"\bdef {re.escape(func.name)}\b", f"def {name}", body[i], count=1)
    return "\n".join(body), said


@timed("sentinel planting")
def plant(hidden: Path, rel_root: str, settings: SentinelSettings,
          rng: random.Random, untwinned: frozenset[str] = frozenset(), rules: Rules | None = None,
          ) -> tuple[list[Sentinel], dict[str, str]]:
    """Rename every hidden test and write twins beside them in the test modules under ``hidden``
    (a fresh copy). Return what was planted and the new node id of every original test.
    ``rel_root`` is the copy's path of ``hidden`` as pytest's node ids spell it; the tests named in
    ``untwinned`` (node ids without parameters) are renamed but get no twins (a real repository's
    tests that are not run). ``rules`` are the suite's collection rules (:mod:`.collection`: its
    ``python_files``, ``python_classes``, ``python_functions``, unittest classes whatever their
    names, nested and inherited tests).

    Every test gets a new name made of its module's test-name words, so neither a real test's
    name nor a twin's tells them apart; the mapping never enters the scoring process. A function a
    class inherits is renamed once, where it is defined, and mapped under every class that
    collects it; it gets no twins (a twin beside it would be collected under each of them)."""
    rules = rules or Rules()
    planted: list[Sentinel] = []
    renamed: dict[str, str] = {}
    for path in sorted(p for p in hidden.rglob("*.py") if rules.module(p.name) and "__pycache__" not in p.parts):
        source = path.read_text()
        tree = ast.parse(source)
        tests = collect(tree, rules)
        if not tests:
            continue
        lines = source.split("\n")  # ast counts lines by newlines only (not form feeds)
        by_def: dict[int, list[Collected]] = {}
        for t in tests:
            by_def.setdefault(id(t.func), []).append(t)
        defs = sorted((entries[0].func for entries in by_def.values()), key=lambda f: f.lineno)
        taken = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        vocabulary = sorted({w for f in defs for w in _WORDS.findall(f.name.removeprefix("test"))})
        # Twins only of a test collected once (an inherited one would be twinned under every class),
        # and only under names the suite's rules collect.
        single = [f for f in defs if len(by_def[id(f)]) == 1 and (rules.function("test_x") or by_def[id(f)][0].unittest)]
        changeable = {id(f): _changes(f, source) for f in single}
        eligible = [f for f in single if changeable[id(f)]]
        repeatable = [f for f in single if _twinnable(f, source)]

        def pick(pool: list, share: float) -> set[int]:
            n = min(len(pool), max(settings.minimum, round(share * len(pool)))) if share > 0 else 0
            return {id(f) for f in rng.sample(pool, n)}

        failing, same = pick(eligible, settings.failing_share), pick(repeatable, settings.same_share)
        edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement text), 1-based
        mine, module_renames = [], {}
        rel = f"{rel_root}/{path.relative_to(hidden).as_posix()}"
        deselected: set[str] = set()  # new names of the tests the run leaves out (by prefix)
        for func in defs:
            entries = by_def[id(func)]
            first = (func.decorator_list[0].lineno if func.decorator_list else func.lineno)
            ids = ["::".join([rel, *e.classes, func.name]) for e in entries]
            twins = len(entries) == 1 and ids[0] not in untwinned
            # A new name the suite's rules still collect: "test_..." (unittest's own prefix too);
            # under rules that would not collect it, the test keeps its name.
            keeps_name = not (rules.function("test_x") or all(e.unittest for e in entries))
            new_name = func.name if keeps_name else _name(vocabulary, taken, rng, deselected, for_deselected=not twins)
            for e, original_id in zip(entries, ids):
                module_renames[original_id] = "::".join([rel, *e.classes, new_name])
            blocks = [_twin_text(source, lines, func, new_name, None, rng)[0]]
            classes, new_id = entries[0].classes, module_renames[ids[0]]
            if twins and id(func) in same:  # right after its original: the same state as the original saw
                name = _name(vocabulary, taken, rng, deselected)
                blocks.append(_twin_text(source, lines, func, name, None, rng)[0])
                mine.append(Sentinel("::".join([rel, *classes, name]), "same_twin", new_id, "", ids[0]))
            if twins and id(func) in failing:
                choices = changeable[id(func)]
                # a changed number first; a changed string (it can read like a typo) or a negation
                # (which an object equal to everything survives) otherwise
                change = rng.choice([c for c in choices if c[0] == "literal" and isinstance(c[1].value, int)]
                                    or choices)
                name = _name(vocabulary, taken, rng, deselected)
                text, said = _twin_text(source, lines, func, name, change, rng)
                blocks.insert(rng.randrange(len(blocks) + 1), text)
                mine.append(Sentinel("::".join([rel, *classes, name]), "failing_twin", new_id, said, ids[0]))
            edits.append((first, func.end_lineno, "\n\n".join(blocks)))
        out = list(lines)
        for first, last, text in sorted(edits, reverse=True):
            out[first - 1:last] = text.split("\n")
        new_source = "\n".join(out)
        try:
            ast.parse(new_source)
        except SyntaxError:  # a layout we did not foresee: this module keeps its own text
            renamed.update({k: k for k in module_renames})
            continue
        path.write_text(new_source)
        renamed.update(module_renames)
        planted += mine
    return planted, renamed


def _params(nodeid: str) -> tuple[str, str]:
    base, sep, rest = nodeid.partition("[")
    return base, sep + rest


@timed("verdict stream")
def judge(planted: list[Sentinel], verdicts: dict[str, bool]) -> list[str]:
    """What the sentinels' verdicts prove: one line of evidence per broken expectation."""
    by_base: dict[str, dict[str, bool]] = {}
    for nodeid, ok in verdicts.items():
        base, params = _params(nodeid)
        by_base.setdefault(base, {})[params] = ok
    evidence = []
    for s in planted:
        original, twin = by_base.get(s.of, {}), by_base.get(s.nodeid, {})
        for params in sorted(set(original) | set(twin)):
            o, t = original.get(params), twin.get(params)
            label, of = f"{s.nodeid}{params}", f"{s.original}{params} (run as {s.of.rpartition('::')[2]})"
            if o is not None and t is None:
                evidence.append(f"sentinel {label} (a twin of {of}) was never reported")
            elif o is None and t is not None:
                evidence.append(f"sentinel {label} was reported but its original {of} was not")
            elif s.kind == "failing_twin" and o and t:
                evidence.append(f"sentinel {label} passed together with {of}, "
                                f"though it expects the opposite ({s.change})")
            elif s.kind == "same_twin" and o != t:
                evidence.append(f"sentinel {label} {'passed' if t else 'failed'} but its identical original "
                                f"{of} {'passed' if o else 'failed'}")
    return evidence
