"""Scoring the standards family (docs/coherence.md): one decision per surface per handler.

Each predicate reads a handler module's syntax tree (``ast``) and says which forms of its surface
are present: the better, the worse, both (mixed) or neither (absent). Nothing is imported or run,
so a handler that does not import still has its decisions read, and nothing an agent wrote can act
during this part of scoring. A surface counts as a decision only where exactly one form is present;
each decision is then set against the trial's two sources (the standard and the existing code).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdcs_bench.trial.standards import (FOLLOWS, STYLE_FILE, SURFACES, Handler, Layout, StandardsSpec, follows,
                                        handler_key)

LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
_SNAKE_KEY = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")
_CAMEL_KEY = re.compile(r"^[a-z][a-z0-9]*([A-Z][a-z0-9]*)+$")


def _calls(tree: ast.AST):
    return (n for n in ast.walk(tree) if isinstance(n, ast.Call))


def _attr_name(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _handlers(tree: ast.Module, task: Handler) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and handler_key(n.name) == task.key]


def _payload_names(tree: ast.Module, task: Handler) -> set[str]:
    """What the handler calls its payload: its first parameter (``payload`` when there is no handler)."""
    names = {fn.args.args[0].arg for fn in _handlers(tree, task) if fn.args.args}
    return names or {"payload"}


def money(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for n in ast.walk(tree):
        op = n.op if isinstance(n, (ast.BinOp, ast.AugAssign)) else None
        if isinstance(op, ast.FloorDiv):
            found.add("better")
        elif isinstance(op, ast.Div):
            found.add("worse")
        elif isinstance(n, ast.Constant) and isinstance(n.value, float):
            found.add("worse")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "divmod":
            found.add("better")
    return found


def field_access(tree: ast.Module, task: Handler) -> set[str]:
    names = _payload_names(tree, task)
    found = set()
    for n in ast.walk(tree):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                and isinstance(n.func.value, ast.Name) and n.func.value.id in names):
            found.add("better")
        elif (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)
              and n.value.id in names and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)):
            found.add("worse")
    return found


def clock(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for call in _calls(tree):
        func = call.func
        if not isinstance(func, ast.Attribute) or _attr_name(func.value) != "datetime":
            continue
        if func.attr == "now":
            found.add("better" if call.args or any(k.arg == "tz" for k in call.keywords) else "worse")
        elif func.attr in ("utcnow", "today"):
            found.add("worse")
    return found


def timestamp_format(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for call in _calls(tree):
        if isinstance(call.func, ast.Attribute):
            if call.func.attr == "isoformat":
                found.add("better")
            elif call.func.attr == "strftime":
                found.add("worse")
    return found


def log_format(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for call in _calls(tree):
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in LOG_METHODS and "log" in (_attr_name(func.value) or "").lower()):
            continue
        args = call.args[1:] if func.attr == "log" else call.args  # log(level, msg, ...)
        if not args:
            continue
        msg = args[0]
        if isinstance(msg, ast.JoinedStr):
            found.add("worse")
        elif isinstance(msg, ast.BinOp) and isinstance(msg.op, ast.Mod):
            found.add("worse")
        elif isinstance(msg, ast.Call) and isinstance(msg.func, ast.Attribute) and msg.func.attr == "format":
            found.add("worse")
        elif isinstance(msg, ast.Constant) and isinstance(msg.value, str) and len(args) > 1:
            found.add("better")
    return found


def handler_name(tree: ast.Module, task: Handler) -> set[str]:
    names = {fn.name for fn in _handlers(tree, task)}
    return {form for form, name in task.names.items() if name in names}


def response_keys(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for n in ast.walk(tree):
        if not isinstance(n, ast.Dict):
            continue
        for key in n.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if _SNAKE_KEY.match(key.value):
                    found.add("better")
                elif _CAMEL_KEY.match(key.value):
                    found.add("worse")
    return found


def rate_source(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr == task.rate_name and isinstance(n.ctx, ast.Load):
            found.add("better")
        elif isinstance(n, ast.Name) and n.id == task.rate_name and isinstance(n.ctx, ast.Load):
            found.add("better")
        elif isinstance(n, ast.Constant) and type(n.value) is int and n.value == task.rate_bp:
            found.add("worse")
    return found


def validation(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Raise) and n.exc is not None:
            exc = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
            if _attr_name(exc) == "ValidationError":
                found.add("better")
        elif isinstance(n, ast.Return) and isinstance(n.value, ast.Dict):
            if any(isinstance(k, ast.Constant) and k.value == "error" for k in n.value.keys):
                found.add("worse")
    return found


def none_check(tree: ast.Module, task: Handler) -> set[str]:
    found = set()
    for n in ast.walk(tree):
        if not isinstance(n, ast.Compare):
            continue
        operands = [n.left, *n.comparators]
        for op, left, right in zip(n.ops, operands, operands[1:]):
            if not any(isinstance(x, ast.Constant) and x.value is None for x in (left, right)):
                continue
            if isinstance(op, (ast.Is, ast.IsNot)):
                found.add("better")
            elif isinstance(op, (ast.Eq, ast.NotEq)):
                found.add("worse")
    return found


PREDICATES: dict[str, Callable[[ast.Module, Handler], set[str]]] = {
    "money": money, "field_access": field_access, "clock": clock, "timestamp_format": timestamp_format,
    "log_format": log_format, "handler_name": handler_name, "response_keys": response_keys,
    "rate_source": rate_source, "validation": validation, "none_check": none_check,
}
assert tuple(PREDICATES) == SURFACES


def form_of(found: set[str]) -> str | None:
    """The decision a predicate's findings make: one form, ``mixed`` (both) or None (absent)."""
    if len(found) == 2:
        return "mixed"
    return next(iter(found), None)


