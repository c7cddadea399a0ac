"""Boundary rules of wiring.yaml, checked with import-linter's contracts on a grimp graph of the
scoring copy (static imports, function-local ones included) plus the imports seen at run time."""

from __future__ import annotations

import copy
import importlib
import sys
import threading
from pathlib import Path
from typing import Any

import yaml
from sdcs_bench.core.timing import timed


_SYS_PATH_LOCK = threading.Lock()
# A forbidden contract with this key true tolerates forbidden modules that do not exist.
ABSENT_OK = "forbidden_may_be_absent"


def _contract_types() -> dict[str, type]:
    from importlinter import api  # noqa: F401  (configures import-linter's settings)
    from importlinter.contracts.forbidden import ForbiddenContract
    from importlinter.contracts.independence import IndependenceContract
    from importlinter.contracts.layers import LayersContract

    return {"forbidden": ForbiddenContract, "independence": IndependenceContract, "layers": LayersContract}


def load_wiring(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def _edges(metadata: Any) -> set[tuple[str, str]]:
    """Every direct import named anywhere in a broken contract's report."""
    found: set[tuple[str, str]] = set()
    if isinstance(metadata, dict):
        if isinstance(metadata.get("importer"), str) and isinstance(metadata.get("imported"), str):
            found.add((metadata["importer"], metadata["imported"]))
        for value in metadata.values():
            found |= _edges(value)
    elif isinstance(metadata, (list, tuple)):
        for value in metadata:
            found |= _edges(value)
    return found


@timed("boundary check")
def check_boundaries(root: Path, wiring: dict[str, Any], dynamic: list[tuple[str, str]] = ()) -> dict[str, Any]:
    import grimp
    import grimp.exceptions

    roots = [p for p in wiring.get("root_packages", []) if (root / p / "__init__.py").is_file()]
    missing = sorted(set(wiring.get("root_packages", [])) - set(roots))
    with _SYS_PATH_LOCK:  # grimp finds the packages through sys.path, which threads share
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()
        try:
            graph = grimp.build_graph(*roots, cache_dir=None) if roots else None
        except grimp.exceptions.SourceSyntaxError as exc:  # the rules cannot be checked: none is kept
            graph, unreadable = None, f"{exc}".replace(str(root) + "/", "")
        else:
            unreadable = None
        finally:
            sys.path.remove(str(root))
    dynamic_added = []
    if graph is not None:
        for importer, imported in sorted(set(dynamic)):  # the order they were seen in is not a fact
            if importer in graph.modules and imported in graph.modules and not graph.direct_import_exists(
                importer=importer, imported=imported
            ):
                graph.add_import(
                    importer=importer, imported=imported, line_number=0, line_contents="<imported at run time>"
                )
                dynamic_added.append([importer, imported])
    types = _contract_types()
    results, violations = [], []
    for raw in wiring.get("contracts", []):
        options = {k: v for k, v in raw.items() if k not in ("name", "type", ABSENT_OK)}
        if raw.get(ABSENT_OK) and graph is not None:
            # SpecSnap's own option (a coherence workload's secrets, which a variant may delete): a
            # forbidden module that is not there is not imported, so it leaves the rule kept.
            options["forbidden_modules"] = [m for m in options.get("forbidden_modules", []) if m in graph.modules]
        contract = types[raw["type"]](
            name=raw["name"], session_options={"root_packages": roots}, contract_options=options
        )
        error = None
        if graph is None or missing:
            kept, edges = False, set()
            error = unreadable or f"root packages missing: {', '.join(missing)}"
        elif raw.get(ABSENT_OK) and not options["forbidden_modules"]:
            kept, edges = True, set()
        else:
            try:
                check = contract.check(copy.deepcopy(graph), verbose=False)
                kept, edges = check.kept, _edges(check.metadata)
            except Exception as exc:  # e.g. a module the rule names was deleted
                kept, edges, error = False, set(), f"{type(exc).__name__}: {exc}"
        results.append({"name": raw["name"], "kept": kept, "imports": sorted(map(list, edges)), "error": error})
        if not kept:
            dyn = {tuple(e) for e in dynamic_added}
            violations += [
                {"contract": raw["name"], "importer": a, "imported": b, "dynamic": (a, b) in dyn}
                for a, b in sorted(edges)
            ] or [{"contract": raw["name"], "importer": None, "imported": None, "dynamic": False}]
    return {
        "violations": len(violations),
        "details": violations,
        "contracts": results,
        "missing_root_packages": missing,
        "dynamic_imports_added": dynamic_added,
    }
