"""Residency ρ_w: how much of an edited file's neighbourhood the agent had just read (docs/coherence.md).

For an edit of file f at tool event t, ρ_w is the share of f's neighbours N(f) that the agent read
in the w tool events before t (reads made earlier within t's own tool call count too; reads
after the edit never do); ρ_w = 1 when f has no neighbours. w sweeps 4, 8, 16, 32, 64, 128.

Two neighbourhoods:

- ``imports``: the directed import graph of the workspace's Python files, built from their syntax
  trees (a regular-expression fallback for a file that does not parse). N(f) is what f imports,
  resolved to workspace files: its dependencies. The coherence-debt paper found directed
  dependencies precise where the symmetric neighbourhood (importers too) only added spurious
  edges, so the importers of f are not neighbours.
- ``authored``: where the workload authors the coupling (the ``motifs`` family: each motif's
  first file depends on ``pkg_m/secret.py``, the second on the first, the third on the second),
  N(f) is exactly that mapping. The secret is required as a literal and never imported, so no
  import graph can see it.

A read of a file the agent itself wrote (in this session before the read, or in an earlier
session of the trial) never counts: an agent that writes the missing file and reads it back has
acquired nothing. Edits of ``.py`` files are scored on the import graph, edits of the files the
authored neighbourhood maps on that; an edit whose target the record does not name (a script's
write) cannot be scored (it is counted).
"""

from __future__ import annotations

import ast
import math
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any

from sdcs_bench.coherence.events import Event

WINDOWS = (4, 8, 16, 32, 64, 128)
SCHEMA = "specsnap.residency/1"
_FROM = re.compile(r"^\s*from\s+(\.*[\w.]*)\s+import\s+\(?\s*([\w*,\s]+)", re.MULTILINE)
_IMPORT = re.compile(r"^\s*import\s+([\w.,\s]+?)(?:\s+as\s+\w+)?\s*$", re.MULTILINE)


def _module_names(path: str, roots: Iterable[str]) -> list[str]:
    names = []
    for root in roots:
        prefix = root.strip("/")
        if prefix and not path.startswith(prefix + "/"):
            continue
        rel = path[len(prefix) + 1:] if prefix else path
        parts = rel[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts):
            names.append(".".join(parts))
    return names


_KEPT_SOURCE = 16 * 1024  # characters of a source whose imports are kept, ...
_KEPT_IMPORTS = 256  # ... if it has at most this many; at most _KEPT_ENTRIES sources kept
_KEPT_ENTRIES = 256
_KEPT: dict[str, tuple] = {}


def _imports(source: str) -> tuple[tuple[int, str, list[str]], ...]:
    """(level, module, names) of every import statement (``import a.b`` is (0, "a.b", [])); a file
    that does not parse falls back to regular expressions. (Kept per source text, a small one, for
    the session's second map of its workspace, mostly the same files: bounded whatever an agent
    writes, at most 256 sources of 16 Ki characters and 256 imports each.)"""
    found = _KEPT.get(source)
    if found is None:
        found = _parse_imports(source)
        if len(source) <= _KEPT_SOURCE and len(found) <= _KEPT_IMPORTS:
            if len(_KEPT) >= _KEPT_ENTRIES:
                _KEPT.clear()
            _KEPT[source] = found
    return found


