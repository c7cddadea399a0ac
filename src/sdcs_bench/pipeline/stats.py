"""The statistics every table carries (docs/statistics.md): cell intervals, paired tests, adjustment.

- :func:`interval`: a cell's n, mean and 95% interval, chosen by the metric's kind: a **t-interval**
  for the mean of a count or score, **Wilson** for a proportion (full marks, S1-edit survival). An
  interval is printed from :data:`MIN_INTERVAL_N` (5) trials, the n from which its simulated
  coverage is at least 93% (bench/false_positives.py); below, the cell says it has too few. A
  deterministic reference policy (every trial on the same closed form) keeps its exact, zero-width
  interval from two trials.
- :func:`clustered_interval`: a mean pooled over workloads (or requirements): a percentile bootstrap
  that resamples trials *within* each cluster, seeded from the study's ``statistics.seed`` and the
  row's key (CRC-32), so a rerun writes the same bytes.
- :func:`paired_test`: the paired differences of matched trials: their mean, a t-interval, the
  effect size (mean / SD) and an exact **sign-flip permutation test** (every one of the 2^n sign
  vectors up to :data:`EXACT_MAX` pairs, a seeded Monte Carlo of :data:`PERMUTATIONS` beyond).
  Below :func:`min_pairs` (6 for a two-sided 5% test) no sign vector can reach the level, and the
  result says so instead of testing.
- :func:`adjust`: Holm (the default), Benjamini-Hochberg or no adjustment across a table's tests.

The distributions are scipy.stats'; the sign-flip test is enumerated (or drawn) here: see
:func:`sign_flip_pvalues` for why not ``scipy.stats.permutation_test``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

RESAMPLES = 1000
LEVEL = 0.95
SEED = 0
ADJUST = "holm"
ADJUSTMENTS = ("none", "holm", "bh")
MIN_INTERVAL_N = 5  # the n from which a cell's interval covers >= 93% (bench/false_positives.py)
EXACT_MAX = 16  # pairs up to which the sign-flip test enumerates every sign vector (2^16 = 65,536)
PERMUTATIONS = 20_000  # sign vectors drawn beyond EXACT_MAX (the p-value's Monte-Carlo sd <= 0.0035)
# The coherence-debt paper's run-to-run figure (Appendix R): thirty cells run twice in separate
# batches, 404 matched trials, full-marks outcomes disagreeing on 4.8% (19) of them.
PUBLISHED_DISAGREEMENT = {"rate": 0.048, "disagreed": 19, "matched": 404, "cells": 30,
                          "source": "coherence-debt paper, Appendix R (full-marks outcomes, 404 matched trials)"}


@dataclass(frozen=True)
class Settings:
    """``statistics`` of the config: resamples (the clustered bootstrap), level, seed, adjust."""

    resamples: int = RESAMPLES
    level: float = LEVEL
    seed: int = SEED
    adjust: str = ADJUST

    @classmethod
    def from_config(cls, cfg: dict[str, Any] | None) -> Settings:
        cfg = dict(cfg or {})
        unknown = sorted(set(cfg) - {"resamples", "level", "seed", "adjust"})
        if unknown:
            raise ValueError(f"statistics: unknown setting(s) {unknown}; valid: resamples, level, seed, adjust")
        out = cls(int(cfg.get("resamples", RESAMPLES)), float(cfg.get("level", LEVEL)), int(cfg.get("seed", SEED)),
                  str(cfg.get("adjust", ADJUST)))
        if out.seed < 0:
            raise ValueError(f"statistics.seed is {out.seed}: a seed is an integer >= 0")
        if out.resamples < 100:
            raise ValueError(f"statistics.resamples is {out.resamples}: use at least 100 (1000 is the default)")
        if not 0.5 <= out.level < 1:
            raise ValueError(f"statistics.level is {out.level}: a coverage between 0.5 and 1 (0.95 is the default)")
        if out.adjust not in ADJUSTMENTS:
            raise ValueError(f"statistics.adjust is {out.adjust!r}: valid choices: {', '.join(ADJUSTMENTS)} "
                             "(holm is the default)")
        return out

    @property
    def alpha(self) -> float:
        return 1 - self.level

    def to_dict(self) -> dict[str, Any]:
        return {"resamples": self.resamples, "level": self.level, "seed": self.seed, "adjust": self.adjust}


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
        """``[lo, hi]``; ``n=3: too few for an interval (5 needed)``; ``n=0`` without a valid trial."""
        if self.n == 0:
            return "n=0"
        if self.lo is None:
            if self.n < MIN_INTERVAL_N:
                return f"n={self.n}: too few for an interval ({MIN_INTERVAL_N} needed)"
            return f"n={self.n}: no interval"
        return f"[{_fmt(self.lo, digits)}, {_fmt(self.hi, digits)}]"


def _fmt(value: float, digits: int) -> str:
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def rng(settings: Settings, key: str) -> np.random.Generator:
    """The generator of one row: the study's seed and the row's key (stable across runs and
    machines: CRC-32 of the key, not Python's salted ``hash``)."""
    return np.random.default_rng([settings.seed, zlib.crc32(key.encode())])


def _clean(values: Iterable[Any]) -> np.ndarray:
    return np.asarray([float(v) for v in values if v is not None and not _nan(v)], dtype=float)


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


# --- distributions: scipy.stats (imported where used: the plan reads Settings and needs none) -------


@lru_cache(maxsize=4096)
def t_ppf(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``;
    cached: a table's intervals ask for the same few)."""
    from scipy.stats import t

    return float(t.ppf(q, df))


def z(q: float) -> float:
    """The ``q`` quantile of the standard normal (``scipy.stats.norm.ppf``)."""
    from scipy.stats import norm

    return float(norm.ppf(q))


# --- cell intervals ---------------------------------------------------------------------------------


def t_interval(x: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    mean, n = float(x.mean()), len(x)
    half = t_ppf(1 - (1 - level) / 2, n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return mean - half, mean + half


def wilson(successes: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n``."""
    if n <= 0:
        raise ValueError("a Wilson interval needs at least one trial")
    k, p = z(1 - (1 - level) / 2), successes / n
    centre = (p + k * k / (2 * n)) / (1 + k * k / n)
    half = k * math.sqrt(p * (1 - p) / n + k * k / (4 * n * n)) / (1 + k * k / n)
    return (0.0 if successes == 0 else max(0.0, centre - half)), (1.0 if successes == n else min(1.0, centre + half))


def interval(values: Iterable[Any], key: str = "", settings: Settings = Settings(), kind: str = "mean",
             deterministic: bool = False) -> Interval:
    """n, mean and the interval of the mean of ``values`` (None and NaN dropped): ``kind`` "mean"
    (a t-interval) or "share" (values 0/1: Wilson). Fewer than :data:`MIN_INTERVAL_N` values: no
    interval, except a ``deterministic`` reference policy whose trials all landed on one value (its
    closed form: exact, zero width, from two trials). ``key`` is unused (the intervals draw nothing)
    and kept so every caller names its row."""
    x = _clean(values)
    n = len(x)
    if n == 0:
        return Interval(0, None, None, None)
    mean = float(x.mean())
    if deterministic and n >= 2 and np.all(x == x[0]):
        return Interval(n, mean, mean, mean)
    if n < MIN_INTERVAL_N:
        return Interval(n, mean, None, None)
    if kind == "share":
        if not np.all((x == 0) | (x == 1)):
            raise ValueError(f"{key}: a share's values are 0 or 1")
        lo, hi = wilson(float(x.sum()), n, settings.level)
    elif kind == "mean":
        lo, hi = t_interval(x, settings.level)
    else:
        raise ValueError(f"unknown interval kind {kind!r}: mean or share")
    return Interval(n, mean, lo, hi)


def clustered_interval(values: Sequence[Any], clusters: Sequence[Any], key: str,
                       settings: Settings = Settings()) -> Interval:
    """The mean of ``values`` pooled over ``clusters`` (workloads, or requirements), with a percentile
    bootstrap that resamples each cluster's trials *within* the cluster (every resample keeps each
    workload's share of the pool, as the pooled mean does). Needs :data:`MIN_INTERVAL_N` trials."""
    if len(values) != len(clusters):
        raise ValueError("values and clusters differ in length")
    keep = [(c, float(v)) for v, c in zip(values, clusters) if v is not None and not _nan(v)]
    n = len(keep)
    if n == 0:
        return Interval(0, None, None, None)
    x = np.array([v for _, v in keep])
    mean = float(x.mean())
    if n < MIN_INTERVAL_N:
        return Interval(n, mean, None, None)
    gen = rng(settings, key)
    totals = np.zeros(settings.resamples)
    for cluster in dict.fromkeys(c for c, _ in keep):
        part = np.array([v for c, v in keep if c == cluster])
        totals += part[gen.integers(0, len(part), size=(settings.resamples, len(part)))].sum(axis=1)
    tail = (1 - settings.level) / 2 * 100
    lo, hi = np.percentile(totals / n, [tail, 100 - tail])
    return Interval(n, mean, float(lo), float(hi))


# --- paired differences: the sign-flip test ---------------------------------------------------------


def min_pairs(alpha: float = 1 - LEVEL) -> int:
    """The fewest pairs at which a two-sided sign-flip test can reach ``alpha`` at all: its smallest
    p-value is 2 / 2^n (every difference of one sign), so n with 2 / 2^n <= alpha (6 at 5%)."""
    n = 1
    while 2 / 2**n > alpha + 1e-12:
        n += 1
    return n


@lru_cache(maxsize=EXACT_MAX + 1)
def _all_signs(n: int) -> np.ndarray:
    """Every sign vector of n pairs (2^n x n, entries +-1), read-only: shared between calls."""
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(float)
    signs.setflags(write=False)
    return signs


def sign_flip_pvalues(diffs: np.ndarray, gen: np.random.Generator | None = None,
                      permutations: int = PERMUTATIONS) -> tuple[np.ndarray, str]:
    """Two-sided sign-flip p-values of the rows of ``diffs`` (studies x pairs): the share of sign
    vectors s whose |sum s*d| reaches the observed |sum d|. Every one of the 2^n vectors up to
    :data:`EXACT_MAX` pairs; beyond, ``permutations`` drawn from ``gen`` (shared by the rows), the
    p-value ``(1 + hits) / (1 + permutations)`` (a valid test at any number drawn).

    Not ``scipy.stats.permutation_test``: its two-sided p is twice the smaller one-sided p (the
    same as this one when every vector is counted, not when they are drawn), it draws its own
    vectors (a rerun's p-values would change), and it tests one study at a time where this tests
    thousands at once (bench/false_positives.py, the power simulations)."""
    d = np.atleast_2d(np.asarray(diffs, dtype=float))
    n = d.shape[1]
    observed = np.abs(d.sum(axis=1))
    tol = 1e-9 * np.maximum(1.0, np.abs(d).sum(axis=1))
    if n <= EXACT_MAX:
        signs = _all_signs(n)
        method, total, extra = "exact", 2**n, 0
    else:
        if gen is None:
            raise ValueError("a Monte-Carlo sign-flip test needs its seeded generator")
        signs = 1 - 2 * (gen.random((permutations, n)) < 0.5).astype(float)
        method, total, extra = f"Monte Carlo ({permutations:,} sign vectors)", permutations + 1, 1
    hits = np.zeros(len(d))
    step = max(1, 4_000_000 // (len(signs) * max(n, 1)))
    for start in range(0, len(d), step):
        part = d[start:start + step]
        sums = np.abs(part @ signs.T)
        hits[start:start + step] = (sums >= (observed - tol)[start:start + step, None]).sum(axis=1)
    return (hits + extra) / total, method


@dataclass(frozen=True)
class PairedTest:
    """One comparison's paired differences: ``n`` pairs, their mean, t-interval (``lo``, ``hi``),
    ``sd``, ``effect_size`` (mean / sd), the two-sided sign-flip ``p`` and what was done (``test``)."""

    n: int
    mean: float | None
    lo: float | None
    hi: float | None
    sd: float | None
    effect_size: float | None
    p: float | None
    test: str

    @property
    def interval(self) -> Interval:
        return Interval(self.n, self.mean, self.lo, self.hi)

    @property
    def excludes_zero(self) -> bool:
        return self.interval.excludes_zero


CLOSED_FORM = "closed form (deterministic reference policy): no test"


def paired_test(first: Sequence[Any], second: Sequence[Any], key: str, settings: Settings = Settings(),
                deterministic: bool = False) -> PairedTest:
    """The paired differences ``second - first`` (pairs with a missing side dropped): the sign-flip
    test where there are :func:`min_pairs` pairs, else ``too few pairs (n=2; 6 needed)``; for a
    ``deterministic`` reference policy whose differences are all one value, that value (its closed
    form) and no test."""
    if len(first) != len(second):
        raise ValueError("paired samples differ in length")
    d = _clean(b - a for a, b in zip(first, second) if not (a is None or b is None or _nan(a) or _nan(b)))
    n = len(d)
    if n == 0:
        return PairedTest(0, None, None, None, None, None, None, "no pairs")
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n >= 2 else None
    effect = mean / sd if sd else None
    if deterministic and n >= 2 and np.all(d == d[0]):
        return PairedTest(n, mean, mean, mean, sd, None, None, CLOSED_FORM)
    iv = interval(d, key, settings)
    needed = min_pairs(settings.alpha)
    if n < needed:
        return PairedTest(n, mean, iv.lo, iv.hi, sd, effect, None, f"too few pairs (n={n}; {needed} needed)")
    (p,), method = sign_flip_pvalues(d[None, :], rng(settings, f"sign-flip/{key}"))
    return PairedTest(n, mean, iv.lo, iv.hi, sd, effect, float(p), f"sign-flip, {method}")


def adjust(pvalues: Sequence[float | None], method: str = ADJUST) -> list[float | None]:
    """Adjusted p-values across one table's tests (None: no test, left out of the count): Holm's
    step-down, Benjamini-Hochberg's step-up, or ``none`` (the raw values)."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {method!r}: valid choices: {', '.join(ADJUSTMENTS)}")
    tested = [(i, p) for i, p in enumerate(pvalues) if p is not None and not _nan(p)]
    out: list[float | None] = [None] * len(pvalues)
    m = len(tested)
    order = sorted(tested, key=lambda t: t[1])
    if method == "none":
        for i, p in tested:
            out[i] = p
    elif method == "holm":
        running = 0.0
        for rank, (i, p) in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p))
            out[i] = running
    else:  # bh
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i, p = order[rank]
            running = min(running, (m / (rank + 1)) * p)
            out[i] = min(1.0, running)
    return out


# --- the rest ---------------------------------------------------------------------------------------


def counted(cards: Any) -> Any:
    """Of a scorecards table (pandas), the trials every mean is over: valid, not stopped by the run's
    budget (docs/cost.md), and not ended by a limit (docs/sandboxes.md)."""
    stopped = cards["budget_exhausted"].fillna(False).astype(bool) if "budget_exhausted" in cards else False
    limited = cards["limit_exceeded"].fillna("").astype(str) != "" if "limit_exceeded" in cards else False
    return cards["valid"].astype(bool) & ~stopped & ~limited


def disagreement(first: Sequence[Any], second: Sequence[Any]) -> float | None:
    """The share of matched pairs whose values differ (None with no pairs)."""
    if len(first) != len(second):
        raise ValueError("matched samples differ in length")
    return sum(a != b for a, b in zip(first, second)) / len(first) if first else None
