"""Real repositories in the pipeline (docs/real_repos.md): what the plan records for a repository's
source and environment (``plan/repos/<workload>.json``), what the ``source`` and ``environment``
rules do with it, and a workload made ready by hand, cached where those rules put it
(``CacheLayout``), so the two reuse each other's work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdcs_bench.pipeline.layout import CacheLayout
from sdcs_bench.sandbox.environment import Interpreter, build_environment, environment_key, find_interpreter
from sdcs_bench.sandbox.source import fetch_source, verified_tree
from sdcs_bench.trial.repo import EnvironmentSpec, SourcePin
from sdcs_bench.trial.workload_model import Workload


def repo_plan(workload: Workload, results: Path) -> dict[str, Any]:
    """Where a real repository's source and environment are cached, and with which interpreter:
    found now, so that a missing one stops the run at planning, before any work."""
    cache = CacheLayout(str(results))
    interpreter = find_interpreter(workload.environment.python)
    return {
        "source": workload.source.to_dict(),
        "source_dir": cache.source_dir(workload.source.key),
        "environment": workload.environment.to_dict(),
        "interpreter": interpreter.to_dict(),
        "environment_dir": cache.env_dir(environment_key(workload.environment, interpreter)),
    }


def fetch_planned_source(planned: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``source`` rule: fetch (or verify the cached copy of) the planned pin."""
    return fetch_source(SourcePin.from_config(planned["source"], where), Path(planned["source_dir"]))


def build_planned_environment(planned: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``environment`` rule: build (or reuse) the planned environment with the planned interpreter."""
    return build_environment(EnvironmentSpec.from_config(planned["environment"], where),
                             Interpreter(**planned["interpreter"]), Path(planned["environment_dir"]))


def prepare_workload(workload: Workload, results: Path) -> Workload:
    """A real repository workload ready to use by hand (validation, scaffolding or scoring): its
    source fetched and verified and its environment built. Other workloads as they are."""
    if not workload.is_real_repo:
        return workload
    planned = repo_plan(workload, results)
    fetch_planned_source(planned, workload.id)
    build_planned_environment(planned, workload.id)
    return workload.with_source(verified_tree(workload.source, Path(planned["source_dir"])),
                                Path(planned["environment_dir"]))
