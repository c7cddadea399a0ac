"""A study's runs: ``plan``, ``power``, ``rerun``, ``stability``, ``estimate``, ``aggregate``,
``leaderboard`` and ``report``."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from sdcs_bench.cli._common import ResultsOpt, _writing
from sdcs_bench.core.errors import SpecSnapError

commands = typer.Typer()

RUN_HELP = "a directory under --results (a study's name, <study>+<digest>, or a --name)"
# A run is named --run (--study, its older name, is still accepted); --study names a study of conf/study/.
AggregateRunOpt = Annotated[str, typer.Option("--run", "--study", help=f"the run to aggregate: {RUN_HELP}")]
ReportRunOpt = Annotated[str, typer.Option("--run", "--study", help=f"the run to report: {RUN_HELP}")]
ShownRunOpt = Annotated[str, typer.Option("--run", "--study", help=f"the local run to show: {RUN_HELP}")]
RunDirOpt = Annotated[Optional[Path], typer.Option("--run-dir", "--study-dir", help="the run's directory (instead "
                                                   "of --results/--run)")]


class Format(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"
    csv = "csv"


@commands.command("plan")
def plan(
    study: Annotated[str, typer.Option("--study", help="a study in conf/study/")] = "smoke",
    override: Annotated[Optional[list[str]], typer.Option("--override", help="Hydra override (repeatable)")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="the run's directory under --results (default: the "
                                                "study, or <study>+<digest> with overrides)")] = None,
    results: ResultsOpt = Path("results"),
) -> None:
    """Compose conf/ once into results/<run>/plan/ (cells.tsv + one config per trial)."""
    from sdcs_bench.pipeline.plan import make_plan, write_plan

    from sdcs_bench.core.progress import progress

    from sdcs_bench.core.errors import skipped_line

    with progress(f"composing study {study}", echo_steps=False) as step:
        p = make_plan(study, override or [], results, name, progress=step)
    for record in p.not_applicable:  # (workload, arm) cells whose arm lacks its workload file, one line each
        print(skipped_line(record), file=sys.stderr)
    _writing(p.run_dir)
    with progress(f"writing {len(p.trials)} trial files", total=len(p.trials), echo_steps=False) as step:
        changed = write_plan(p, progress=step)
    skipped = f", {len(p.not_applicable)} (workload, arm) skipped" if p.not_applicable else ""
    print(f"study {study}: {len(p.trials)} trials planned in {p.directory}, {len(changed)} changed{skipped}",
          file=sys.stderr)


@commands.command("power")
def power(
    delta: Annotated[float, typer.Option("--delta", help="the smallest difference worth detecting (requirements "
                                                         "for net; a share for full_marks)")],
    metric: Annotated[str, typer.Option("--metric", help="net (requirements) or full_marks (share of trials)")] = "net",
    from_run: Annotated[Optional[str], typer.Option("--from", help="a finished run to plan from (a pilot): its "
                                                                   "paired differences")] = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline", "--baseline-rate",
                                                    help="full_marks without a pilot: the baseline rate (0.5), or a "
                                                         "published count (19/404: its Wilson interval gives a range)")] = None,
    sd: Annotated[Optional[float], typer.Option("--sd", help="net without a pilot: the SD of the paired "
                                                            "differences")] = None,
    target: Annotated[float, typer.Option("--power", help="the chance of detecting it")] = 0.8,
    level: Annotated[float, typer.Option("--level", help="1 - the two-sided test's level (0.95: 5%)")] = 0.95,
    study: Annotated[Optional[str], typer.Option("--study", help="a study (see `specsnap list studies`): also print "
                                                               "what that many trials per cell of it would cost")] = None,
    override: Annotated[Optional[list[str]], typer.Option("--override", help="a Hydra override of --study, as for "
                                                                         "plan")] = None,
    results: ResultsOpt = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """How many trials per cell detect a difference of --delta with SpecSnap's sign-flip test, and
    every assumption that answer rests on (docs/statistics.md#how-many-seeds). With --study, what that
    many trials per cell of the study would cost, priced per trial as `specsnap estimate` does (the
    --from run's trials where it has a paid model's; reference policies and replays cost $0)."""
    from sdcs_bench.pipeline.power import power_report, study_cost

    if override and not study:
        raise SpecSnapError("--override changes the study to price: name it with --study")
    run_dir = _run_dir(results, from_run) if from_run else None
    report = power_report(delta, metric=metric, target=target, level=level, baseline=baseline, sd=sd, run_dir=run_dir)
    if study:
        study_cost(report, study, override or [], run_dir, results)
    print(json.dumps(report.to_dict(), indent=2) if as_json else "\n".join(report.lines()))


@commands.command("rerun")
def rerun(
    from_run: Annotated[str, typer.Option("--from", help="the finished run to repeat part of")],
    share: Annotated[float, typer.Option("--share", help="the share of its cells (leaderboard rows) to repeat")] = 0.25,
    seed: Annotated[int, typer.Option("--seed", help="the seed that chooses the cells")] = 0,
    name: Annotated[Optional[str], typer.Option("--name", help="the batch's run (default <run>.rerun-s<seed>)")] = None,
    cores: Annotated[int, typer.Option("--cores", min=1, help="Snakemake's --cores")] = 2,
    results: ResultsOpt = Path("results"),
) -> None:
    """Run a random share of a finished run's cells again, the same trials and seeds, as a batch of its
    own, then print the run-to-run disagreement (docs/statistics.md#run-to-run-stability)."""
    import subprocess

    from sdcs_bench.core.paths import project_root
    from sdcs_bench.pipeline import stability
    from sdcs_bench.pipeline.plan import STUDY_FILE

    first = _run_dir(results, from_run)
    try:
        ident = json.loads((first / "plan" / STUDY_FILE).read_text())
    except (OSError, ValueError):
        raise SpecSnapError(f"{first}: no planned run to repeat (plan/{STUDY_FILE})") from None
    subset = stability.Subset(from_run, share, seed)
    batch = name or subset.default_name
    overrides = "[" + ",".join(json.dumps(o) for o in ident.get("overrides") or []) + "]"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(project_root() / "Snakefile"), "--cores", str(cores),
           "--config", f"study={ident['study']}", f"overrides={overrides}", f"name={batch}", f"results={results}",
           f"rerun_of={from_run}", f"rerun_share={share}", f"rerun_seed={seed}"]
    print(f"specsnap: running {share:.0%} of {from_run}'s cells again as run {batch}", file=sys.stderr, flush=True)
    if subprocess.run(cmd).returncode != 0:
        raise SpecSnapError(f"the batch {batch} did not finish (Snakemake's messages above); run the same command to "
                            "resume it")
    result = stability.compare(first, results / batch)
    stability.write(result, results / batch)
    print("\n".join(stability.lines(result)))


@commands.command("stability")
def stability_command(
    first: Annotated[str, typer.Argument(help="the finished run")],
    second: Annotated[str, typer.Argument(help="the batch that repeated some of its trials")],
    results: ResultsOpt = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="print the comparison as JSON")] = False,
) -> None:
    """The run-to-run disagreement of the trials two runs share: on full marks and on net
    (docs/statistics.md#run-to-run-stability); written to <second>/stability.json."""
    from sdcs_bench.pipeline import stability

    result = stability.compare(_run_dir(results, first), _run_dir(results, second))
    stability.write(result, results / second)
    print(json.dumps(result, indent=2) if as_json else "\n".join(stability.lines(result)))


