"""The ``specsnap`` command line (``python -m sdcs_bench.cli`` is the same)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench import jobs

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

_writing = jobs.writing


@app.callback()
def _options(
    root: Annotated[Optional[Path], typer.Option("--root", help="the SpecSnap project to use (default: the "
                                                 "working directory or its nearest parent holding tiers/ and workflow/schemas/)")] = None,
    log: Annotated[Optional[Path], typer.Option("--log", help="write all output to this file; errors are "
                                                "also said on the terminal")] = None,
) -> None:
    """SpecSnap: what survives when a coding agent's session is cut off mid-task."""
    from sdcs_bench.core.paths import use_project

    if root is not None:
        use_project(root)
    if log is not None:
        jobs.redirect_to(log)


TierOpt = Annotated[Optional[int], typer.Option("--tier", help="shorthand for --workload tier_N")]
WorkloadOpt = Annotated[Optional[str], typer.Option("--workload", help="workload id (see `specsnap list workloads`)")]
BackendOpt = Annotated[str, typer.Option("--backend", help="sandbox backend: auto, bwrap, docker or local")]
ResultsOpt = Annotated[Path, typer.Option("--results", help="results directory")]
RUN_HELP = "a directory under --results (a study's name, <study>+<digest>, or a --name)"
AggregateRunOpt = Annotated[str, typer.Option("--study", help=f"the run to aggregate: {RUN_HELP}")]
ReportRunOpt = Annotated[str, typer.Option("--study", help=f"the run to report: {RUN_HELP}")]
ShownRunOpt = Annotated[str, typer.Option("--study", help=f"the local run to show: {RUN_HELP}")]
StudyDirOpt = Annotated[Optional[Path], typer.Option("--study-dir", help="the study's directory (instead of "
                                                     "--results/--study)")]


class Listable(str, Enum):
    workloads = "workloads"
    arms = "arms"
    agents = "agents"
    variants = "variants"
    studies = "studies"