def _parse_imports(source: str) -> tuple[tuple[int, str, list[str]], ...]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    found = []
    if tree is not None:
        for node in ast.walk(tree):  # function-local and conditional imports included
            if isinstance(node, ast.Import):
                found += [(0, alias.name, []) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                found.append((node.level or 0, node.module or "", [a.name for a in node.names]))
        return tuple(found)
    for m in _FROM.finditer(source):
        mod = m.group(1)
        level = len(mod) - len(mod.lstrip("."))
        names = [n.strip() for n in m.group(2).replace("\n", " ").split(",") if n.strip()]
        found.append((level, mod.lstrip("."), [n.split()[0] for n in names]))
    for m in _IMPORT.finditer(source):
        found += [(0, n.strip().split()[0], []) for n in m.group(1).split(",") if n.strip()]
    return tuple(found)


def import_graph(files: Mapping[str, str], roots: Iterable[str] = ("",)) -> dict[str, set[str]]:
    """Each Python file (workspace-relative path -> source) -> the workspace files it imports."""
    roots = list(dict.fromkeys(["", *("" if r.strip("/") in ("", ".") else r.strip("/") for r in roots)]))
    index: dict[str, str] = {}
    for path in sorted(files):
        if path.endswith(".py"):
            for name in _module_names(path, roots):
                index.setdefault(name, path)
    graph: dict[str, set[str]] = {}
    for path, source in files.items():
        if not path.endswith(".py"):
            continue
        own = _module_names(path, roots)
        name = own[0] if own else ""
        pkg_name = name if posixpath.basename(path) == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for level, module, names in _imports(source):
            if level:
                base_parts = pkg_name.split(".") if pkg_name else []
                if level - 1 > len(base_parts):
                    continue
                base = ".".join(base_parts[: len(base_parts) - (level - 1)])
                module = ".".join(p for p in (base, module) if p)
            targets = []
            for name in names:
                sub = f"{module}.{name}" if module else name
                if name != "*" and sub in index:
                    targets.append(index[sub])
                elif module in index:
                    targets.append(index[module])
            if not names and module:
                parts = module.split(".")
                for i in range(len(parts), 0, -1):  # the deepest module of the workspace it names
                    if ".".join(parts[:i]) in index:
                        targets.append(index[".".join(parts[:i])])
                        break
            deps.update(t for t in targets if t != path)
        graph[path] = deps
    return graph


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def residency(events: list[Event], *, graph: Mapping[str, Iterable[str]],
              authored: Mapping[str, Iterable[str]] | None = None, windows: Iterable[int] = WINDOWS,
              exclude_agent_written: bool = True, run_id: str | None = None) -> dict[str, Any]:
    """ρ_w for every scored edit of a session's stream, and the per-window means (overall and over
    the last quarter of the session's edits)."""
    windows = tuple(windows)
    neighbourhoods: dict[str, Mapping[str, Iterable[str]]] = {"imports": graph}
    if authored is not None:
        neighbourhoods["authored"] = authored
    reads = [e for e in events if e.type == "file_read" and e.tool_event is not None]
    edits, unscored, without_path = [], 0, 0
    for e in events:
        if e.type != "edit_intent":
            continue
        path = e.payload.get("path")
        if not path:
            without_path += 1
            continue
        if not (path.endswith(".py") or (authored is not None and path in authored)):
            unscored += 1
            continue
        row: dict[str, Any] = {"event_id": e.event_id, "tool_event": e.tool_event, "path": path,
                               "via_script": bool(e.payload.get("via_script")), "neighbours": {}, "rho": {}}
        for name, hood in neighbourhoods.items():
            if name == "authored" and path not in hood:
                continue  # the authored coupling says nothing about this file: not scored against it
            neighbours = sorted(set(hood.get(path, ())) - {path})
            row["neighbours"][name] = neighbours
            rho = {}
            for w in windows:
                if not neighbours:
                    rho[str(w)] = 1.0
                    continue
                seen = {r.payload["path"] for r in reads
                        if r.event_id < e.event_id and e.tool_event is not None and r.tool_event >= e.tool_event - w
                        and not (exclude_agent_written and r.payload.get("agent_written"))}
                rho[str(w)] = round(len(seen.intersection(neighbours)) / len(neighbours), 4)
            row["rho"][name] = rho
        edits.append(row)
    means, final = {}, {}
    for name in neighbourhoods:
        rows = [r for r in edits if name in r["rho"]]
        last = rows[len(rows) - math.ceil(len(rows) / 4):] if rows else []
        means[name] = {str(w): _mean([r["rho"][name][str(w)] for r in rows]) for w in windows}
        final[name] = {str(w): _mean([r["rho"][name][str(w)] for r in last]) for w in windows}
    scored = {name: sum(1 for r in edits if name in r["rho"]) for name in neighbourhoods}
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "windows": list(windows),
        "neighbourhoods": {
            "imports": {"kind": "directed import graph (AST), an edit's neighbours are the files it imports",
                        "files": len(graph), "edges": sum(len(set(v)) for v in graph.values())},
            "authored": ({"kind": "the workload's authored coupling", "files": len(authored),
                          "edges": sum(len(set(v)) for v in authored.values())} if authored is not None else None),
        },
        "agent_written_excluded": exclude_agent_written,
        "edits_scored": len(edits),
        "edits_scored_by": scored,
        "edits_without_path": without_path,
        "edits_not_scored": unscored,
        "mean": means,
        "final_quarter_mean": final,
        "edits": edits,
    }