@commands.command("estimate")
def estimate(
    study: Annotated[str, typer.Option("--study", help="the study to estimate (see `specsnap list studies`)")] = "smoke",
    override: Annotated[Optional[list[str]], typer.Option("--override", help="a Hydra override, as for plan")] = None,
    pilot: Annotated[Optional[str], typer.Option("--pilot", help="a finished run whose trials to estimate from (their "
                                                                 "split of input, cache and output, and their range)")] = None,
    results: ResultsOpt = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="print the estimate as JSON")] = False,
) -> None:
    """Trials, sessions, tokens and dollars (with a low-high range) per agent for a planned study; per
    workload, what one trial spends and the basis of that figure (docs/cost.md#before-a-run-specsnap-estimate).
    Reference policies and replays cost $0: nothing is paid."""
    from sdcs_bench.pipeline import estimate as est

    found, _ = est.estimate(study, override or [], _run_dir(results, pilot) if pilot else None, results)
    if as_json:
        print(json.dumps([e.to_dict() for e in found], indent=2))
    else:
        print("\n".join(est.lines(found, study)))


@commands.command("aggregate")
def aggregate(
    run: AggregateRunOpt = "smoke",
    results: ResultsOpt = Path("results"),
    run_dir: RunDirOpt = None,
) -> None:
    """Collect a study's scorecards into scorecards.csv, ledger.csv and leaderboard.{csv,md,json}."""
    from sdcs_bench.pipeline.aggregate import aggregate as collect

    where = _writing(run_dir or results / run)
    board = collect(where)
    print(f"{where}: leaderboard with {len(board)} rows", file=sys.stderr)
    from sdcs_bench.pipeline.layout import RunLayout

    for check in json.loads(Path(RunLayout(str(where)).leaderboard("json")).read_text()).get("truth_checks", []):
        print(check["line"], file=sys.stderr)