class Format(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"
    csv = "csv"


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


@app.command("list")
def list_(what: Annotated[Listable, typer.Argument(help="what to list")]) -> None:
    """List the workloads, arms, agents, variants or studies that conf/ defines."""
    from rich.table import Table

    from sdcs_bench.trial import config
    from sdcs_bench.agents import agent_kind
    from sdcs_bench.pipeline.plan.grid import grid_size

    group = {"workloads": "workload", "arms": "arm", "agents": "agent", "variants": "variant", "studies": "study"}[what.value]
    # Each group's second column: what tells its entries apart at a glance.
    column, facet = {
        "agent": ("kind", lambda name, cfg: agent_kind(cfg)),
        "workload": ("family", lambda name, cfg: cfg["family"]),
        "arm": ("notes file", lambda name, cfg: cfg.get("notes_file") or "-"),
        "variant": ("sets", lambda name, cfg: ", ".join(k for k in cfg if k not in ("name", "description")) or "-"),
        "study": ("trials", lambda name, cfg: str(grid_size(cfg.get("grid") or {}))),  # as many as make_plan makes
    }[group]
    table = Table(title=what.value)
    if group == "variant":  # a handoff is not a variant: it is said where a reader of variants looks
        from rich.markup import escape

        table.caption = escape("Who continues is the grid axis `successor`, not a variant: every session after the "
                         "first is run by that agent (any of `specsnap list agents`; default `same`), e.g. "
                         "'overrides=[\"successor=[ref_null]\"]' (docs/protocol.md#handoff).")
    table.add_column("name")
    table.add_column(column)
    table.add_column("description")
    for name in config.options(group):
        try:
            cfg = _listed(group, name)
            shown = facet(name, cfg)
        except SpecSnapError as exc:  # one broken file is shown as such; the others are still listed
            table.add_row(name, "", f"[red]unreadable: {exc}[/]")
            continue
        table.add_row(name, shown, " ".join(str(cfg.get("description", "")).split()))
    _console().print(table)


def _listed(group: str, name: str) -> dict:
    """What ``specsnap list`` shows of one entry: its config, and for a workload (whose registry
    entry is only where it lives) its own title, description and family."""
    from sdcs_bench.trial import config

    cfg = config.entity(group, name)
    if group == "workload":
        from sdcs_bench.trial.workload import load_workload

        wl = load_workload(name)
        return {**cfg, "family": wl.family, "description": f"{wl.title}: {wl.description}" if wl.title else wl.description}
    return cfg


@app.command("validate-workload")
def validate_workload(
    workload: Annotated[str, typer.Argument(help="workload id, e.g. tier_2 or click")],
    backend: BackendOpt = "auto",
    results: ResultsOpt = Path("results"),
) -> None:
    """Check a workload as docs/protocol.md describes: baseline, gold (full and per requirement), data."""
    from sdcs_bench.sandbox import make_backend
    from rich.markup import escape

    from sdcs_bench.pipeline.validate import validate_workload as run

    from sdcs_bench.core.progress import progress

    wl = _workload(workload, None, results)
    console = _console()
    with progress(f"validating {wl.id}") as step:
        checks = run(wl, make_backend(backend), progress=lambda msg: step(description=f"{wl.id}: checking {msg}"))
    if checks.failures:
        for failure in checks.failures:
            console.print("[red]FAIL[/]", escape(failure))
        console.print(f"workload {wl.id}: {len(checks.failures)} check(s) failed, {checks.passed} passed")
        raise typer.Exit(1)
    console.print(f"workload {wl.id}: all {checks.passed} checks passed")


@app.command("scaffold-sandbox")
def scaffold_sandbox(
    arm: Annotated[Optional[str], typer.Option("--arm", help="arm (see `specsnap list arms`)")] = None,
    dest: Annotated[Optional[Path], typer.Option("--dest", help="new directory for the sandbox")] = None,
    tier: TierOpt = None,
    workload: WorkloadOpt = None,
    trial: Annotated[Optional[Path], typer.Option("--trial", help="pipeline: a trial config from `plan`")] = None,
    stage_dir: Annotated[Optional[Path], typer.Option("--stage-dir", help="pipeline: the stage's output dir")] = None,
    results: ResultsOpt = Path("results"),
    variant: Annotated[str, typer.Option("--variant", help="variant (see `specsnap list variants`; parts may be "
                                         "joined by +); it arranges the baseline of a standards workload")] = "none",
) -> None:
    """Create a clean, git-initialised sandbox: the workload's baseline plus the arm's files."""
    if trial is not None:
        jobs.scaffold(trial, _need(stage_dir, "--stage-dir"))
        return
    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm
    from sdcs_bench.sandbox.scaffold import scaffold

    _outside_any_sandbox(_need(dest, "--dest"))
    wl = _workload(workload, tier, results)
    arm_obj = Arm.from_config(config.entity("arm", _need(arm, "--arm", config.options("arm"))))
    meta = scaffold(wl, arm_obj, dest, config.entity("variant", variant))
    layout = f", layout {meta['standards_layout']}" if meta.get("standards_layout") else ""
    _console().print(f"sandbox for {wl.id} + {arm_obj.name} at {dest} (baseline commit {meta['baseline_commit'][:12]}"
                     f"{layout})")


def _record_by_hand(card: dict, run_dir: Path, sandbox: Path, *, agent: str, model: str | None,
                    harness: str | None, variant: str, seed: int) -> dict:
    """Write a by-hand trial's scorecard into ``run_dir/by_hand/<trial>/`` with the labels the
    leaderboard groups by, then aggregate and report the run (when its planned trials are all
    scored; else the next aggregate picks it up)."""
    from sdcs_bench.pipeline.aggregate import aggregate as run_aggregate
    from sdcs_bench.pipeline.layout import StudyLayout
    from sdcs_bench.pipeline.report import write_report
    from sdcs_bench.trial.spec import BY_HAND_KIND

    layout = StudyLayout(str(run_dir))
    stem = f"{card['workload']}__{card['arm']}__{agent}__{variant}__s{seed}-by-hand"
    n = 1
    while Path(layout.by_hand_card(f"{stem}{n}")).exists():
        n += 1
    trial = f"{stem}{n}"
    card = {"trial": trial, "study": run_dir.name, "run": run_dir.name, "agent": agent, "agent_kind": BY_HAND_KIND,
            "harness": harness, "model": model, "variant": variant, "seed": seed, **card,
            "by_hand": {"sandbox": str(Path(sandbox).resolve()), "tokens_source": card["tokens"]["source"]}}
    from sdcs_bench.core.fsutil import atomic_write

    atomic_write(Path(layout.by_hand_card(trial)), json.dumps(card, indent=2))
    try:
        run_aggregate(run_dir)
        write_report(run_dir)
        _console().print(f"recorded as {trial} in {run_dir} (leaderboard and report updated)", markup=False)
    except (OSError, ValueError, KeyError) as exc:  # a planned study still running: aggregate later
        _console().print(f"recorded as {trial} in {run_dir}; its leaderboard is not updated yet ({exc}): run "
                         f"`specsnap aggregate --study {run_dir.name}` once its trials are scored", markup=False)
    return card


def _outside_any_sandbox(dest: Path) -> None:
    """A sandbox inside another one would be part of that one's working tree (and its agent's)."""
    from sdcs_bench.sandbox.records import META

    for parent in Path(dest).resolve().parents:
        if (parent / META).is_file():
            raise SpecSnapError(f"--dest {dest} lies inside the sandbox {parent}; choose a new directory outside it")


def _need(value, flag: str, choices=None):
    if value is None:
        raise SpecSnapError(f"{flag} is required", choices)
    return value


@app.command("inject-poison-pill")
def inject_poison_pill(
    sandbox: Annotated[Optional[Path], typer.Option("--sandbox", help="a sandbox after session 1")] = None,
    version: Annotated[str, typer.Option("--version", help="v1 (marked), v2 (unmarked), v3 (amended into HEAD)")] = "v1",
    tier: TierOpt = None,
    workload: WorkloadOpt = None,
    trial: Annotated[Optional[Path], typer.Option("--trial", help="pipeline: a trial config from `plan`")] = None,
    from_stage: Annotated[Optional[Path], typer.Option("--from", help="pipeline: the previous stage's directory")] = None,
    stage_dir: Annotated[Optional[Path], typer.Option("--stage-dir", help="pipeline: the stage's output dir")] = None,
) -> None:
    """Plant the workload's defects between two sessions (tier 2: a one-cent tax error above 2,500
    cents and a forbidden rbac.audit import), next to whatever session 1 left uncommitted."""
    if trial is not None:
        jobs.inject(trial, _need(from_stage, "--from"), _need(stage_dir, "--stage-dir"))
        return
    from sdcs_bench.sandbox.poison import inject, record_path

    target = _need(sandbox, "--sandbox")
    wl = _workload(workload, tier)
    record = inject(wl, target, version)
    record_path(target).write_text(json.dumps(record, indent=2))
    _console().print(f"planted {', '.join(d['id'] for d in record['defects'])} ({version}) in {target}; "
                     f"record: {record_path(target)} (outside the sandbox)")


@app.command("inject")
def inject_command(
    trial: Annotated[Path, typer.Option("--trial", help="a trial config from `plan`")],
    from_stage: Annotated[Path, typer.Option("--from", help="the previous stage's directory")],
    stage_dir: Annotated[Path, typer.Option("--stage-dir", help="this stage's output directory")],
) -> None:
    """Pipeline: the variant's inject stage between two sessions (a poison pill, or withholding a
    coherence workload's facts: docs/coherence.md)."""
    jobs.inject(trial, from_stage, stage_dir)


@app.command("handoff")
def handoff_command(
    trial: Annotated[Path, typer.Option("--trial", help="a trial config from `plan`")],
    session: Annotated[int, typer.Option("--session", min=2, help="the session it hands over to (2 or more)")],
    from_stage: Annotated[Path, typer.Option("--from", help="the previous stage's directory")],
    stage_dir: Annotated[Path, typer.Option("--stage-dir", help="this stage's output directory")],
    session_stage: Annotated[Optional[list[Path]], typer.Option(
        "--session-stage", help="an earlier session's stage directory (each of 1 .. k-1, in order)")] = None,
) -> None:
    """Pipeline: the handoff before session k in a continuation mode (docs/protocol.md#continuation-modes):
    a trace or summary for the next prompt, or the harness's own state for its next HOME."""
    jobs.handoff(trial, session, from_stage, stage_dir, session_stage)


@app.command("run-session")
def run_session_command(
    trial: Annotated[Path, typer.Option("--trial", help="a trial config from `plan`")],
    session: Annotated[int, typer.Option("--session", min=1, help="1-based session number")],
    from_stage: Annotated[Path, typer.Option("--from", help="the previous stage's directory")],
    stage_dir: Annotated[Path, typer.Option("--stage-dir", help="this stage's output directory")],
) -> None:
    """Pipeline: run one session of a trial from its predecessor's snapshot."""
    jobs.session(trial, session, from_stage, stage_dir)


@app.command("score")
def score(
    trial: Annotated[Path, typer.Option("--trial", help="a trial config from `plan`")],
    from_stage: Annotated[Path, typer.Option("--from", help="the last session's stage directory")],
    stage_dir: Annotated[Path, typer.Option("--stage-dir", help="this stage's output directory")],
    session_record: Annotated[Optional[list[Path]], typer.Option(
        "--session-record", help="each session's stage.json, in order (default: found in the trial's layout)")] = None,
    injection: Annotated[Optional[Path], typer.Option(
        "--injection", help="the inject stage's stage.json (poison-pill variants)")] = None,
    handoff_record: Annotated[Optional[list[Path]], typer.Option(
        "--handoff-record", help="each handoff's stage.json, in order (a continuation mode; default: the layout's)")] = None,
) -> None:
    """Pipeline: score a trial's final snapshot."""
    jobs.score(trial, from_stage, stage_dir, session_record, injection, handoff_record)


@app.command("evaluate-sandbox")
def evaluate_sandbox(
    sandbox: Annotated[Path, typer.Option("--sandbox", help="a sandbox made by scaffold-sandbox")],
    tokens: Annotated[int, typer.Option("--tokens", min=0, help="total tokens all sessions spent")] = 0,
    ledger: Annotated[Optional[list[Path]], typer.Option("--ledger", help="proxy ledger(s) from `specsnap proxy` "
                                                         "(one per session): tokens counted by the proxy")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json-out", help="write the scorecard here")] = None,
    tier: TierOpt = None,
    workload: WorkloadOpt = None,
    backend: BackendOpt = "auto",
    results: ResultsOpt = Path("results"),
    run: Annotated[Optional[str], typer.Option("--run", help="record the trial into this run (a directory under "
                                               "--results; made if new), so its leaderboard and report show it, "
                                               "labelled by hand")] = None,
    agent: Annotated[Optional[str], typer.Option("--agent", help="with --run: the agent's name on the leaderboard")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="with --run: the model it used")] = None,
    harness: Annotated[Optional[str], typer.Option("--harness", help="with --run: the harness it ran in")] = None,
    variant: Annotated[str, typer.Option("--variant", help="with --run: the variant you followed")] = "none",
    seed: Annotated[int, typer.Option("--seed", min=0, help="with --run: the seed")] = 0,
) -> None:
    """Score any sandbox, including one a person ran their own agent in by hand; with --run, record
    it into a run beside the pipeline's trials (then aggregate and report that run)."""
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.records import sandbox_meta
    from sdcs_bench.scoring import score_sandbox
    from sdcs_bench.core.tokens import TokenUsage

    if run is not None:
        from sdcs_bench.pipeline.plan import run_name
        from sdcs_bench.trial import config

        run_name("by_hand", [], run)  # a run name with a path in it is refused here, before any work
        if not agent:
            raise SpecSnapError("--run needs --agent: the name the leaderboard shows the trial under")
        config.check_option("variant", variant)
    elif agent or model or harness:
        raise SpecSnapError("--agent, --model and --harness label a trial recorded with --run; give --run NAME")
    wl = _workload(workload, tier, results)
    meta = sandbox_meta(sandbox)
    if meta.get("workload") != wl.id:
        raise SpecSnapError(f"{sandbox} was scaffolded for workload {meta.get('workload')!r}, not {wl.id!r}")
    if ledger and tokens:
        raise SpecSnapError("give either --tokens (a hand-reported total) or --ledger (proxy-counted), not both")
    if ledger:
        from sdcs_bench.proxy import ledger_totals, read_ledger

        missing = [str(p) for p in ledger if not p.is_file()]
        if missing:
            raise SpecSnapError(f"ledger file(s) not found: {', '.join(missing)}")
        usage = ledger_totals([row for p in ledger for row in read_ledger(p)])
    else:
        usage = TokenUsage.reported(tokens)
    from sdcs_bench.sandbox.poison import record_path

    injection = json.loads(record_path(sandbox).read_text()) if record_path(sandbox).is_file() else None
    card = score_sandbox(wl, sandbox, tokens=usage, backend=make_backend(backend), injection=injection)
    if run is not None:
        card = _record_by_hand(card, results / run, sandbox, agent=agent, model=model, harness=harness,
                               variant=variant, seed=seed)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(card, indent=2))
    n = card["n_requirements"]
    _console().print(
        f"{wl.id} / {card['arm']}: raw {card['raw']}/{n}, net {card['net']}/{n}, TES {card['tes']}, "
        f"baseline_ok {card['baseline_ok']}, protected_ok {card['protected_ok']}, violations {card['violations']}"
    )
    if card.get("poison"):
        survived = [d for d, alive in card["poison"]["survived"].items() if alive]
        _console().print(f"poison pill {card['poison']['version']}: survived {', '.join(survived) or 'none'}")
    if card.get("standards"):
        st = card["standards"]
        shown = ", ".join(f"{k} {v}" for k, v in st["follows"].items() if v)
        _console().print(f"standards {st['layout_name']}: {st['decisions']} decisions, {st['better']} written the "
                         f"better way (share {st['better_share']}); follows: {shown}")


