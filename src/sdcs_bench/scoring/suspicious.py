"""A static scan of the scoring copy for code that reaches for the scorer: the test runner's
internals, exit-time hooks, the report, the test tree, the interpreter's frames and object graph,
import machinery past the import statement. It is a diagnostic (listed on the scorecard, never
zeroing a score by itself); what the workload's own baseline already contains is not listed.

It also returns the imports it can name that grimp does not see (``importlib.import_module("a.b")``,
``sys.modules["a.b"]``, ``__import__("a.b")`` with a constant name), for the boundary rules."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from sdcs_bench.scoring.junit import HIDDEN_PREFIX
from sdcs_bench.trial.workload_model import Workload
from sdcs_bench.core.timing import timed

MODULES = {
    "_pytest": "imports the test runner's internals", "pytest": "imports the test runner",
    "pluggy": "imports the test runner's plugin system", "atexit": "registers exit-time hooks",
    "ctypes": "calls native code", "gc": "walks the object graph", "signal": "handles signals",
    "faulthandler": "handles fatal signals", "runpy": "runs modules by path", "inspect": "inspects frames or source",
}
ATTRIBUTES = {
    "_exit": "exits without the runner", "_getframe": "reads the call stack", "f_back": "reads the call stack",
    "f_globals": "reads a frame's globals", "f_locals": "reads a frame's locals", "tb_frame": "reads the call stack",
    "addaudithook": "adds an audit hook", "settrace": "traces execution", "setprofile": "traces execution",
    "excepthook": "replaces the exception hook", "_bootstrap": "uses importlib's bootstrap",
    "_gcd_import": "uses importlib's bootstrap", "_find_and_load": "uses importlib's bootstrap",
    "exec_module": "executes a module from a spec", "spec_from_file_location": "loads a module from a path",
    "SourceFileLoader": "loads a module from a path", "run_path": "runs a file as a module",
    "meta_path": "changes the import system", "path_hooks": "changes the import system",
    "__builtins__": "reaches the builtins", "__import__": "imports through __import__",
    "__code__": "reads or swaps code objects", "__class__": None,  # only assignments (below)
    "dup2": "redirects a file descriptor", "dup": "duplicates a file descriptor",
    "getattr_static": "fetches attributes past the module's own lookup",
    "__getattribute__": "fetches attributes past the module's own lookup",
    "__globals__": "reads a function's globals", "__closure__": "reads a function's closure",
    "__defaults__": "reads or swaps a function's defaults",
}
STRINGS = {
    "junit": "names the test report", "specsnap": "names the scorer", "conftest": "names the runner's config",
    "pytest": "names the test runner", ".xml": "names a report file", "hidden": "names the hidden tests",
}
CALLS = {"exec": "executes code from a string", "eval": "evaluates code from a string",
         "compile": "compiles code at run time"}


def _constant_module(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _findings(tree: ast.AST) -> tuple[list[tuple[int, str]], list[str]]:
    found: list[tuple[int, str]] = []
    imported: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                why = MODULES.get(name.split(".")[0])
                if why:
                    found.append((node.lineno, f"{why} ({name})"))
        elif isinstance(node, ast.Attribute):
            why = ATTRIBUTES.get(node.attr)
            if node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys":
                found.append((node.lineno, "fetches modules from sys.modules"))
            elif node.attr in ("__class__", "__code__") and isinstance(node.ctx, ast.Store):
                found.append((node.lineno, f"assigns {node.attr}"))
            elif why:
                found.append((node.lineno, f"{why} (.{node.attr})"))
        elif isinstance(node, ast.Name) and node.id in ("__import__", "__builtins__"):
            found.append((node.lineno, ATTRIBUTES[node.id]))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if isinstance(func, ast.Name) and name in CALLS:
                found.append((node.lineno, CALLS[name]))
            if name in ("import_module", "__import__") and node.args and _constant_module(node.args[0]):
                imported.append(_constant_module(node.args[0]))
            if name in ("open", "write_text", "write_bytes") and _writes(node):
                found.append((node.lineno, "writes a file"))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "modules" and _constant_module(node.slice):
            imported.append(_constant_module(node.slice))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            low = node.value.lower()
            for needle, why in STRINGS.items():
                if needle in low:
                    found.append((node.lineno, f"{why} ({node.value[:40]!r})"))
    return found, imported


def _writes(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes"):
        return True
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


def _scan_tree(root: Path, workload: Workload) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in (HIDDEN_PREFIX, ".specsnap") or rel.as_posix() == "conftest.py" \
                or rel.parts[0] in workload.visible_tests:
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for line, what in _findings(tree)[0]:
            out.setdefault((rel.as_posix(), what), line)
    return out


def _module_of(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@timed("boundary check")
def scan_source(copy: Path, workload: Workload) -> dict[str, Any]:
    """Findings in the scoring copy's source that the workload's baseline does not have, and the
    constant-named imports static analysis would otherwise miss (as ``(importer, imported)``)."""
    mine, base = _scan_tree(copy, workload), _scan_tree(workload.baseline_dir, workload)
    findings = [{"file": f, "line": line, "what": what} for (f, what), line in sorted(mine.items())
                if (f, what) not in base]
    edges = []
    base_path = copy / workload.import_root
    for package in workload.packages:
        for path in sorted((base_path / package).rglob("*.py")):
            try:
                imported = _findings(ast.parse(path.read_bytes()))[1]
            except (SyntaxError, ValueError):
                continue
            importer = _module_of(path.relative_to(base_path))
            edges += [(importer, target) for target in imported if target.split(".")[0] in workload.packages]
    return {"findings": findings, "edges": edges}
