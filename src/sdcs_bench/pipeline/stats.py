"""The statistics every table carries (docs/statistics.md): intervals, paired differences, power.

- :func:`interval`: a cell's n, mean and 95% interval, a *percentile bootstrap* over its trials
  (1,000 resamples by default). Seeded from the study's ``statistics.seed`` and the cell's own key,
  so a rerun writes the same bytes and no two cells share their resamples. With n = 1 there is no
  interval (``lo``/``hi`` are None), never a zero-width one pretending to be an estimate; with every
  trial equal (a deterministic reference policy) the interval is exactly the mean.
- :func:`paired`: the same over the differences of matched trials (same workload, variant, agent,
  seed, continuation), each resample drawing whole pairs.
- :func:`trials_needed` / :func:`power`: the normal approximation to a two-sided test of a mean
  difference, on paired differences (sd of the differences) or, for two independent cells, with the
  variance doubled.
- :func:`disagreement`: the run-to-run measure of the coherence-debt paper (Appendix R): the share of
  matched trials whose outcome differs between two batches.

Only numpy and the standard library: the coverage and power checks (tests/test_statistics.py) run
these very functions against a reference policy whose distribution is known.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

RESAMPLES = 1000
LEVEL = 0.95
SEED = 0
# The coherence-debt paper's run-to-run figure (Appendix R): thirty cells run twice in separate
# batches, 404 matched trials, full-marks outcomes disagreeing on 4.8% of them.
PUBLISHED_DISAGREEMENT = {"rate": 0.048, "matched": 404, "cells": 30,
                          "source": "coherence-debt paper, Appendix R (full-marks outcomes, 404 matched trials)"}


@dataclass(frozen=True)
class Settings:
    """``statistics`` of the config: resamples, level, seed."""

    resamples: int = RESAMPLES
    level: float = LEVEL
    seed: int = SEED

    @classmethod
    def from_config(cls, cfg: dict[str, Any] | None) -> Settings:
        cfg = dict(cfg or {})
        unknown = sorted(set(cfg) - {"resamples", "level", "seed"})
        if unknown:
            raise ValueError(f"statistics: unknown setting(s) {unknown}; valid: resamples, level, seed")
        out = cls(int(cfg.get("resamples", RESAMPLES)), float(cfg.get("level", LEVEL)), int(cfg.get("seed", SEED)))
        if out.seed < 0:
            raise ValueError(f"statistics.seed is {out.seed}: a seed is an integer >= 0")
        if out.resamples < 100:
            raise ValueError(f"statistics.resamples is {out.resamples}: use at least 100 (1000 is the default)")
        if not 0.5 <= out.level < 1:
            raise ValueError(f"statistics.level is {out.level}: a coverage between 0.5 and 1 (0.95 is the default)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"resamples": self.resamples, "level": self.level, "seed": self.seed}


@dataclass(frozen=True)
class Interval:
    n: int
    mean: float | None
    lo: float | None
    hi: float | None

    @property
    def excludes_zero(self) -> bool:
        return self.lo is not None and self.hi is not None and (self.lo > 0 or self.hi < 0)

    def covers(self, value: float) -> bool:
        return self.lo is not None and self.hi is not None and self.lo <= value <= self.hi

    def text(self, digits: int = 2) -> str:
        """``[lo, hi]``; ``n=1: no interval``; ``n=0`` for a cell without a valid trial."""
        if self.n == 0:
            return "n=0"
        if self.lo is None:
            return f"n={self.n}: no interval"
        return f"[{_fmt(self.lo, digits)}, {_fmt(self.hi, digits)}]"


def _fmt(value: float, digits: int) -> str:
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def rng(settings: Settings, key: str) -> np.random.Generator:
    """The generator of one cell: the study's seed and the cell's key (stable across runs and
    machines: CRC-32 of the key, not Python's salted ``hash``)."""
    return np.random.default_rng([settings.seed, zlib.crc32(key.encode())])


def interval(values: Iterable[float], key: str, settings: Settings = Settings()) -> Interval:
    """n, mean and the percentile-bootstrap interval of the mean of ``values`` (NaN dropped)."""
    x = np.asarray([v for v in values if v is not None and not _nan(v)], dtype=float)
    n = len(x)
    if n == 0:
        return Interval(0, None, None, None)
    mean = float(x.mean())
    if n == 1:
        return Interval(1, mean, None, None)
    if np.all(x == x[0]):  # every resample's mean is this one value
        return Interval(n, mean, mean, mean)
    draws = rng(settings, key).integers(0, n, size=(settings.resamples, n))
    means = x[draws].mean(axis=1)
    tail = (1 - settings.level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return Interval(n, mean, float(lo), float(hi))


def paired(first: Sequence[float], second: Sequence[float], key: str, settings: Settings = Settings()) -> Interval:
    """The mean of ``second - first`` over matched pairs, with its bootstrap interval (pairs resampled)."""
    if len(first) != len(second):
        raise ValueError("paired samples differ in length")
    return interval([b - a for a, b in zip(first, second)], key, settings)


def counted(cards: Any) -> Any:
    """Of a scorecards table (pandas), the trials every mean is over: valid, not stopped by the run's
    budget (docs/cost.md), and not ended by a limit (docs/sandboxes.md)."""
    stopped = cards["budget_exhausted"].fillna(False).astype(bool) if "budget_exhausted" in cards else False
    limited = cards["limit_exceeded"].fillna("").astype(str) != "" if "limit_exceeded" in cards else False
    return cards["valid"].astype(bool) & ~stopped & ~limited


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _z(level_or_power: float) -> float:
    return NormalDist().inv_cdf(level_or_power)


def power(n: int, delta: float, sd: float, alpha: float = 1 - LEVEL, paired_design: bool = True) -> float:
    """The chance a two-sided test at ``alpha`` detects a true mean difference ``delta`` with ``n``
    trials per cell (pairs, or per arm of two independent cells), when a trial's sd is ``sd`` (of
    the paired differences, or of one cell's outcomes)."""
    if n < 1:
        return 0.0
    if sd <= 0:
        return 1.0 if delta != 0 else 0.0
    se = sd * math.sqrt((1 if paired_design else 2) / n)
    z = abs(delta) / se
    crit = _z(1 - alpha / 2)
    return NormalDist().cdf(z - crit) + NormalDist().cdf(-z - crit)


def trials_needed(delta: float, sd: float, target: float = 0.8, alpha: float = 1 - LEVEL,
                  paired_design: bool = True) -> int:
    """The smallest n with :func:`power` at least ``target`` (at least 2: an interval needs two)."""
    if delta == 0:
        raise ValueError("a difference of 0 cannot be detected: give the smallest difference that matters")
    if sd <= 0:
        return 2
    k = 1 if paired_design else 2
    n = max(2, math.ceil(k * (sd * (_z(1 - alpha / 2) + _z(target)) / delta) ** 2))
    while power(n, delta, sd, alpha, paired_design) < target:  # (the approximation's other tail)
        n += 1
    return n


SIMULATION_CELLS = 4_000_000  # draws held at once by simulated_power (about 32 MB of indices)


def simulated_power(differences: Sequence[float], n: int, delta: float | None = None,
                    settings: Settings = Settings(), studies: int = 400) -> float:
    """The share of simulated studies of ``n`` pairs whose paired-bootstrap interval excludes 0, each
    study drawn from the observed ``differences`` (a pilot's), shifted to mean ``delta`` when given:
    the power of the very procedure the paired table uses, for the pilot's distribution's shape
    (the normal approximation of :func:`power` can be far off for small n and skewed differences)."""
    d = np.asarray([v for v in differences if not _nan(v)], dtype=float)
    if len(d) < 2:
        raise ValueError("a simulated power needs at least two observed paired differences")
    if delta is not None:
        d = d - d.mean() + delta
    gen = rng(settings, f"power/{n}/{delta}")
    samples = d[gen.integers(0, len(d), size=(studies, n))]
    resamples = min(settings.resamples, 1000)
    tail = (1 - settings.level) / 2 * 100
    detected = 0
    chunk = max(1, SIMULATION_CELLS // (resamples * n))  # studies at a time: memory bounded, whatever n
    for start in range(0, studies, chunk):
        part = samples[start:start + chunk]
        picks = gen.integers(0, n, size=(len(part), resamples, n))
        means = np.take_along_axis(part[:, None, :], picks, axis=2).mean(axis=2)
        lo, hi = np.percentile(means, [tail, 100 - tail], axis=1)
        detected += int(np.sum((lo > 0) | (hi < 0)))
    return detected / studies


def simulated_trials_needed(differences: Sequence[float], delta: float | None = None, target: float = 0.8,
                            settings: Settings = Settings(), limit: int = 500) -> int | None:
    """The smallest n whose :func:`simulated_power` reaches ``target`` (None beyond ``limit``). The
    search starts at 5: below that a percentile bootstrap is too liberal to plan a study on."""
    n = 5
    while n <= limit:
        if simulated_power(differences, n, delta, settings) >= target:
            return n
        n = n + 1 if n < 20 else int(n * 1.25)
    return None


def sd_from_disagreement(rate: float) -> float:
    """The sd of a full-marks indicator implied by a run-to-run disagreement rate: two independent
    runs of a Bernoulli(p) outcome disagree with probability 2p(1-p), its variance p(1-p)."""
    if not 0 <= rate <= 0.5:
        raise ValueError(f"a disagreement rate is between 0 and 0.5, not {rate}")
    return math.sqrt(rate / 2)


def disagreement(first: Sequence[Any], second: Sequence[Any]) -> float | None:
    """The share of matched pairs whose values differ (None with no pairs)."""
    if len(first) != len(second):
        raise ValueError("matched samples differ in length")
    return sum(a != b for a, b in zip(first, second)) / len(first) if first else None