@app.command("fetch-source")
def fetch_source_command(
    workload: Annotated[Optional[str], typer.Argument(help="a real repository workload, e.g. click")] = None,
    results: ResultsOpt = Path("results"),
    repo_plan: Annotated[Optional[Path], typer.Option("--repo-plan", help="pipeline: plan/repos/<workload>.json")] = None,
) -> None:
    """Download a real repository's pinned source once (its SHA-256 checked) into results/_cache/sources/."""
    from sdcs_bench.pipeline.repos import fetch_planned_source

    planned, where = _repo_plan(workload, results, repo_plan)
    record = fetch_planned_source(planned, where)
    _console().print(f"{where}: {record['archive']} ({record['bytes']} bytes, sha256 {record['sha256'][:12]}…) "
                     f"unpacked in {planned['source_dir']}")


@app.command("add-repository")
def add_repository_command(
    name: Annotated[str, typer.Argument(help="the new workload's id, e.g. attrs")],
    pypi: Annotated[Optional[str], typer.Option("--pypi", help="a PyPI release: PACKAGE==VERSION")] = None,
    git: Annotated[Optional[str], typer.Option("--git", help="a git repository's URL (with --commit)")] = None,
    commit: Annotated[Optional[str], typer.Option("--commit", help="the full 40-digit commit id to pin")] = None,
    python: Annotated[str, typer.Option("--python", help="the repository's Python, major.minor")] = "%d.%d" % sys.version_info[:2],
    test_dep: Annotated[Optional[list[str]], typer.Option("--test-dep", help="a requirement its tests need "
                                                          "(repeat; default: pytest)")] = None,
    results: ResultsOpt = Path("results"),
    backend: BackendOpt = "auto",
) -> None:
    """Add a real repository: pin and fetch it, build its environment, run its own suite once on the
    pin and write the workload's skeleton with the baseline selection (docs/real_repos.md). What is
    left to write: each bug's entry in bugs.yaml, its hidden test and its fix."""
    from sdcs_bench.pipeline.add_repo import add_repository, parse_pin
    from sdcs_bench.sandbox import make_backend

    pin = parse_pin(pypi, git, commit)
    made = add_repository(name, pin, python=python, test_deps=list(test_dep or ["pytest"]), results=results,
                          backend=make_backend(backend), say=lambda line: _console().print(line, markup=False))
    _console().print(f"wrote {made['workload_dir']} and {made['registry']}: {made['baseline']} baseline tests, "
                     f"{made['excluded']} left out with their reasons. Next: each bug's entry in bugs.yaml, its "
                     f"hidden test under hidden/tests/ and its fix under fixes/, then "
                     f"`specsnap validate-workload {name}`", markup=False)