def classify(source: str | bytes, task: Handler) -> dict[str, str | None] | None:
    """Each surface's form in one handler module's source; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return {s: form_of(PREDICATES[s](tree, task)) for s in SURFACES}


def _modified(sandbox: Path, spec: StandardsSpec, layout: Layout) -> list[str]:
    """The sources and the queue as the scaffold wrote them, against the sandbox now: an agent that
    edits the contradiction away (or the queue) is recorded, not scored differently."""
    expected = spec.layout_files(layout)
    changed = []
    for rel in sorted({*expected, STYLE_FILE}):
        path = sandbox / rel
        now = path.read_text(errors="replace") if path.is_file() else None
        if now != expected.get(rel):
            changed.append(rel if now is not None else f"{rel} (deleted)" if rel in expected else f"{rel} (created)")
    return changed


def standards_report(spec: StandardsSpec, layout: Layout, sandbox: Path) -> dict[str, Any]:
    """The scorecard's ``standards`` section: per task and surface the form written and which source
    it follows; the counts; the share written the better way among the decisions."""
    std, code = layout.standard_forms(), layout.code_forms()
    handlers: dict[str, Any] = {}
    tally: Counter[str] = Counter()
    contested: Counter[str] = Counter()
    disagreeing = set(layout.disagreeing())
    decisions = better = 0
    for task in spec.tasks:
        path = sandbox / task.module
        tree = _parse(path) if path.is_file() else None
        forms = {s: form_of(PREDICATES[s](tree, task)) for s in SURFACES} if tree is not None else None
        entry: dict[str, Any] = {"module": task.module, "present": path.is_file(), "parses": tree is not None,
                                 "handler_found": bool(tree is not None and _handlers(tree, task))}
        per: dict[str, Any] = {}
        for s in SURFACES:
            form = forms.get(s) if forms else None
            how = follows(form, std[s], code[s])
            per[s] = {"form": form, "follows": how}
            tally[how] += 1
            if s in disagreeing:
                contested[how] += 1
            if form in ("better", "worse"):
                decisions += 1
                better += form == "better"
        entry["surfaces"] = per
        handlers[task.id] = entry
    return {
        "layout": layout.settings(),
        "layout_name": layout.name,
        "standard_forms": std,
        "code_forms": code,
        "disagreeing": sorted(disagreeing, key=SURFACES.index),
        "handlers_written": sorted(t for t, e in handlers.items() if e["present"]),
        "decisions": decisions,
        "better": better,
        "better_share": round(better / decisions, 4) if decisions else None,
        "follows": {k: tally.get(k, 0) for k in FOLLOWS},
        "contested_follows": {k: contested.get(k, 0) for k in FOLLOWS},
        "sources_modified": _modified(sandbox, spec, layout),
        "handlers": handlers,
    }


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return None
