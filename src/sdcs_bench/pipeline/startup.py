"""A pipeline run's start-up: what the Snakefile does once, before Snakemake reads its rules.

``workflow/rules/common.smk`` calls :func:`start_run` once and keeps only what Snakemake itself
must be told (input functions, wildcard constraints, the shell prefix, ``envvars:``,
``onstart:``). In every process that parses the Snakefile (the main one, and each cluster or
remote job) the call finds the project and reads the plan's cells table; in the main process it
also checks the run's ``--config``, plans the run (taking its run lock), byte-compiles the package
and sets the run's budget. Bad input stops here with one line and exit status 2, before any job.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, NoReturn, Sequence

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import workflow_project
from sdcs_bench.pipeline.layout import CacheLayout, RunLayout
from sdcs_bench.pipeline.plan import (
    CELLS_VAR,
    check_run_config,
    ensure_plan,
    pack_cells,
    read_cells,
    run_name,
    unpack_cells,
)
from sdcs_bench.pipeline.stability import Subset

# Building the DAG allocates several objects for every job and every file of it, and nearly all of
# them live until the run ends. At CPython's default thresholds (700, 10, 10) the cyclic garbage
# collector walks them over and over: about a sixth of a large grid's `snakemake -n` (README
# "Benchmarks"). A young collection every 100,000 allocations, and older ones as rarely relative to
# it, leaves a fraction of that; memory held in reference cycles is still freed, only later.
GC_THRESHOLDS = (100_000, 20, 100)

CONFIG_SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"  # (under the project root)


def stop(message: object) -> NoReturn:
    """Bad input: one line on the terminal, no traceback, exit status 2, before any job."""
    print(f"specsnap: error: {message}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Does this invocation run jobs?
#
# A run that may run jobs byte-compiles the package and sets the budget (raising it moves the
# stages a smaller one stopped aside, so they run again); one that runs none changes nothing.
# Snakemake tells a Snakefile about `-n` (`workflow.output_settings.dryrun`, set from the command
# line and any profile before the Snakefile is read), but what it will do instead of running
# jobs (`--summary`, `--dag`, `--unlock`, ...) it decides only after: for those the command line
# is read, by Snakemake's own parser.

# The `snakemake` options, by their destination in Snakemake's parser, that make it do something
# other than run the workflow's jobs (snakemake.cli.args_to_api): each reads or edits the
# workflow's records, or lists, draws or deletes, and runs no job. (`--touch` is not one: it
# marks outputs as made, a run in all but the running.)
NO_JOB_OPTIONS = (
    "dryrun",
    "lint", "list_rules", "list_target_rules", "print_compilation",
    "containerize", "generate_unit_tests",
    "dag", "rulegraph", "filegraph", "d3dag",
    "unlock", "cleanup_metadata", "cleanup_shadow",
    "conda_cleanup_envs", "conda_create_envs_only", "list_conda_envs", "container_cleanup_images",
    "list_changes", "list_input_changes", "list_params_changes", "list_untracked",
    "summary", "detailed_summary", "archive",
    "delete_all_output", "delete_temp_output",
)


def snakemake_argv(argv: Sequence[str] | None = None) -> list[str] | None:
    """The arguments of ``argv`` (``sys.argv`` by default) when it is the ``snakemake`` command
    line (the console script, or ``python -m snakemake``); None when Snakemake was started some
    other way (through its API, from another program's command line)."""
    argv = sys.argv if argv is None else argv
    if not argv:
        return None
    program = Path(argv[0])
    if program.name == "snakemake" or (program.name == "__main__.py" and program.parent.name == "snakemake"):
        return list(argv[1:])
    return None


def _snakemake_parser():
    from snakemake.cli import get_argument_parser

    return get_argument_parser()  # (its plugins are loaded already in a `snakemake` process)


def command_line_runs_no_job(args: Sequence[str]) -> bool:
    """Whether ``snakemake ARGS`` runs no job: a dry run (``-n``, ``--dry-run``, ``--dryrun``, also
    inside combined short options such as ``-np``), or an option that does something else instead
    (``--summary``/``-S``, ``--dag``, ``--unlock``, ``--list-changes code``, a report, ...). The
    arguments are read by Snakemake's own parser, so abbreviations, option values and combined
    options mean what they mean to Snakemake. Arguments it cannot read count as a run."""
    parser = _snakemake_parser()
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            parsed, _ = parser.parse_known_args(list(args))
    except SystemExit:
        return False
    if any(getattr(parsed, dest, None) not in (None, False) for dest in NO_JOB_OPTIONS):
        return True
    # `--report [FILE]` (or `--reporter`) writes the report of what exists, unless after a run
    return bool((parsed.report is not None or parsed.reporter) and not parsed.report_after_run)


def runs_no_job(workflow: Any, argv: Sequence[str] | None = None) -> bool:
    """Whether this invocation of Snakemake runs no job: ``workflow``'s dry-run setting, else its
    command line (``argv``, ``sys.argv`` by default; only when that is the ``snakemake`` command's).
    """
    output = getattr(workflow, "output_settings", None)
    if output is not None and output.dryrun:
        return True
    args = snakemake_argv(argv)
    return args is not None and command_line_runs_no_job(args)


# ---------------------------------------------------------------------------------------------
# The run


@dataclass(frozen=True)
class Run:
    """What the rules need of a run, read once at start-up (each table worked out once)."""

    root: Path  # the project: the checkout the Snakefile is in
    study: str  # the study's name (conf/study/<study>.yaml)
    results: str  # where runs write (``--config results=``)
    name: str  # the run's directory under ``results``
    subset: Subset | None  # a rerun batch: a share of a finished run's cells again
    in_storage: bool  # no shared file system: every file goes through a default storage provider
    cells: dict[str, dict[str, str]]  # the plan's cells table, by trial

    @property
    def dir(self) -> str:
        """``results/<run>``: ``results/<study>``, ``results/<study>+<digest of the overrides>`` or
        ``results/<name>``."""
        return f"{self.results}/{self.name}"

    @cached_property
    def layout(self) -> RunLayout:
        return RunLayout(self.dir)  # every file name comes from sdcs_bench.pipeline.layout

    @cached_property
    def cache(self) -> CacheLayout:
        return CacheLayout(self.results)

    def warm_jobs(self, workflow: Any, config: dict[str, Any]) -> bool:
        """Whether this run's stage jobs start warm (sdcs_bench/warm.py): asked for (the default),
        in the main process of a run whose jobs run on this machine."""
        from sdcs_bench.pipeline.budgets import check_switch

        asked = check_switch("warm_jobs", config.get("warm_jobs", True))
        return asked and workflow.is_main_process and workflow.local_exec and not self.in_storage

    @property
    def shell_prefix(self) -> str:
        """Rules call the ``specsnap`` CLI installed beside this interpreter, activated or not, in
        this project."""
        return f'export PATH="{Path(sys.executable).parent}:$PATH" SPECSNAP_ROOT="{self.root}"; '

    # Real repositories: each planned source and environment (cached once per pin under
    # results/_cache, shared by every run), by its cache key -> the plan file its rule reads.
    @cached_property
    def source_plans(self) -> dict[str, str]:
        return {Path(c["source"]).parent.name: self.layout.repo_file(c["workload"])
                for c in self.cells.values() if c["source"]}

    @cached_property
    def env_plans(self) -> dict[str, str]:
        return {Path(c["environment"]).parent.name: self.layout.repo_file(c["workload"])
                for c in self.cells.values() if c["environment"]}

    # The docker backend's images the trials run in (containers/<name>/), by name and context
    # digest. Sessions run in one (the agent's), scoring in another (the workload's); a generated
    # env-<workload> image carries the repository's environment, so its build takes the
    # environment's record.
    @cached_property
    def image_records(self) -> set[str]:
        return {c[k] for c in self.cells.values() for k in ("image", "score_image") if c.get(k)}

    @cached_property
    def images(self) -> list[str]:
        return sorted({Path(r).parent.name for r in self.image_records})

    @cached_property
    def image_digests(self) -> list[str]:
        return sorted({Path(r).stem for r in self.image_records})

    @cached_property
    def calls_api(self) -> bool:
        """Whether some session (or summary) of the plan calls a model's API (``api`` or
        ``successor_api``): only then are the api_<provider> resources declared."""
        return any(row.get(col) not in (None, "", "none") for row in self.cells.values()
                   for col in ("api", "successor_api"))

    @cached_property
    def image_needs(self) -> dict[str, str]:
        """An image's record -> the repository environment its build copies in."""
        return {c["score_image"]: c["environment"] for c in self.cells.values()
                if c.get("score_image") and c["environment"] and Path(c["score_image"]).parent.name.startswith("env-")}


def start_run(workflow: Any, config: dict[str, Any], argv: Sequence[str] | None = None) -> Run:
    """Start a pipeline run from the Snakefile: ``workflow`` and ``config`` are Snakemake's (the
    config is checked and given the schema's defaults in place); ``argv`` is the command line
    (``sys.argv`` by default), read only to tell whether this invocation runs jobs."""
    gc.set_threshold(*GC_THRESHOLDS)
    main = workflow.is_main_process
    try:
        # The project is the checkout this Snakefile is in (never the one the package was
        # installed from): every job, local or on a cluster node, reads conf/ and tiers/ from here
        # (or, for a job on a cluster without a shared file system given only the workflow's
        # sources, from the copy of the same checkout its job image carries: containers/job/).
        root = workflow_project(Path(workflow.main_snakefile).parent, main)
        # A misspelt key (`--config stduy=smoke`) or `overrides` given as one string is one line
        # naming the valid choices, before Snakemake's schema check (a page of JSON schema).
        check_run_config(config, root / CONFIG_SCHEMA)
    except SpecSnapError as exc:
        stop(exc)
    from snakemake.utils import validate

    validate(config, schema=str(root / CONFIG_SCHEMA))  # (and the schema's defaults, in place)
    try:
        subset = (Subset(config["rerun_of"], float(config["rerun_share"]), int(config["rerun_seed"]))
                  if config.get("rerun_of") else None)
        name = run_name(config["study"], list(config["overrides"]),
                        config.get("name") or (subset.default_name if subset else None))
    except SpecSnapError as exc:
        stop(exc)
    in_storage = workflow.storage_settings.default_storage_provider is not None
    run = Run(root=root, study=config["study"], results=config["results"], name=name, subset=subset,
              in_storage=in_storage, cells={})
    if main:
        _prepare(run, config, runs_no_job(workflow, argv))
    return replace(run, cells=_cells(run, main))


def _prepare(run: Run, config: dict[str, Any], no_job: bool) -> None:
    """The main process's part: plan, bytecode, budget. Compose conf/ once, in the main process
    only: cluster and remote jobs re-parse the Snakefile and must read the plan this run started
    with, never compose (or see a config edited mid-run). Planning takes the run directory's run
    lock first: a second run of the same directory writes nothing (and is refused if its plan
    differs)."""
    try:
        # Composes only when the plan on disk is not current (plan.inputs.json), so a no-op rerun
        # costs no composition, while an edit of conf/ or tiers/ replans.
        ensure_plan(run.study, list(config["overrides"]), Path(run.results), config.get("name") or None,
                    subset=run.subset)
        if not no_job:  # every job imports the package: its bytecode is written once, here
            from sdcs_bench.core.bytecode import compile_package

            compile_package()
        # The run's budget (docs/cost.md): the planned one with this command line's over it; when
        # it was raised, the trials a smaller one stopped are opened again (their stopped session
        # reruns). An invocation that runs no job changes no budget and moves nothing.
        from sdcs_bench.pipeline.budgets import apply_budget

        limits = {"max_usd": config.get("budget_max_usd"), "trial_max_usd": config.get("budget_trial_max_usd"),
                  "price_replay": config.get("budget_price_replay")}
        for line in apply_budget(Path(run.dir), limits, no_job, shared=not run.in_storage):
            print(f"specsnap: {line}", file=sys.stderr)
    except SpecSnapError as exc:
        stop(exc)
    except OSError as exc:
        from sdcs_bench.core.fsutil import disk_error_message

        stop(disk_error_message(exc) or exc)


def _cells(run: Run, main: bool) -> dict[str, dict[str, str]]:
    """The plan's cells table, by trial. Without a shared file system (a default storage provider,
    e.g. S3 on Kubernetes) every file goes through the storage: the plan the main process wrote is
    published there by the local rule publish_plan, and a job is handed the cells table in an
    environment variable (which the main process sets here; the Snakefile declares it in
    ``envvars:``)."""
    if run.in_storage and not main:
        if CELLS_VAR not in os.environ:
            stop(f"{CELLS_VAR} is not set: this job was not started by a SpecSnap run")
        rows = unpack_cells(os.environ[CELLS_VAR])
    else:
        rows = read_cells(Path(run.layout.cells))
    if run.in_storage and main:
        try:
            os.environ[CELLS_VAR] = pack_cells(Path(run.layout.cells))
        except SpecSnapError as exc:
            stop(exc)
    return {row["trial"]: row for row in rows}