@app.command("build-env")
def build_env_command(
    workload: Annotated[Optional[str], typer.Argument(help="a real repository workload, e.g. click")] = None,
    results: ResultsOpt = Path("results"),
    repo_plan: Annotated[Optional[Path], typer.Option("--repo-plan", help="pipeline: plan/repos/<workload>.json")] = None,
) -> None:
    """Build a real repository's own environment (its Python and pinned test dependencies) once."""
    from sdcs_bench.pipeline.repos import build_planned_environment

    planned, where = _repo_plan(workload, results, repo_plan)
    record = build_planned_environment(planned, where)
    _console().print(f"{where}: Python {record['interpreter']['version']} ({record['interpreter']['found_by']}: "
                     f"{record['interpreter']['path']}), {len(record['freeze'])} packages, in {planned['environment_dir']}")


@app.command("build-image")
def build_image_command(
    name: Annotated[str, typer.Argument(help="an image of containers/images.yaml, e.g. base, env-click, "
                                                 "harness-claude_code")] = "base",
    results: ResultsOpt = Path("results"),
    record: Annotated[Optional[Path], typer.Option("--record", help="where to write the image record "
                                                   "(default: results/_cache/images/<name>/<digest>.json)")] = None,
) -> None:
    """Build a docker sandbox image (containers/<name>/, or a generated env-<workload> or
    harness-<name>) without any image registry, once."""
    from sdcs_bench.pipeline.images import carried as carried_by
    from sdcs_bench.pipeline.layout import CacheLayout
    from sdcs_bench.sandbox.images import build_image, image_digest

    carried = carried_by(name, results)  # None for a catalogue image (or an unknown name, which
    digest = image_digest(name, carried)  # image_digest names in one line with the images there are)
    if record is not None and record.stem != digest[:12]:
        raise SpecSnapError(f"containers/{name}/ changed after this run was planned (its digest is now {digest[:12]}, "
                            f"the plan expects {record.stem}); rerun to plan the new image")
    where = record or Path(CacheLayout(str(results)).image_record(name, digest[:12]))
    data = build_image(name, _writing(where.parent) and where, log=lambda m: print(f"specsnap: {m}", file=sys.stderr),
                       digest=digest, carried=carried)
    _console().print(f"{data['tag']} ({data['id'][:19]}…), record in {where}")


