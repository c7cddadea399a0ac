"""``specsnap power``: how many trials per cell a study needs to detect a given difference
(docs/statistics.md#how-many-seeds).

Two bases, always named in the answer:

- **a finished study** (``--from RUN``): its paired differences against Vanilla (trials matched on
  workload, variant, continuation, agent and seed), pooled over its comparisons after centring each;
  their sd gives the normal approximation, and the paired bootstrap the leaderboard uses is
  simulated on them (:func:`~.stats.simulated_power`: the figure to trust for small n or skewed
  differences). A study without two pairs in any comparison falls back to the spread of its cells
  (two independent cells: twice the variance).
- **before any run**: the coherence-debt paper's run-to-run figure (4.8% of 404 matched trials
  disagreed on full marks): the sd of a full-marks indicator, sqrt(0.048 / 2), for a difference in
  the share of trials with full marks between two cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.pipeline import stats
from sdcs_bench.pipeline.aggregate import matched_pairs

METRICS = ("net", "full_marks")
SHOWN_N = (2, 5, 10, 20, 50, 100)


@dataclass
class PowerReport:
    metric: str
    delta: float
    target: float
    level: float
    basis: str
    design: str  # "paired" | "independent cells"
    sd: float
    n_normal: int | None
    n_simulated: int | None = None
    by_n: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def lines(self) -> list[str]:
        unit = "requirements" if self.metric == "net" else "share of trials with full marks"
        out = [f"detect a difference of {self.delta:g} ({unit}) with power {self.target:.0%} at the "
               f"{self.level:.0%} level, {self.design}:", f"  basis: {self.basis}", f"  sd: {self.sd:.4g}"]
        if self.note:
            out.append(f"  {self.note}")
        if self.n_normal is not None:
            out.append(f"  trials per cell (normal approximation): {self.n_normal}")
        if self.n_simulated is not None:
            out.append(f"  trials per cell (the paired bootstrap simulated on the study's differences): {self.n_simulated}")
        if self.by_n:
            out.append("  power by trials per cell: " + ", ".join(
                f"n={r['n']}: {r['power']:.2f}" + (f" (simulated {r['simulated']:.2f})" if r.get("simulated") is not None else "")
                for r in self.by_n))
        return out


def _outcome(cards: pd.DataFrame, metric: str) -> pd.Series:
    if metric == "net":
        return cards["net"].astype(float)
    return (cards["net"] == cards["n_requirements"]).astype(float)


def _paired_differences(cards: pd.DataFrame, metric: str) -> list[np.ndarray]:
    """Per comparison against Vanilla (and each mode against reset) with at least two pairs: the
    paired differences of ``metric``."""
    pairs = matched_pairs(cards.assign(value=_outcome(cards, metric)), ("value",))
    return [(part["value"] - part["value_base"]).to_numpy() for *_, part in pairs if len(part) >= 2]


def power_report(delta: float, *, metric: str = "net", target: float = 0.8, level: float = 0.95,
                 run_dir: Path | None = None, settings: stats.Settings = stats.Settings()) -> PowerReport:
    if metric not in METRICS:
        raise SpecSnapError(f"unknown metric {metric!r}", METRICS)
    if delta <= 0:
        raise SpecSnapError(f"--delta {delta}: give the smallest difference worth detecting (a number > 0)")
    if not 0.5 <= target < 1:
        raise SpecSnapError(f"--power {target}: a probability between 0.5 and 1 (0.8 is usual)")
    alpha = 1 - level
    if run_dir is None:
        if metric != "full_marks":
            raise SpecSnapError("before any run the only published basis is the run-to-run disagreement on full marks: "
                                "use --metric full_marks (a difference in the share of trials with full marks), or "
                                "--from RUN for a finished study's own variance")
        sd = stats.sd_from_disagreement(stats.PUBLISHED_DISAGREEMENT["rate"])
        report = PowerReport(metric, delta, target, level, f"published run-to-run figure: {stats.PUBLISHED_DISAGREEMENT['source']}, "
                             f"{stats.PUBLISHED_DISAGREEMENT['rate']:.1%} disagreement, i.e. a full-marks sd of {sd:.3f} per trial",
                             "two independent cells", sd, stats.trials_needed(delta, sd, target, alpha, paired_design=False))
        report.by_n = [{"n": n, "power": stats.power(n, delta, sd, alpha, paired_design=False)} for n in SHOWN_N]
        return report
    cards_path = run_dir / "scorecards.csv"
    if not cards_path.is_file():
        raise SpecSnapError(f"{run_dir}: no scorecards.csv (run the study, or its aggregate, first)")
    cards = pd.read_csv(cards_path, dtype={"continuation": str})
    cards = cards[stats.counted(cards)]
    settings = stats.Settings(settings.resamples, level, settings.seed)
    groups = _paired_differences(cards, metric)
    if groups:
        centred = np.concatenate([g - g.mean() for g in groups])
        dof = sum(len(g) - 1 for g in groups)
        sd = math.sqrt(float((centred ** 2).sum()) / dof) if dof else 0.0
        basis = (f"{run_dir.name}: {sum(len(g) for g in groups)} paired differences in {len(groups)} comparison(s) "
                 "against Vanilla/reset, each centred on its own mean")
        report = PowerReport(metric, delta, target, level, basis, "paired (same seed)", sd, None)
        if sd == 0:
            report.note = ("every pair differed by the same amount in its comparison (deterministic reference "
                           "policies): two trials per cell detect any difference; this says nothing of a model")
            report.n_normal = 2
            return report
        report.n_normal = stats.trials_needed(delta, sd, target, alpha)
        report.n_simulated = stats.simulated_trials_needed(centred, delta, target, settings)
        report.by_n = [{"n": n, "power": stats.power(n, delta, sd, alpha),
                        "simulated": stats.simulated_power(centred, n, delta, settings)} for n in SHOWN_N]
        return report
    value = _outcome(cards, metric)
    cells = cards.assign(value=value, continuation=cards.get("continuation", "reset")).groupby(
        ["workload", "arm", "agent", "variant", "continuation"])["value"]
    var = cells.var(ddof=1).dropna()
    if var.empty:
        raise SpecSnapError(f"{run_dir}: no cell has two valid trials and no comparison two pairs: run at least two "
                            "seeds per cell (a pilot) to measure its variance")
    sd = math.sqrt(float(var.mean()))
    report = PowerReport(metric, delta, target, level, f"{run_dir.name}: the spread of {len(var)} cell(s) of two or more "
                         "trials (no comparison had two pairs)", "two independent cells", sd, None)
    if sd == 0:
        report.note = "every cell's trials scored the same (deterministic reference policies): says nothing of a model"
        report.n_normal = 2
        return report
    report.n_normal = stats.trials_needed(delta, sd, target, alpha, paired_design=False)
    report.by_n = [{"n": n, "power": stats.power(n, delta, sd, alpha, paired_design=False)} for n in SHOWN_N]
    return report
