"""A run's budget as the run's main process sets it (docs/cost.md#during-a-run-budgets).

The plan carries the configured ``budget`` (``plan/budget.json``); a run's command line may set
``budget_max_usd`` / ``budget_trial_max_usd`` over it without changing the run's identity. The
effective limits are written to ``results/<run>/budget/budget.json``, which every session's proxy
reads (:mod:`sdcs_bench.session.budget`), with ``price_replay``: whether the run prices its replay
calls (a scripted model: nothing paid) for a test of the budget (the planned setting, or the
command line's ``price_replay``); without it a replay is never stopped and needs no price. When the
limits are raised (or lifted), each trial a smaller budget stopped is opened again: its first
stopped session's directory is moved aside (kept, as ``session_<k>.budget_exhausted.<n>``), so
Snakemake runs that session again from its predecessor's snapshot, and everything after it; so is a
replay trial a priced replay stopped, once replay is no longer priced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.core.prices import PriceTable
from sdcs_bench.pipeline.layout import RunLayout
from sdcs_bench.pipeline.plan.current import INPUTS_FILE
from sdcs_bench.pipeline.plan.files import read_cells
from sdcs_bench.pipeline.plan.settings import BUDGET_KEYS, check_limit
from sdcs_bench.session.budget import REASON, limits_path, read_limits

EXHAUSTED = REASON  # a session's status when the budget refused it a call
PRICE_REPLAY = "price_replay"  # the setting that prices replay calls for a test of the budget


def _planned(run_dir: Path) -> dict[str, Any]:
    path = Path(RunLayout(str(run_dir)).budget_file)
    data = json.loads(path.read_text()) if path.is_file() else {}
    return {k: data.get(k) for k in (*BUDGET_KEYS, PRICE_REPLAY)}


def check_switch(name: str, value: Any) -> bool:
    """A yes/no setting: true or false (as YAML or a command line gives it)."""
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "false"):
        return str(value).strip().lower() == "true"
    raise SpecSnapError(f"{name} is {value!r}: true or false")


def effective_limits(run_dir: Path, command_line: dict[str, Any]) -> dict[str, Any]:
    """The run's limits (the command line's over the planned ones) and its ``price_replay``."""
    planned = _planned(run_dir)
    limits: dict[str, Any] = {k: check_limit(f"budget_{k}", command_line[k]) if command_line.get(k) is not None
                              else planned[k] for k in BUDGET_KEYS}
    price = command_line.get(PRICE_REPLAY)
    limits[PRICE_REPLAY] = check_switch(f"budget_{PRICE_REPLAY}", price) if price is not None else \
        check_switch(f"budget.{PRICE_REPLAY}", planned[PRICE_REPLAY] or False)
    return limits


def _limited(limits: dict[str, Any]) -> bool:
    """Is any limit set (a budget to keep)?"""
    return any(limits.get(k) is not None for k in BUDGET_KEYS)


def _check_priced(run_dir: Path, limits: dict[str, Any]) -> None:
    """With a budget, every agent that pays for model calls must have a price (else the budget cannot
    be kept). A replay agent pays nothing: it needs one only where the run prices replay."""
    if not _limited(limits):
        return
    layout = RunLayout(str(run_dir))
    try:
        agents = json.loads((Path(run_dir) / INPUTS_FILE).read_text())["agents"]
        table = PriceTable.parse(json.loads(Path(layout.prices_file).read_text()))
    except (OSError, ValueError, KeyError) as exc:
        raise SpecSnapError(f"{run_dir}: a budget needs the plan's agents and price table ({exc})") from None
    for name, agent in sorted(agents.items()):
        proxy = agent.get("proxy", "none")
        if proxy == "none" or (proxy == "replay" and not limits.get(PRICE_REPLAY)):
            continue
        if table.find(str(agent.get("model"))) is None:
            priced = " and the run prices replay for a test of it" if proxy == "replay" else ""
            raise SpecSnapError(f"a budget is set{priced}, but agent {name}'s model {agent.get('model')!r} has no "
                                "price in conf/prices.yaml, so its calls cannot be counted against it: add its price "
                                "(with its source and date), or run without a budget")


def _raised(old: dict[str, Any], new: dict[str, Any], by: str | None, priced_replay: bool = False) -> bool:
    """Whether the limit that stopped a stage (``by``: "run" or "trial") is higher now (or gone). A
    stage stopped because a call could not be priced or the spend ledger read is opened on any change;
    a replay stopped only because the run priced replay, once replay is no longer priced."""
    if priced_replay and not new.get(PRICE_REPLAY):
        return True
    keys = {"run": ("max_usd",), "trial": ("trial_max_usd",)}.get(by or "")
    if keys is None:
        return any(new[k] != old.get(k) for k in BUDGET_KEYS)
    return any(new[k] is None or (old.get(k) is not None and new[k] > float(old[k])) for k in keys)


def reopen(run_dir: Path, limits: dict[str, float | None], dry_run: bool = False) -> list[str]:
    """For every trial a lower limit stopped: move its first stopped session and every stage after it
    aside (``<trial>/budget_exhausted.<n>/``, kept for the record), so Snakemake runs them again from
    the last stage before; the trials."""
    run = RunLayout(str(run_dir))
    stages = {c["trial"]: c["stages"].split(",") for c in read_cells(Path(run.cells))} \
        if Path(run.cells).is_file() else {}
    reopened = []
    for trial, order in sorted(stages.items()):
        layout = run.trial(trial)
        first = next((i for i, stage in enumerate(order) if stage.startswith(("session_", "handoff_"))
                      and _stopped_below(Path(layout.stage_json(stage)), limits)), None)
        if first is None:
            continue
        reopened.append(trial)
        if dry_run:
            continue
        n = 1
        while (aside := Path(layout.trial_dir) / f"budget_exhausted.{n}").exists():
            n += 1
        aside.mkdir()
        for stage in order[first:]:
            if Path(layout.stage_dir(stage)).exists():
                os.rename(layout.stage_dir(stage), aside / stage)
    if reopened and not dry_run:
        # Snakemake does not go back for stages that are merely missing while the run's final files
        # stand: the leaderboard's JSON goes (the aggregate writes it again), so the tables are made
        # again, which needs the moved stages again.
        Path(run.leaderboard("json")).unlink(missing_ok=True)
    return reopened


def _stopped_below(stage_json: Path, limits: dict[str, float | None]) -> bool:
    """Whether this session (or a summary's or notes' handoff) was stopped by a budget lower than ``limits``."""
    try:
        data = json.loads(stage_json.read_text())
    except (OSError, ValueError):
        return False
    session, handoff = data.get("session") or {}, data.get("handoff") or {}
    if session.get("status") == EXHAUSTED:
        budget = session.get("budget") or {}
    elif EXHAUSTED in handoff:
        budget = (handoff.get("summary") or handoff.get("notes") or {}).get("budget") or {}
    else:
        return False
    return _raised(budget.get("limits") or {}, limits, budget.get("refused_by"),
                   bool(budget.get("replay_priced_for_budget_test")))


def apply_budget(run_dir: Path, command_line: dict[str, Any], dry_run: bool = False,
                 shared: bool = True) -> list[str]:
    """Write the run's effective limits; open again what a smaller budget stopped. Lines to print.
    A dry run (``snakemake -n``) changes nothing and says what a run would do."""
    from sdcs_bench.pipeline.runlock import StudyBusy, hold_study_lock

    limits = effective_limits(run_dir, command_line)
    if not shared and _limited(limits):
        raise SpecSnapError("a budget is kept in a spend ledger every job of the run shares, and this run's jobs share "
                            "no file system (a storage provider): run it without a budget, or on a shared directory "
                            "(local, SLURM)")
    _check_priced(run_dir, limits)
    try:  # only the run that holds the directory sets its budget (a second invocation leaves it alone)
        hold_study_lock(Path(run_dir))
    except StudyBusy:
        return ["budget: another run holds this directory; its budget is left as that run set it"]
    path = limits_path(run_dir)
    old = read_limits(run_dir) if path.is_file() else None
    if old == limits:
        return []
    reopened = reopen(run_dir, limits, dry_run) if old is not None else []
    if not dry_run:  # (after the stages are moved: an interrupted move is done again next time)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(limits, indent=2, sort_keys=True) + "\n")
    if not _limited(limits) and not _limited(old or {}):
        return []  # (no budget, and none before: nothing to say)
    lines = [f"budget: run ${limits['max_usd']:g}" if limits["max_usd"] is not None else "budget: run unlimited"]
    lines[0] += f", trial ${limits['trial_max_usd']:g}" if limits["trial_max_usd"] is not None else ", trial unlimited"
    if limits[PRICE_REPLAY]:
        lines[0] += "; replay calls priced at list prices for a test of the budget (nothing is paid for them)"
    if reopened:
        lines.append(f"budget raised: {len(reopened)} trial(s) the smaller budget stopped "
                     f"{'would continue (a dry run: nothing moved)' if dry_run else 'continue'} from their stopped "
                     f"session ({', '.join(reopened[:5])}{', ...' if len(reopened) > 5 else ''})")
    return lines