def _repo_plan(workload: str | None, results: Path, repo_plan: Path | None) -> tuple[dict, str]:
    """What the source and environment commands work from: the pipeline's plan file, or the
    workload's own data planned now."""
    if repo_plan is not None:
        return json.loads(repo_plan.read_text()), str(repo_plan)
    from sdcs_bench.pipeline.repos import repo_plan as plan_repo

    wl = _real_repo(workload)
    return plan_repo(wl, results), wl.id


def _real_repo(workload: str | None):
    from sdcs_bench.trial.workload import load_workload
    from sdcs_bench.trial.workload_registry import registered_workloads, resolve_workload_id

    known = [w for w in registered_workloads() if _is_repo(w)]
    wl = load_workload(resolve_workload_id(_need(workload, "WORKLOAD", known)))
    if not wl.is_real_repo:
        raise SpecSnapError(f"workload {wl.id} is not a real repository (it has no source pin)", known)
    return wl


def _is_repo(wid: str) -> bool:
    from sdcs_bench.trial.workload import load_workload

    try:
        return load_workload(wid).is_real_repo
    except SpecSnapError:
        return False


@app.command("plan")
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

    with progress(f"composing study {study}", echo_steps=False) as step:
        p = make_plan(study, override or [], results, name, progress=step)
    _writing(p.study_dir)
    with progress(f"writing {len(p.trials)} trial files", total=len(p.trials), echo_steps=False) as step:
        changed = write_plan(p, progress=step)
    print(f"study {study}: {len(p.trials)} trials planned in {p.directory}, {len(changed)} changed", file=sys.stderr)


