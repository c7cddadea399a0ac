"""A trial by hand, outside the pipeline: ``scaffold-sandbox`` (also a stage verb: with
``--trial``, the pipeline's scaffold job), ``inject-poison-pill`` and ``evaluate-sandbox`` (which can
record the trial into a run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from sdcs_bench import jobs
from sdcs_bench.cli._common import (BackendOpt, ResultsOpt, TierOpt, WorkloadOpt, _console, _need, _workload,
                                    typer_option)
from sdcs_bench.core.errors import SpecSnapError

commands = typer.Typer()

# The stage verb's options, from the one table (jobs.STAGE_VERBS): optional here, where --arm and
# --dest scaffold by hand instead.
_SCAFFOLD = jobs.STAGE_VERBS["scaffold-sandbox"]
ScaffoldTrialOpt = typer_option(_SCAFFOLD.option("--trial"), optional=True)
ScaffoldStageDirOpt = typer_option(_SCAFFOLD.option("--stage-dir"), optional=True)


@commands.command("scaffold-sandbox")
def scaffold_sandbox(
    arm: Annotated[Optional[str], typer.Option("--arm", help="arm (see `specsnap list arms`)")] = None,
    dest: Annotated[Optional[Path], typer.Option("--dest", help="new directory for the sandbox")] = None,
    tier: TierOpt = None,
    workload: WorkloadOpt = None,
    trial: ScaffoldTrialOpt = None,
    stage_dir: ScaffoldStageDirOpt = None,
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
    from sdcs_bench.pipeline.layout import RunLayout
    from sdcs_bench.pipeline.report import write_report
    from sdcs_bench.trial.components import BY_HAND_KIND

    layout = RunLayout(str(run_dir))
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
                         f"`specsnap aggregate --run {run_dir.name}` once its trials are scored", markup=False)
    return card


def _outside_any_sandbox(dest: Path) -> None:
    """A sandbox inside another one would be part of that one's working tree (and its agent's)."""
    from sdcs_bench.sandbox.records import META

    for parent in Path(dest).resolve().parents:
        if (parent / META).is_file():
            raise SpecSnapError(f"--dest {dest} lies inside the sandbox {parent}; choose a new directory outside it")


@commands.command("inject-poison-pill")
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


@commands.command("evaluate-sandbox")
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