def _run_dir(results: Path, run: str) -> Path:
    """``results/<run>``; a name that is not there while other runs are is refused, naming them
    (with no runs at all, the caller says there is nothing local yet)."""
    where = results / run
    runs = sorted(p.parent.name for p in results.glob("*/leaderboard.json"))
    if not where.is_dir() and runs:
        raise SpecSnapError(f"no run '{run}' under {results}", runs)
    return where


@commands.command("leaderboard")
def leaderboard(
    format: Annotated[Format, typer.Option("--format", help="table (fits the terminal), markdown, json "
                                                   "(checked against data/leaderboard.schema.json) or csv")] = Format.table,
    run: ShownRunOpt = "smoke",
    results: ResultsOpt = Path("results"),
    published: Annotated[bool, typer.Option("--published", help="every published table of the source studies, not "
                                                                "only those of the run's workload families (json "
                                                                "always has every one)")] = False,
) -> None:
    """Print a run's local results beside the published tables (labelled as such) of its workload
    families; --published: every published table."""
    from sdcs_bench.pipeline import leaderboard as lb

    run_dir = _run_dir(results, run)
    if format is Format.json:
        print(lb.as_json(run_dir))
    elif format is Format.markdown:
        print(lb.as_markdown(run_dir, all_published=published))
    elif format is Format.csv:
        print(lb.as_csv(run_dir, all_published=published), end="")
    else:
        lb.print_table(run_dir, all_published=published)


@commands.command("report")
def report(
    run: ReportRunOpt = "smoke",
    results: ResultsOpt = Path("results"),
    run_dir: RunDirOpt = None,
) -> None:
    """Write the study's static HTML report (report/index.html, a page per trial) from its aggregate."""
    from sdcs_bench.core.progress import progress
    from sdcs_bench.pipeline.plan import read_cells
    from sdcs_bench.pipeline.report import write_report

    where = _writing(run_dir or _run_dir(results, run))
    cells = where / "plan" / "cells.tsv"
    if not (where / "leaderboard.json").is_file() or not cells.is_file():
        raise SpecSnapError(f"{where}: no aggregated study here (plan/cells.tsv and leaderboard.json); run "
                            "`snakemake --cores 2 --config study=<study>` or `specsnap aggregate` first")
    with progress("writing trial pages", total=len(read_cells(cells)), echo_steps=False) as step:
        index = write_report(where, progress=lambda _trial: step())
    print(f"{index}: open it in a browser (no server needed)", file=sys.stderr)