@app.command("power")
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


@app.command("rerun")
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


@app.command("stability")
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


@app.command("estimate")
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


@app.command("aggregate")
def aggregate(
    study: AggregateRunOpt = "smoke",
    results: ResultsOpt = Path("results"),
    study_dir: StudyDirOpt = None,
) -> None:
    """Collect a study's scorecards into scorecards.csv, ledger.csv and leaderboard.{csv,md,json}."""
    from sdcs_bench.pipeline.aggregate import aggregate as run

    where = _writing(study_dir or results / study)
    board = run(where)
    print(f"{where}: leaderboard with {len(board)} rows", file=sys.stderr)
    from sdcs_bench.pipeline.layout import StudyLayout

    for check in json.loads(Path(StudyLayout(str(where)).leaderboard("json")).read_text()).get("truth_checks", []):
        print(check["line"], file=sys.stderr)


def _run_dir(results: Path, study: str) -> Path:
    """``results/<study>``; a name that is not there while other runs are is refused, naming them
    (with no runs at all, the caller says there is nothing local yet)."""
    where = results / study
    runs = sorted(p.parent.name for p in results.glob("*/leaderboard.json"))
    if not where.is_dir() and runs:
        raise SpecSnapError(f"no run '{study}' under {results}", runs)
    return where


