"""A study's grid, in one place: its axes, their defaults, and the trials it makes.

A new axis is added here: :data:`GRID_AXES` (the order trials are walked in), its default in
:func:`study_grid`, its check in :func:`check_grid`, and, when it folds some of its values into
others, :func:`walk`. The planner (:mod:`.planner`) makes one trial of each cell :func:`walk`
yields, and ``specsnap list studies`` counts the same cells (:func:`study_size`), so the two
cannot disagree.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.trial import config
from sdcs_bench.trial.continuation import RESET, Continuation

GRID_AXES = ("workload", "arm", "agent", "variant", "seed", "successor", "continuation")
# ``successor``: the agent that runs every session after the first (docs/protocol.md#handoff);
# ``same`` (the default, when a study's grid names no successor) is the first agent itself.
SAME = "same"
HANDOFF = ".then."  # in a trial's agent name: <first agent>.then.<successor>
# ``continuation``: how every session after the first continues (trial/continuation.py); ``reset``
# (the default) is SpecSnap's zero-history session, and its trials keep the ids they always had.
DEFAULTS: dict[str, list[Any]] = {"successor": [SAME], "continuation": [RESET]}


def handoff_name(agent: str, successor: str) -> str:
    """The name a trial's agent goes by: the agent, or ``<agent>.then.<successor>`` for a handoff."""
    return agent if successor in (SAME, agent) else f"{agent}{HANDOFF}{successor}"


def trial_id(workload: str, arm: str, agent: str, variant: str, seed: int, continuation: str = RESET) -> str:
    part = Continuation.parse(continuation).id_part
    raw = f"{workload}__{arm}__{agent}__{variant}__s{seed}" + (f"__{part}" if part else "")
    return re.sub(r"[^A-Za-z0-9_.-]", "-", raw)


def study_grid(grid: dict[str, list], overrides: dict[str, list] | None = None) -> dict[str, list]:
    """The grid a study plans: its ``grid:`` with every axis it leaves out at its default, each axis
    a grid override names replaced (see :func:`.overrides.split_overrides`), checked."""
    full = {**DEFAULTS, **grid, **(overrides or {})}
    check_grid(full)
    return full


def check_grid(grid: dict[str, list]) -> None:
    for axis in GRID_AXES:
        values = grid.get(axis)
        if not values:
            raise SpecSnapError(f"the study grid needs at least one {axis}")
        if axis == "seed":
            if not all(isinstance(v, int) and v >= 0 for v in values):
                raise SpecSnapError(f"seeds must be non-negative integers, got {values}")
            continue
        for value in values:
            if axis == "continuation":
                Continuation.parse(str(value))
                continue
            if axis == "successor":
                if str(value) != SAME and str(value) not in config.options("agent"):
                    raise unknown("successor", str(value), [SAME, *config.options("agent")])
                continue
            config.check_option(axis, str(value))  # (a variant may be composed: a+b)


@dataclass(frozen=True)
class Cell:
    """One trial of the grid: a value of every axis (``successor`` is :data:`SAME` for no handoff)."""

    workload: str
    arm: str
    agent: str
    variant: str
    seed: int
    successor: str
    continuation: Continuation

    @property
    def name(self) -> str:
        """The trial's agent name (see :func:`handoff_name`)."""
        return handoff_name(self.agent, self.successor)

    @property
    def trial_id(self) -> str:
        return trial_id(self.workload, self.arm, self.name, self.variant, self.seed, str(self.continuation))


def walk(grid: dict[str, list], sessions: Callable[[Cell], int | None]) -> Iterator[Cell]:
    """The trials of a (full, checked) grid, in the order they are planned: every combination of the
    axes, with two folds. A successor equal to the agent is no handoff: that trial is made once. A
    trial of one session (``sessions(cell)``: the uninterrupted control) continues nothing, in any
    mode: it is the ``reset`` trial, made once (and the control every mode's share cut is measured
    against). ``sessions`` is called once for every cell not folded by the first rule, in order (the
    planner checks the cell there, so the first bad combination still fails first); only a cell in
    another mode than ``reset`` reads its answer (a counter may answer None for the others)."""
    planned: set[str] = set()
    for wid, arm, agent, variant, seed, successor, cont in itertools.product(*(grid[a] for a in GRID_AXES)):
        cell = Cell(wid, arm, agent, variant, seed, SAME if successor == agent else successor,
                    Continuation.parse(str(cont)))
        if cell.trial_id in planned:
            continue
        if sessions(cell) == 1 and not cell.continuation.is_reset:
            cell = replace(cell, continuation=Continuation())
            if cell.trial_id in planned:
                continue
        planned.add(cell.trial_id)
        yield cell


def grid_size(grid: dict[str, list], overrides: dict[str, list] | None = None) -> int:
    """How many trials a study's ``grid:`` makes (what ``specsnap list studies`` shows), with any grid
    overrides: the cells :func:`walk` yields, for the session counts the planner would find."""
    from sdcs_bench.trial.schedule import effective_schedule
    from sdcs_bench.trial.workload import load_workload

    full = study_grid(grid, overrides)

    @functools.cache
    def sessions(wid: str, variant: str) -> int:
        return len(effective_schedule(load_workload(wid), config.entity("variant", variant)))

    if any(not Continuation.parse(str(c)).is_reset for c in full["continuation"]):
        config.prefetch(("variant", part) for name in full["variant"] for part in str(name).split(config.COMPOSE))
    return sum(1 for _ in walk(full, lambda c: None if c.continuation.is_reset else sessions(c.workload, c.variant)))
