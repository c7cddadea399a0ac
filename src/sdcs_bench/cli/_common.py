"""What the command groups share: the options several commands take, the console, a workload
ready to use, a required option's check, and a stage verb's option (of ``jobs.STAGE_VERBS``, the one
table) as a typer parameter."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from sdcs_bench import jobs
from sdcs_bench.core.errors import SpecSnapError

_writing = jobs.writing

TierOpt = Annotated[Optional[int], typer.Option("--tier", help="shorthand for --workload tier_N")]
WorkloadOpt = Annotated[Optional[str], typer.Option("--workload", help="workload id (see `specsnap list workloads`)")]
BackendOpt = Annotated[str, typer.Option("--backend", help="sandbox backend: auto, bwrap, docker or local")]
ResultsOpt = Annotated[Path, typer.Option("--results", help="results directory")]


def typer_option(option: jobs.Option, *, optional: bool = False):
    """The annotation of a typer parameter taking ``option`` (one of the table's): required unless the
    table says otherwise or ``optional`` (a by-hand command's pipeline options); a repeated option
    is a list."""
    kind = list[option.type] if option.repeat else option.type
    if optional or not option.required:
        kind = Optional[kind]
    return Annotated[kind, typer.Option(option.flag, help=option.help, min=option.min)]


def _console():
    from rich.console import Console

    return Console()


def _workload(workload: str | None, tier: int | None, results: Path = Path("results")):
    """A workload ready to use; a real repository's source is fetched and its environment built
    first (once: both are cached under ``results/_cache``, where the pipeline keeps them)."""
    from sdcs_bench.pipeline.repos import prepare_workload
    from sdcs_bench.trial.workload import load_workload
    from sdcs_bench.trial.workload_registry import resolve_workload_id

    return prepare_workload(load_workload(resolve_workload_id(workload, tier)), results)


def _need(value, flag: str, choices=None):
    if value is None:
        raise SpecSnapError(f"{flag} is required", choices)
    return value