@app.command("leaderboard")
def leaderboard(
    format: Annotated[Format, typer.Option("--format", help="table (fits the terminal), markdown, json "
                                                   "(checked against data/leaderboard.schema.json) or csv")] = Format.table,
    study: ShownRunOpt = "smoke",
    results: ResultsOpt = Path("results"),
) -> None:
    """Print the study's published tables (labelled as such) beside local results."""
    from sdcs_bench.pipeline import leaderboard as lb

    study_dir = _run_dir(results, study)
    if format is Format.json:
        print(lb.as_json(study_dir))
    elif format is Format.markdown:
        print(lb.as_markdown(study_dir))
    elif format is Format.csv:
        print(lb.as_csv(study_dir), end="")
    else:
        lb.print_table(study_dir)


@app.command("report")
def report(
    study: ReportRunOpt = "smoke",
    results: ResultsOpt = Path("results"),
    study_dir: StudyDirOpt = None,
) -> None:
    """Write the study's static HTML report (report/index.html, a page per trial) from its aggregate."""
    from sdcs_bench.core.progress import progress
    from sdcs_bench.pipeline.plan import read_cells
    from sdcs_bench.pipeline.report import write_report

    where = _writing(study_dir or _run_dir(results, study))
    cells = where / "plan" / "cells.tsv"
    if not (where / "leaderboard.json").is_file() or not cells.is_file():
        raise SpecSnapError(f"{where}: no aggregated study here (plan/cells.tsv and leaderboard.json); run "
                            "`snakemake --cores 2 --config study=<study>` or `specsnap aggregate` first")
    with progress("writing trial pages", total=len(read_cells(cells)), echo_steps=False) as step:
        index = write_report(where, progress=lambda _trial: step())
    print(f"{index}: open it in a browser (no server needed)", file=sys.stderr)


