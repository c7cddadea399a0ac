"""Is the plan on disk still what planning would write?

Composing conf/ costs seconds, and Snakemake parses the Snakefile (and so plans) on every
invocation, a no-op rerun included. :func:`.files.write_plan` records in ``plan.inputs.json``
(beside plan/, not in it: the record is this machine's, while plan/ is versioned with the results)
what the plan was made from: the command (study, overrides, run), the machine's answers planning
depends on (the project and work roots, the sandbox backend ``auto`` finds, PATH), and the size and
modification time of every file it read (conf/, the trial schema, the package's own code, the
workload directories and arm sources the plan names) and of every plan file it wrote. When all of
these are unchanged, composing again would write the same files, so it is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Protocol

from sdcs_bench.core.fsutil import TMP_PREFIX
from sdcs_bench.core.paths import conf_dir, project_root, run_work_root
from sdcs_bench.pipeline.plan.compat import check_agent_ready
from sdcs_bench.pipeline.plan.overrides import run_name
from sdcs_bench.pipeline.stability import Subset
from sdcs_bench.sandbox import resolve_backend_name

INPUTS_FILE = "plan.inputs.json"
PLAN_FORMAT = 1
PACKAGE = Path(__file__).resolve().parents[2]  # sdcs_bench/: its code is an input of every plan


def _fixed_sources() -> list[Path]:
    return [conf_dir(), project_root() / "workflow" / "schemas", PACKAGE]


def _walk(root: Path, out: list[tuple[str, int, int]], skip: tuple[str, ...] = ("__pycache__",)) -> None:
    try:
        entries = list(os.scandir(root))
    except NotADirectoryError:
        st = root.stat()
        out.append((str(root), st.st_size, st.st_mtime_ns))
        return
    except FileNotFoundError:
        out.append((str(root), -1, -1))
        return
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.name in skip or entry.name.startswith(TMP_PREFIX):
            continue
        if entry.is_dir():
            _walk(Path(entry.path), out, skip)
        else:
            st = entry.stat()
            out.append((entry.path, st.st_size, st.st_mtime_ns))


def _inputs_digest(study: str, overrides: tuple[str, ...] | list[str], run: str, plan_dir: Path,
                   sources: tuple[str, ...] | list[str], subset: dict[str, Any] | None = None) -> str:
    files: list[tuple[str, int, int]] = []
    for root in [*_fixed_sources(), *(project_root() / s for s in sources)]:
        _walk(Path(root), files)
    _walk(plan_dir, files)
    ident = {
        "format": PLAN_FORMAT, "study": study, "overrides": list(overrides), "run": run,
        "plan_dir": str(plan_dir.resolve()), "root": str(project_root()),
        "work_root": str(run_work_root(plan_dir.parent)), "auto_backend": resolve_backend_name("auto"),
        "path": os.environ.get("PATH", ""), "subset": subset,
    }
    return hashlib.sha256(json.dumps([ident, files]).encode()).hexdigest()


class Written(Protocol):
    """What the record reads of a plan just written (a :class:`.files.Plan`)."""

    study: str
    run: str
    overrides: tuple[str, ...]
    directory: Path
    sources: tuple[str, ...]
    agents: dict[str, dict[str, Any]] | None
    subset: dict[str, Any] | None


def inputs_record(plan: Written) -> dict[str, Any]:
    """What ``plan.inputs.json`` holds of a plan just written."""
    return {"digest": _inputs_digest(plan.study, plan.overrides, plan.run, plan.directory, plan.sources, plan.subset),
            "sources": list(plan.sources), "agents": plan.agents or {}}


def plan_is_current(study: str, overrides: list[str] | tuple[str, ...] = (), results: Path = Path("results"),
                    name: str | None = None, subset: Subset | None = None) -> bool:
    """Whether ``results/<run>/plan`` is what planning would write now (see :data:`INPUTS_FILE`);
    cheap: no composition. The agents' readiness (a key, an installed harness) is checked again."""
    name = name or (subset.default_name if subset else None)
    plan_dir = Path(results) / run_name(study, overrides, name) / "plan"
    try:
        recorded = json.loads((plan_dir.parent / INPUTS_FILE).read_text())
        digest, sources, agents = recorded["digest"], recorded["sources"], recorded["agents"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if digest != _inputs_digest(study, tuple(overrides), run_name(study, overrides, name), plan_dir, sources,
                                subset.to_dict() if subset else None):
        return False
    for agent_cfg in agents.values():
        check_agent_ready(agent_cfg)
    return True
