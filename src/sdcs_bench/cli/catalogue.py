"""What conf/ and the code define, shown and checked: ``list``, ``validate-workload`` and
``enumerate-estimators``."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sdcs_bench.cli._common import BackendOpt, ResultsOpt, _console, _workload
from sdcs_bench.core.errors import SpecSnapError

commands = typer.Typer()


class Listable(str, Enum):
    workloads = "workloads"
    arms = "arms"
    agents = "agents"
    variants = "variants"
    studies = "studies"
    modes = "modes"
    continuations = "continuations"  # (the same list as modes: the grid axis's own name)


# What each list shows (``specsnap list`` alone prints these; ``continuations`` is ``modes``).
LISTS = {
    "workloads": "the workloads a trial runs (tiers/, real repositories, coherence motifs), with their family",
    "arms": "the arms: the memory files added to the repository, with their notes file",
    "agents": "the agents: reference policies, replays and real harnesses with a model, with their kind",
    "variants": "the variants: cut points, the uninterrupted control, poison pills, withholding, standards layouts",
    "studies": "the studies (conf/study/), with how many trials each plans",
    "modes": "the continuation modes (grid axis continuation; also `list continuations`): what the next session "
             "gets, and which harnesses can do each",
}


@commands.command("list")
def list_(what: Annotated[Listable | None, typer.Argument(help="what to list (none: what can be listed)",
                                                          show_default=False)] = None) -> None:
    """List the workloads, arms, agents, variants, studies or continuation modes SpecSnap defines
    (with no argument: what can be listed)."""
    from rich.table import Table

    if what is None:
        width = max(map(len, LISTS))
        print("specsnap list <what>, where <what> is one of:")
        for name, text in LISTS.items():
            print(f"  {name.ljust(width)}  {text}")
        return
    if what in (Listable.modes, Listable.continuations):
        _list_modes(what.value)
        return
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


def _list_modes(title: str) -> None:
    """The continuation modes: what session k >= 2 gets in each, and the harnesses whose adapter
    can do it headless (each adapter declares what it cannot: ``unsupported_continuations``)."""
    from rich.markup import escape
    from rich.table import Table

    from sdcs_bench.agents import ADAPTERS, harness_class
    from sdcs_bench.trial.continuation import GETS, OR

    table = Table(title=title)
    table.caption = escape("The grid axis `continuation` (default [reset]), e.g. "
                           "'overrides=[\"continuation=[reset,trace:4000,summary]\"]'. resume and compact continue "
                           "the first agent's own conversation: a successor of another harness takes trace:<budget> "
                           "or summary; the fact-driven and standards reference policies take reset only "
                           "(docs/protocol.md#continuation-modes).")
    table.add_column("mode")
    table.add_column("what the next session gets")
    table.add_column("harnesses that can do it")
    for mode, gets in GETS.items():
        able = [kind for kind in ADAPTERS if mode.split(":")[0] not in harness_class(kind).unsupported_continuations]
        shown = "every harness" if len(able) == len(ADAPTERS) else ", ".join(able)
        if mode != "reset":  # (the fact-driven and standards policies run whole trials: reset only)
            shown = shown.replace("reference", "reference (gold-patch policies)")
        if OR in mode:  # a mode per pair: each trial gets the mode, or the fallback where it cannot
            shown = "those of the mode, the others the fallback's"
        table.add_row(escape(mode), escape(gets), shown)
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


@commands.command("validate-workload")
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
    logs = results / "validate" / wl.id  # each scoring run's output, kept (a failure names its log)
    with progress(f"validating {wl.id}") as step:
        checks = run(wl, make_backend(backend), progress=lambda msg: step(description=f"{wl.id}: checking {msg}"),
                     logs=logs)
    if checks.failures:
        for failure in checks.failures:
            console.print("[red]FAIL[/]", escape(failure))
        console.print(f"workload {wl.id}: {len(checks.failures)} check(s) failed, {checks.passed} passed")
        raise typer.Exit(1)
    console.print(f"workload {wl.id}: all {checks.passed} checks passed")


@commands.command("enumerate-estimators")
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