@app.command("enumerate-estimators")
def enumerate_estimators(
    k_min: Annotated[int, typer.Option("--k-min", help="fewest required facts per edit (1 or more)")] = 2,
    k_max: Annotated[int, typer.Option("--k-max", help="most required facts per edit (at most 10)")] = 6,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Run the union-aware and the event-only coverage estimators on every read / prior /
    uncovered assignment of an edit's k required facts, and check on every run that the
    event-only estimator overstates the missing facts by exactly the prior-covered ones
    (docs/coherence.md). Exit status 1 if any run breaks that."""
    from sdcs_bench.coherence import enumeration

    enumeration.check_k_range(k_min, k_max)
    summary = enumeration.summarise(enumeration.enumerate_runs(k_min, k_max), k_min, k_max)
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        _print_enumeration(summary)
    if not summary["proposition_holds"]:
        raise typer.Exit(1)


def _print_enumeration(summary: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    pub = summary.get("published")
    console.print(f"estimator enumeration, k = {summary['k_min']}..{summary['k_max']}: {summary['what']}")
    table = Table(title_justify="left", caption=f"published: {pub['source']}" if pub else None, caption_justify="left")
    table.add_column("")
    table.add_column("this run", justify="right")
    if pub:
        table.add_column("published", justify="right")
    rows = [("runs", "runs"), ("fully covered", "fully_covered"),
            ("event-only false alarms among them", "event_only_false_alarms"), ("all-read runs", "all_read"),
            ("union-aware estimator exact", "union_aware_exact"),
            ("event-only overstatement = prior-covered set", "overstatement_equals_parametric"),
            ("mean overstatement (facts)", "overstatement_mean"), ("max overstatement (facts)", "overstatement_max")]
    for label, key in rows:
        table.add_row(label, f"{summary[key]:,}", *([f"{pub[key]:,}"] if pub else []))
    console.print(table)
    per_k = Table(title="per k", title_justify="left")
    for col in ("k", "runs", "fully covered", "false alarms", "all-read", "mean overstatement"):
        per_k.add_column(col, justify="right")
    for row in summary["per_k"]:
        per_k.add_row(*(f"{row[key]:,}" for key in ("k", "runs", "fully_covered", "event_only_false_alarms",
                                                      "all_read", "overstatement_mean")))
    console.print(per_k)
    shown = 20
    for violation in summary["violations"][:shown]:
        console.print("[red]FAIL[/]", escape(f"{violation['run']}: {violation['problem']}"), soft_wrap=True)
    if len(summary["violations"]) > shown:
        console.print(f"[red]FAIL[/] … and {len(summary['violations']) - shown:,} more (--json lists them all)")
    if summary["proposition_holds"]:
        console.print(f"the prediction held on every one of the {summary['runs']:,} runs")
    else:
        console.print(f"the prediction failed: {len(summary['violations']):,} violation(s)")


@app.command("proxy")
def proxy(
    ledger: Annotated[Path, typer.Option("--ledger", help="append every call's usage here (JSON lines)")],
    replay: Annotated[Optional[Path], typer.Option("--replay", help="serve this replay script instead of forwarding")] = None,
    session: Annotated[int, typer.Option("--session", help="which session of the replay script to serve")] = 1,
    upstream: Annotated[Optional[list[str]], typer.Option("--upstream", help="PROVIDER=URL (forward mode; default: the provider's API)")] = None,
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: any free port)")] = 0,
    cut: Annotated[Optional[str], typer.Option("--cut", help="after_tokens:T or after_turns:N: refuse every call "
                                                              "after the one that reaches it, and say so")] = None,
) -> None:
    """Run the recording model proxy in the foreground, for agents run by hand: point the agent's
    base URL at it and every call's usage lands in --ledger (EXTERNAL_AGENT_PROTOCOL.md). With
    --cut, the call that reaches the cut is the last one answered (stop the agent then)."""
    import threading
    import time

    from sdcs_bench.proxy import ModelProxy, ReplayScript
    from sdcs_bench.proxy.server import DEFAULT_UPSTREAMS
    from sdcs_bench.trial.workload_model import METER_KINDS, CleaveRule

    rule = CleaveRule.parse(cut) if cut else None
    if rule is not None and not rule.metered:
        raise SpecSnapError(f"--cut {cut!r}: the proxy counts model calls, so only a token or turn rule", METER_KINDS)
    count = {"calls": 0, "tokens": 0, "reached": False}
    lock = threading.Lock()

    def answered(tokens: int, seq: int, at: float) -> None:
        with lock:
            if rule is None or count["reached"]:
                return
            count["calls"] += 1
            count["tokens"] += tokens
            if rule.reached(count["calls"], count["tokens"]):
                count["reached"] = True
                print(f"specsnap proxy: the cut {rule} was reached at call {count['calls']} (ledger row {seq}, "
                      f"{count['tokens']:,} tokens): stop the agent now; every later call is refused",
                      file=sys.stderr, flush=True)

    hooks = {"on_answered": answered, "refusal": lambda: "cleaved" if count["reached"] else None}

    ups = {}
    for item in upstream or []:
        name, _, url = item.partition("=")
        if name not in DEFAULT_UPSTREAMS or not url:
            raise SpecSnapError(f"--upstream {item!r} must be PROVIDER=URL", DEFAULT_UPSTREAMS)
        ups[name] = url
    if replay is not None:
        server = ModelProxy(ledger=ledger, mode="replay", script=ReplayScript.load(replay).for_session(session, {}),
                            port=port, **hooks)
    else:
        server = ModelProxy(ledger=ledger, mode="forward", upstreams=ups, port=port, **hooks)
    with server:
        print(f"specsnap proxy ({server.mode}) on {server.url}; ledger {ledger}; Ctrl-C to stop", file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    print(json.dumps(server.ledger.totals().to_dict()))


@app.command("install-harnesses")
def install_harnesses(
    names: Annotated[Optional[list[str]], typer.Argument(help="harnesses to install (default: all pinned)")] = None,
    force: Annotated[bool, typer.Option("--force", help="reinstall even if the pinned version is in place")] = False,
) -> None:
    """Install the pinned real agent CLIs (harnesses/pins.yaml); already-installed pins are skipped."""
    from sdcs_bench.agents.install import harness_home, install

    from sdcs_bench.core.progress import progress

    with progress("installing harnesses") as step:
        done = install(list(names or []) or None, force=force, log=lambda m: step(description=f"specsnap: {m}"))
    print(f"installed: {', '.join(done) or '(all already in place)'} under {harness_home()}")


def main() -> None:
    jobs.guarded(app)


if __name__ == "__main__":
    main()
