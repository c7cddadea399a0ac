"""Run-to-run stability (docs/statistics.md#run-to-run-stability): a random subset of a finished
study's cells run again as a separate batch, the *same* trials (same seeds), and the share of
matched trials whose outcome differs, the coherence-debt paper's Appendix R measure (4.8% of 404
matched trials disagreed on full marks).

A cell is a leaderboard row: every trial of one workload, arm, agent, variant and continuation,
whatever its seed. The batch is a run of its own (``<run>.rerun-s<seed>`` by default), planned from
the same study and overrides with only the chosen cells' trials (:func:`subset_trials`, applied by
the plan); :func:`compare` matches its trials to the first run's by trial id.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.pipeline.stats import LEVEL, MIN_INTERVAL_N, PUBLISHED_DISAGREEMENT, counted, wilson
from sdcs_bench.trial.components import REFERENCE_KIND

SEED_PART = re.compile(r"__s\d+(?=__|$)")


@dataclass(frozen=True)
class Subset:
    """The cells of a finished run to run again: ``share`` of them, chosen with ``seed``."""

    of: str
    share: float
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.of:
            raise SpecSnapError("a rerun names the finished run it repeats (rerun_of=RUN)")
        if self.seed < 0:
            raise SpecSnapError(f"rerun_seed={self.seed}: a seed is an integer >= 0")
        if not 0 < self.share <= 1:
            raise SpecSnapError(f"rerun_share={self.share}: the share of the run's cells to repeat, in (0, 1]")

    @property
    def default_name(self) -> str:
        return f"{self.of}.rerun-s{self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return {"of": self.of, "share": self.share, "seed": self.seed}


def cell_of(trial: str) -> str:
    """A trial's cell: its id without the seed."""
    return SEED_PART.sub("", trial)


def subset_trials(cells: list[dict[str, str]], subset: Subset) -> set[str]:
    """The trials of ``ceil(share * cells)`` cells chosen at random (seeded), and the uninterrupted
    controls their cut rules are measured against."""
    by_cell: dict[str, list[str]] = {}
    for row in cells:
        by_cell.setdefault(cell_of(row["trial"]), []).append(row["trial"])
    names = sorted(by_cell)
    if not names:
        raise SpecSnapError(f"run {subset.of} has no planned trials to repeat")
    k = max(1, math.ceil(subset.share * len(names)))
    chosen = np.random.default_rng(subset.seed).choice(len(names), size=k, replace=False)
    trials = {t for i in sorted(chosen) for t in by_cell[names[i]]}
    baselines = {row["baseline"] for row in cells if row["trial"] in trials and row.get("baseline")}
    return trials | baselines


def rate_interval(disagreed: int, n: int, reference: bool, level: float = LEVEL) -> list[float] | None:
    """A disagreement rate's Wilson interval (a share: docs/statistics.md#intervals), from
    :data:`MIN_INTERVAL_N` matched trials as every share's; none for reference policies, whose rate
    is 0 by construction (no noise to bound)."""
    if reference or n < MIN_INTERVAL_N:
        return None
    return list(wilson(disagreed, n, level))


def compare(first: Path, second: Path, level: float = LEVEL) -> dict[str, Any]:
    """Match the trials both runs have (valid in both) and count their disagreements on full marks
    (net = every requirement) and on net, each rate with its Wilson interval at ``level`` over the
    n matched trials."""
    frames = []
    for run in (first, second):
        path = run / "scorecards.csv"
        if not path.is_file():
            raise SpecSnapError(f"{run}: no scorecards.csv (run it, or its aggregate, first)")
        frames.append(pd.read_csv(path, dtype={"trial": str}))
    a, b = frames
    matched = a[counted(a)].merge(b[counted(b)], on="trial", suffixes=("_1", "_2"))
    full_1 = matched["net_1"] == matched["n_requirements_1"]
    full_2 = matched["net_2"] == matched["n_requirements_2"]
    full = (full_1 != full_2)
    net = matched["net_1"] != matched["net_2"]
    reference = bool(len(matched)) and bool((matched["agent_kind_1"] == REFERENCE_KIND).all())
    cells = []
    for cell, part in matched.assign(cell=matched["trial"].map(cell_of), full=full, netd=net).groupby("cell", sort=True):
        cells.append({"cell": cell, "matched": len(part), "full_marks_disagree": int(part["full"].sum()),
                      "net_disagree": int(part["netd"].sum())})
    n = len(matched)
    return {
        "first": first.name, "second": second.name, "trials_first": len(a), "trials_second": len(b),
        "matched": n, "unmatched_or_invalid": int(len(b) - n),
        "cells": len(cells),
        "full_marks_disagree": int(full.sum()), "full_marks_rate": float(full.mean()) if n else None,
        "full_marks_interval": rate_interval(int(full.sum()), n, reference, level),
        "net_disagree": int(net.sum()), "net_rate": float(net.mean()) if n else None,
        "net_interval": rate_interval(int(net.sum()), n, reference, level),
        "interval": f"Wilson {level:.0%} over the matched trials (from {MIN_INTERVAL_N}; none for reference policies)",
        "reference_only": reference,
        "note": ("every matched trial is a reference policy's: deterministic given its seed, so the disagreement is 0 "
                 "by construction (a nonzero rate here is a fault of the pipeline, not noise)") if reference else "",
        "published": {**PUBLISHED_DISAGREEMENT, "interval": list(wilson(PUBLISHED_DISAGREEMENT["disagreed"],
                                                                       PUBLISHED_DISAGREEMENT["matched"], level))},
        "level": level, "by_cell": cells,
    }


def lines(result: dict[str, Any]) -> list[str]:
    n = result["matched"]
    out = [f"run-to-run stability: {result['second']} repeats {result['cells']} cell(s) of {result['first']}; "
           f"{n} matched trial(s) (same id, valid in both)"]
    level = result.get("level", LEVEL)
    if n:
        for label, key in (("full marks disagree:", "full_marks"), ("net disagrees:      ", "net")):
            found = result[f"{key}_interval"]
            spread = (f"Wilson {level:.0%} [{found[0]:.1%}, {found[1]:.1%}] over n = {n}" if found else
                      f"n = {n}: " + ("no interval, 0 by construction (below)" if result["reference_only"] else
                                      f"too few for an interval ({MIN_INTERVAL_N} needed)"))
            out.append(f"  {label} {result[f'{key}_disagree']} of {n} ({result[f'{key}_rate']:.1%}), {spread}")
    if result["unmatched_or_invalid"]:
        out.append(f"  left out: {result['unmatched_or_invalid']} trial(s) without a valid match")
    if result["note"]:
        out.append(f"  {result['note']}")
    pub = result["published"]
    lo, hi = pub["interval"]
    out.append(f"  published: {pub['disagreed']} of {pub['matched']} matched trials ({pub['rate']:.1%} in the paper), "
               f"Wilson {level:.0%} [{lo:.1%}, {hi:.1%}] ({pub['source']})")
    return out


def write(result: dict[str, Any], second: Path) -> Path:
    path = second / "stability.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path
