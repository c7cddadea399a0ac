"""``specsnap power``: how many trials per cell detect a given difference with SpecSnap's own test
(docs/statistics.md#how-many-seeds).

The answer comes from the model that fits the metric, and every assumption is printed with it:

- **full marks** (a proportion): a baseline rate, stated (``--baseline 0.5``, or ``--baseline 19/404``
  for a published count, whose Wilson interval gives the range of n it implies) or, without one, the
  rate the published run-to-run disagreement implies. With no pilot, the **two-proportion formula**
  (two independent cells: conservative for seeds paired across arms); with a pilot (``--from RUN``),
  **McNemar** from its discordant-pair rates.
- **net** (a count): the SD of the paired differences, a pilot's (pooled over its comparisons after
  centring each) or stated (``--sd``), with a **t correction** (the noncentral t's power).

Beside each answer: the power at that n of the test SpecSnap applies, the two-sided **sign-flip
test** (:func:`stats.paired_test`), computed exactly for 0/1 outcomes and simulated for counts (on
the pilot's differences, or normal ones with the stated SD), and the n at which that test itself
reaches the target. No test can mark anything below :func:`stats.min_pairs` pairs.

With a study named (``--study``), :func:`study_cost` adds what that many trials per cell of it would
cost, each trial priced as ``specsnap estimate`` prices it. The distributions are scipy.stats'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.prices import add
from sdcs_bench.pipeline import stats
from sdcs_bench.pipeline.paired import matched_pairs
from sdcs_bench.trial.components import REFERENCE_KIND

METRICS = ("net", "full_marks")
SHOWN_N = (6, 10, 20, 50, 100, 200, 400)
STUDIES = 1000  # simulated studies per n (the simulated power's Monte-Carlo sd <= 0.016)
PERMUTATIONS = 2000  # sign vectors per simulated study beyond stats.EXACT_MAX pairs


# --- the formulas -----------------------------------------------------------------------------------


def two_proportion_n(p1: float, p2: float, alpha: float, target: float) -> int:
    """Trials per cell for two independent proportions (the pooled-variance normal formula)."""
    za, zb, bar = stats.z(1 - alpha / 2), stats.z(target), (p1 + p2) / 2
    root = za * math.sqrt(2 * bar * (1 - bar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(root ** 2 / (p2 - p1) ** 2)


def mcnemar_n(p10: float, p01: float, alpha: float, target: float) -> int:
    """Pairs for McNemar's test (Connor 1987): discordant rates ``p10`` (compared succeeds, baseline
    fails) and ``p01``."""
    psi, delta = p10 + p01, p10 - p01
    root = stats.z(1 - alpha / 2) * math.sqrt(psi) + stats.z(target) * math.sqrt(max(psi - delta ** 2, 0.0))
    return math.ceil(root ** 2 / delta ** 2)


def t_power(n: int, delta: float, sd: float, alpha: float) -> float:
    """The power of a two-sided one-sample t-test of n paired differences (``scipy.stats.nct``, the
    noncentral t of noncentrality delta sqrt(n) / sd)."""
    from scipy.stats import nct

    if n < 2:
        return 0.0
    df, lam = n - 1, abs(delta) * math.sqrt(n) / sd
    crit = stats.t_ppf(1 - alpha / 2, df)
    return float(nct.sf(crit, df, lam) + nct.cdf(-crit, df, lam))


def t_n(delta: float, sd: float, alpha: float, target: float) -> int:
    """The fewest pairs whose :func:`t_power` reaches ``target`` (from the normal formula up)."""
    n = max(2, math.ceil(((stats.z(1 - alpha / 2) + stats.z(target)) * sd / delta) ** 2))
    while t_power(n, delta, sd, alpha) < target:
        n += 1
    return n


# --- the power of the sign-flip test itself ---------------------------------------------------------


def sign_test_critical(d: np.ndarray, alpha: float) -> np.ndarray:
    """For each count ``d`` of discordant pairs, the largest k with 2 P(J <= k) <= alpha
    (J ~ Binomial(d, 1/2)): the exact two-sided sign test rejects at K <= k or K >= d - k; -1 where
    no K can be rejected."""
    from scipy.stats import binom

    d = np.asarray(d, dtype=int)
    first = binom.ppf(alpha / 2, d, 0.5).astype(int)  # the smallest k with P(J <= k) >= alpha / 2
    out = np.full(d.shape, -1)
    for k in (first - 1, first, first + 1):  # the largest of them inside the level
        inside = (k >= 0) & (k <= d) & (2 * binom.cdf(k, d, 0.5) <= alpha + 1e-12)
        out = np.where(inside, np.maximum(out, k), out)
    return out


def signflip_binary_power(n: int, p10: float, p01: float, alpha: float) -> float:
    """The exact power of the two-sided sign-flip test on n pairs of 0/1 outcomes: D discordant
    pairs ~ Binomial(n, p10 + p01); given D, the test is the exact sign test of the D discordant
    signs, which rejects where 2 P(J <= min(K, D - K)) <= alpha (J ~ Binomial(D, 1/2)), K the
    discordant pairs on the compared side ~ Binomial(D, p10 / (p10 + p01))."""
    from scipy.stats import binom

    psi = p10 + p01
    if n < stats.min_pairs(alpha) or psi <= 0:
        return 0.0
    share = min(max(p10 / psi, 0.0), 1.0)
    d = np.arange(stats.min_pairs(alpha), n + 1)
    weight = binom.pmf(d, n, min(psi, 1.0))
    k = sign_test_critical(d, alpha)
    keep = (weight >= 1e-14) & (k >= 0)
    d, weight, k = d[keep], weight[keep], k[keep]
    return float(np.sum(weight * (binom.cdf(k, d, share) + binom.sf(d - k - 1, d, share))))


def signflip_simulated_power(draw, n: int, alpha: float, gen: np.random.Generator, studies: int = STUDIES) -> float:
    """The share of ``studies`` simulated studies of n pairs (``draw(gen, studies, n)``: their
    differences) that the sign-flip test marks at ``alpha`` (0 below :func:`stats.min_pairs`)."""
    if n < stats.min_pairs(alpha):
        return 0.0
    p, _ = stats.sign_flip_pvalues(draw(gen, studies, n), gen, PERMUTATIONS)
    return float(np.mean(p <= alpha + 1e-12))


def smallest_n(power_at, target: float, start: int, limit: int = 5000) -> int | None:
    """The fewest n >= start with ``power_at(n) >= target`` (a doubling search, then bisection)."""
    lo, hi = start - 1, start
    while power_at(hi) < target:
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= target else (mid, hi)
    return hi


# --- the report -------------------------------------------------------------------------------------


@dataclass
class PowerReport:
    metric: str
    delta: float
    target: float
    level: float
    basis: str
    design: str
    method: str
    n: int | None
    n_range: list[int] | None = None
    test_power: float | None = None  # the sign-flip test's power at n
    test_power_method: str = ""
    n_test: int | None = None  # the fewest pairs at which the sign-flip test reaches the target
    by_n: list[dict[str, Any]] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    cost: dict[str, Any] | None = None  # what n trials per cell of a named study would cost (study_cost)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def lines(self) -> list[str]:
        unit = "requirements" if self.metric == "net" else "share of trials with full marks"
        out = [f"detect a difference of {self.delta:g} ({unit}) with power {self.target:.0%}, two-sided at "
               f"{1 - self.level:.0%}, {self.design}:", f"  basis: {self.basis}"]
        out += [f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}" for k, v in self.parameters.items()]
        if self.n is not None:
            out.append(f"  trials per cell ({self.method}): {self.n}")
        if self.n_range:
            out.append(f"  range of n over the baseline's interval: {self.n_range[0]} to {self.n_range[1]}")
        if self.note:
            out.append(f"  {self.note}")
        if self.test_power is not None:
            out.append(f"  power of SpecSnap's sign-flip test at n = {self.n}: {self.test_power:.3f} "
                       f"({self.test_power_method})")
        if self.n_test is not None:
            out.append(f"  trials per cell at which the sign-flip test itself reaches {self.target:.0%}: {self.n_test}")
        if self.by_n:
            out.append("  power by trials per cell (formula / sign-flip test): " + ", ".join(
                f"n={r['n']}: {r['formula']:.2f}/{r['test']:.2f}" for r in self.by_n))
        out.append("  assumptions:")
        out += [f"  - {a}" for a in self.assumptions]
        if self.cost is not None:
            out += cost_lines(self.cost)
        return out


COMMON = ["trials of a cell are independent, and each pair shares its seed (workload, variant, agent, continuation)",
          "the test is SpecSnap's: two-sided sign-flip on the paired differences, no adjustment for other "
          "comparisons (with Holm across m comparisons, plan at level alpha/m)"]


def parse_baseline(text: str, level: float = stats.LEVEL) -> tuple[float, tuple[float, float] | None, str]:
    """``0.5`` (a rate, taken as exact) or ``19/404`` (a count: its Wilson interval at ``level`` too)."""
    try:
        if "/" in text:
            k, n = (int(x) for x in text.split("/"))
            if not 0 <= k <= n or n == 0:
                raise ValueError
            return k / n, stats.wilson(k, n, level), f"{k} of {n}"
        rate = float(text)
    except ValueError:
        raise SpecSnapError(f"--baseline {text}: a rate in (0, 1) such as 0.5, or a count such as 19/404") from None
    if not 0 < rate < 1:
        raise SpecSnapError(f"--baseline {text}: a rate strictly between 0 and 1")
    return rate, None, "stated"


def _proportion(report: PowerReport, p1: float, interval: tuple[float, float] | None, alpha: float) -> PowerReport:
    delta, target = report.delta, report.target
    p2 = p1 + delta
    if p2 >= 1:
        raise SpecSnapError(f"a baseline of {p1:.3g} plus --delta {delta:g} passes 1: give a smaller difference")
    needed = stats.min_pairs(alpha)
    report.n = max(needed, two_proportion_n(p1, p2, alpha, target))
    if interval is not None:
        grid = [p for p in np.linspace(interval[0], interval[1], 201) if 0 < p and p + delta < 1]
        ns = [max(needed, two_proportion_n(p, p + delta, alpha, target)) for p in grid]
        report.n_range = [min(ns), max(ns)] if ns else None
    p10, p01 = p2 * (1 - p1), p1 * (1 - p2)  # the discordant rates of independent arms
    report.parameters.update({"baseline rate": p1, "compared rate": p2})
    report.test_power = signflip_binary_power(report.n, p10, p01, alpha)
    report.test_power_method = "exact, for the two arms' outcomes independent given the seed"
    report.n_test = smallest_n(lambda n: signflip_binary_power(n, p10, p01, alpha), target, needed)
    report.by_n = [{"n": n, "formula": _two_prop_power(n, p1, p2, alpha),
                    "test": signflip_binary_power(n, p10, p01, alpha)} for n in SHOWN_N]
    report.assumptions += [f"the baseline rate of full marks is {p1:.3g} and the compared arm's {p2:.3g}",
                           "two independent cells (the formula); seeds paired across arms only help, so it is "
                           "conservative where a seed's trials agree more than chance", *COMMON]
    return report


def _two_prop_power(n: int, p1: float, p2: float, alpha: float) -> float:
    from scipy.stats import norm

    bar, za = (p1 + p2) / 2, stats.z(1 - alpha / 2)
    se0, se1 = math.sqrt(2 * bar * (1 - bar) / n), math.sqrt((p1 * (1 - p1) + p2 * (1 - p2)) / n)
    return float(norm.cdf((abs(p2 - p1) - za * se0) / se1))


def _counts(report: PowerReport, sd: float, draw, draw_text: str, alpha: float, gen_key: str,
            settings: stats.Settings) -> PowerReport:
    delta, target, needed = report.delta, report.target, stats.min_pairs(alpha)
    report.parameters["sd of the paired differences"] = sd
    report.n = max(needed, t_n(delta, sd, alpha, target))

    def sim(n: int) -> float:
        return signflip_simulated_power(draw, n, alpha, stats.rng(settings, f"{gen_key}/{n}"))

    report.test_power, report.test_power_method = sim(report.n), f"simulated: {STUDIES} studies of {draw_text}"
    report.n_test = smallest_n(sim, target, needed)
    if abs(report.test_power - target) > 0.05:
        report.note = (f"the formula is off for these differences by {report.test_power - target:+.2f} of power at "
                       f"n = {report.n}: plan on {report.n_test}, where the test itself reaches {target:.0%}")
    report.by_n = [{"n": n, "formula": t_power(n, delta, sd, alpha), "test": sim(n)} for n in SHOWN_N if n <= 200]
    report.assumptions += [f"the paired differences have mean {delta:g} and SD {sd:.4g}", *COMMON]
    return report


def _outcome(cards: pd.DataFrame, metric: str) -> pd.Series:
    if metric == "net":
        return cards["net"].astype(float)
    return (cards["net"] == cards["n_requirements"]).astype(float)


def _pilot_pairs(cards: pd.DataFrame, metric: str) -> list[pd.DataFrame]:
    """Per comparison against Vanilla (and each mode against reset) with at least two pairs: the
    pairs' ``value`` and ``value_base``."""
    pairs = matched_pairs(cards.assign(value=_outcome(cards, metric)), ("value",))
    return [part for *_, part in pairs if len(part) >= 2]


def power_report(delta: float, *, metric: str = "net", target: float = 0.8, level: float = 0.95,
                 run_dir: Path | None = None, baseline: str | None = None, sd: float | None = None,
                 settings: stats.Settings = stats.Settings()) -> PowerReport:
    if metric not in METRICS:
        raise SpecSnapError(f"unknown metric {metric!r}", METRICS)
    if delta <= 0:
        raise SpecSnapError(f"--delta {delta}: give the smallest difference worth detecting (a number > 0)")
    if not 0.5 <= target < 1:
        raise SpecSnapError(f"--power {target}: a probability between 0.5 and 1 (0.8 is usual)")
    if not 0.5 <= level < 1:
        raise SpecSnapError(f"--level {level}: a coverage between 0.5 and 1 (0.95: a two-sided 5% test)")
    if metric == "net" and baseline is not None:
        raise SpecSnapError("--baseline is a rate of full marks: use it with --metric full_marks")
    if metric == "full_marks" and sd is not None:
        raise SpecSnapError("--sd is the SD of paired differences in net: use it with --metric net")
    alpha = 1 - level
    settings = stats.Settings(settings.resamples, level, settings.seed, settings.adjust)
    if run_dir is None:
        return _before_any_run(delta, metric, target, level, baseline, sd, alpha, settings)
    cards_path = run_dir / "scorecards.csv"
    if not cards_path.is_file():
        raise SpecSnapError(f"{run_dir}: no scorecards.csv (run the study, or its aggregate, first)")
    cards = pd.read_csv(cards_path, dtype={"continuation": str})
    cards = cards[stats.counted(cards)]
    groups = _pilot_pairs(cards, metric)
    if groups:
        return _from_pairs(groups, run_dir.name, delta, metric, target, level, alpha, settings)
    value = _outcome(cards, metric)
    cells = cards.assign(value=value, continuation=cards.get("continuation", "reset")).groupby(
        ["workload", "arm", "agent", "variant", "continuation"])["value"]
    var = cells.var(ddof=1).dropna()
    if var.empty:
        raise SpecSnapError(f"{run_dir}: no cell has two valid trials and no comparison two pairs: run at least two "
                            "seeds per cell (a pilot) to measure its variance")
    basis = f"{run_dir.name}: the spread of {len(var)} cell(s) of two or more trials (no comparison had two pairs)"
    if metric == "full_marks":
        report = PowerReport(metric, delta, target, level, basis + f"; its full-marks rate {value.mean():.3g}",
                             "two independent cells", "two-proportion formula", None)
        return _proportion(report, float(min(max(value.mean(), 1e-6), 1 - delta - 1e-6)), None, alpha)
    cell_sd = math.sqrt(float(var.mean()))
    report = PowerReport(metric, delta, target, level, basis, "two independent cells, as paired differences",
                         "t-corrected, SD of a difference = sqrt(2) x a cell's SD", None)
    if cell_sd == 0:
        return _deterministic(report)
    report.assumptions.append("a seed's trials in the two arms are independent (no pilot pairs to say otherwise)")
    return _counts(report, math.sqrt(2) * cell_sd, _normal_draw(delta, math.sqrt(2) * cell_sd),
                   "normal differences", alpha, "power/cells", settings)


def _normal_draw(delta: float, sd: float):
    return lambda gen, studies, n: gen.normal(delta, sd, size=(studies, n))


def _deterministic(report: PowerReport) -> PowerReport:
    report.note = ("every pair differed by the same amount in its comparison (deterministic reference policies): "
                   "this says nothing of a model's spread; no answer")
    report.assumptions.append("none: a pilot of deterministic reference policies has no variance")
    return report


def _before_any_run(delta: float, metric: str, target: float, level: float, baseline: str | None, sd: float | None,
                    alpha: float, settings: stats.Settings) -> PowerReport:
    if metric == "net":
        if sd is None:
            raise SpecSnapError("a count metric needs the SD of its paired differences: --from RUN (a pilot's), or "
                                "--sd S (a stated one); or use --metric full_marks --baseline RATE")
        if sd <= 0:
            raise SpecSnapError(f"--sd {sd}: a standard deviation > 0")
        report = PowerReport(metric, delta, target, level, f"a stated SD of the paired differences, {sd:g}",
                             "paired (same seed)", "t-corrected (noncentral t)", None)
        report.assumptions.append("the paired differences are roughly normal (the sign-flip test is simulated on "
                                  "normal ones)")
        return _counts(report, sd, _normal_draw(delta, sd), "normal differences", alpha, "power/sd", settings)
    report = PowerReport(metric, delta, target, level, "", "two independent cells (no pilot)",
                         "two-proportion formula", None)
    if baseline is not None:
        rate, interval, how = parse_baseline(baseline, level)
        report.basis = f"a baseline rate of full marks of {rate:.3g} ({how}" + (
            f"; Wilson {level:.0%} [{interval[0]:.3f}, {interval[1]:.3f}])" if interval else ", taken as exact)")
        return _proportion(report, rate, interval, alpha)
    pub = stats.PUBLISHED_DISAGREEMENT
    r = pub["disagreed"] / pub["matched"]
    lo, hi = stats.wilson(pub["disagreed"], pub["matched"], level)
    implied = [(1 - math.sqrt(1 - 2 * x)) / 2 for x in (r, lo, hi)]
    report.basis = (f"no baseline given: the rate of full marks implied by the published run-to-run disagreement, "
                    f"{pub['disagreed']} of {pub['matched']} ({r:.1%}, Wilson {level:.0%} [{lo:.1%}, {hi:.1%}]; "
                    f"{pub['source']}): two runs of a Bernoulli(p) outcome disagree with probability 2p(1-p), so "
                    f"p = {implied[0]:.3f} [{implied[1]:.3f}, {implied[2]:.3f}]")
    report.assumptions.append("the published disagreement is of full marks between two runs of the same cells, each "
                              "a Bernoulli(p) with p below 1/2 (its mirror 1 - p fits it as well); a rate of full "
                              "marks nearer 1/2 needs far more trials: give --baseline RATE")
    report = _proportion(report, implied[0], (implied[1], implied[2]), alpha)
    worst = max(stats.min_pairs(alpha), two_proportion_n(0.5 - delta / 2, 0.5 + delta / 2, alpha, target))
    report.note = f"at a baseline of {0.5 - delta / 2:.3g} (the most trials any baseline needs) the answer is {worst}"
    return report


def _from_pairs(groups: list[pd.DataFrame], run: str, delta: float, metric: str, target: float, level: float,
                alpha: float, settings: stats.Settings) -> PowerReport:
    pairs = sum(len(g) for g in groups)
    basis = f"{run}: {pairs} pairs in {len(groups)} comparison(s) against Vanilla/reset"
    if all(np.ptp((g["value"] - g["value_base"]).to_numpy(float)) == 0 for g in groups):
        return _deterministic(PowerReport(metric, delta, target, level, basis, "paired (same seed)", "none", None))
    if metric == "full_marks":
        both = pd.concat(groups)
        p10 = float(((both["value"] == 1) & (both["value_base"] == 0)).mean())
        p01 = float(((both["value"] == 0) & (both["value_base"] == 1)).mean())
        psi = max(p10 + p01, delta)
        q10, q01 = (psi + delta) / 2, (psi - delta) / 2
        report = PowerReport(metric, delta, target, level, basis + f": discordant pairs {p10 + p01:.3g} "
                             f"({p10:.3g} compared only, {p01:.3g} baseline only)", "paired (same seed)",
                             "McNemar, from the pilot's discordant pairs", None)
        report.parameters.update({"discordant share (planned)": psi, "compared-only rate": q10,
                                  "baseline-only rate": q01})
        needed = stats.min_pairs(alpha)
        report.n = max(needed, mcnemar_n(q10, q01, alpha, target))
        report.test_power = signflip_binary_power(report.n, q10, q01, alpha)
        report.test_power_method = "exact, on the planned discordant rates"
        report.n_test = smallest_n(lambda n: signflip_binary_power(n, q10, q01, alpha), target, needed)
        report.by_n = [{"n": n, "formula": _mcnemar_power(n, q10, q01, alpha),
                        "test": signflip_binary_power(n, q10, q01, alpha)} for n in SHOWN_N]
        report.assumptions += [f"the share of discordant pairs stays the pilot's {p10 + p01:.3g} (at least the "
                               f"difference, {delta:g}), the difference moving them to the compared arm's side",
                               *COMMON]
        return report
    centred = np.concatenate([(g["value"] - g["value_base"]).to_numpy(float) - (g["value"] - g["value_base"]).mean()
                              for g in groups])
    dof = sum(len(g) - 1 for g in groups)
    sd = math.sqrt(float((centred ** 2).sum()) / dof) if dof else 0.0
    report = PowerReport(metric, delta, target, level, basis + ", each centred on its own mean", "paired (same seed)",
                         "t-corrected (noncentral t), the pilot's SD", None)
    lattice = bool(np.all([np.allclose(g["value"] - g["value_base"], np.round(g["value"] - g["value_base"]))
                           for g in groups]))
    report.assumptions.append("the paired differences are shaped like the pilot's (each comparison centred), shifted "
                              "to the difference" + (" and rounded at random back to whole requirements (keeping "
                                                     "the mean: ties matter to a sign-flip test)" if lattice else "")
                              + ": the sign-flip test is simulated on them, resampled")
    return _counts(report, sd, pilot_draw(centred, delta, lattice),
                   f"the pilot's {len(centred)} differences, resampled", alpha, "power/pilot", settings)


def pilot_draw(centred: np.ndarray, delta: float, lattice: bool):
    """Studies of n paired differences drawn from a pilot's (centred) differences, shifted to mean
    ``delta``; on a ``lattice`` (whole requirements) each draw rounded down or up at random with the
    chances that keep its mean, so ties fall as they do in real differences."""
    shifted = np.asarray(centred, dtype=float) + delta

    def draw(gen: np.random.Generator, studies: int, n: int) -> np.ndarray:
        values = shifted[gen.integers(0, len(shifted), size=(studies, n))]
        if lattice:
            floor = np.floor(values)
            values = floor + (gen.random(values.shape) < values - floor)
        return values

    return draw


def _mcnemar_power(n: int, p10: float, p01: float, alpha: float) -> float:
    from scipy.stats import norm

    psi, delta = p10 + p01, abs(p10 - p01)
    spread = math.sqrt(max(psi - delta ** 2, 1e-12))
    return float(norm.cdf((delta * math.sqrt(n) - stats.z(1 - alpha / 2) * math.sqrt(psi)) / spread))


# --- what that many trials per cell would cost ------------------------------------------------------

COSTS = ("cost_usd", "cost_low_usd", "cost_high_usd")


def _usd(value: float | None, digits: int = 2) -> str:
    return "unknown" if value is None else f"${value:,.{digits}f}"


def _times(value: float | None, n: int) -> float | None:
    return None if value is None else value * n


def study_cost(report: PowerReport, study: str, overrides: list[str] | None = None, pilot_dir: Path | None = None,
               results: Path = Path("results")) -> PowerReport:
    """Set ``report.cost``: what the study ``study`` (with ``overrides``) would cost run at the
    report's n trials per cell (n seeds of every cell), on ``specsnap estimate``'s per-trial basis
    (docs/cost.md#before-a-run-specsnap-estimate): the study planned with one seed (every cell
    once) is estimated, a pilot's trials the basis where ``pilot_dir`` has usable ones (else the
    published figures and the workloads' budgets, and a note says why), then counted n times, as
    every seed plans the same trials. Reference policies and replays cost $0: nothing is paid. Also
    at the sign-flip test's own n and at the ends of the baseline's range of n, where the report
    has them."""
    from sdcs_bench.pipeline import estimate as est

    notes: list[str] = []
    pilot = None
    if pilot_dir is not None:
        try:
            est.read_pilot(pilot_dir)
            pilot = pilot_dir
        except SpecSnapError as exc:
            notes.append(f"run {pilot_dir.name} is no price basis ({exc}): priced from the published figures and the "
                         "workloads' budgets instead")
    # (a seed override replaces the study's seeds: seed=[0] plans every cell once)
    found, _ = est.estimate(study, [*(overrides or []), "seed=[0]"], pilot, results)
    agents = [{"agent": e.agent, "model": e.model, "kind": e.kind, "paid": e.pays, "trials": e.trials,
               "sessions": e.sessions, **{k: getattr(e, k) for k in COSTS},
               "zero_cost": None if e.pays else est.ZERO_COST[e.kind], "notes": list(e.notes),
               "workloads": [{"workload": w.workload, "cost_per_trial": w.cost_per_trial,
                              "low_per_trial": w.low_per_trial, "high_per_trial": w.high_per_trial,
                              "basis": w.basis} for _, w in sorted(e.workloads.items())]}
              for e in found]
    once = {"trials": sum(a["trials"] for a in agents), "sessions": sum(a["sessions"] for a in agents),
            **{k: add(*(a[k] for a in agents)) for k in COSTS}}
    if not any(a["paid"] for a in agents):
        notes.append("no session of the study calls a paid model (reference policies and replays): $0 at any n")
    elif once["cost_usd"] is None:
        notes.append("a model of the study has no price in conf/prices.yaml: its cost, and the total, unknown")

    def at(n: int) -> dict[str, Any]:
        return {"n": n, "trials": once["trials"] * n, "sessions": once["sessions"] * n,
                **{k: _times(once[k], n) for k in COSTS}}

    cost: dict[str, Any] = {"study": study, "overrides": list(overrides or []),
                            "pilot": pilot.name if pilot is not None else None, "cells": once["trials"],
                            "every_cell_once": once, "agents": agents, "notes": notes}
    if report.n is None:
        notes.append("no n to price (above)")
    else:
        cost["at_n"] = at(report.n)
        if report.n_test is not None and report.n_test != report.n:
            cost["at_n_test"] = at(report.n_test)
        if report.n_range:
            cost["at_n_range"] = [at(report.n_range[0]), at(report.n_range[1])]
    report.cost = cost
    return report


def _money(row: dict[str, Any]) -> str:
    if row["cost_usd"] is None:
        return "cost unknown"
    if not row["cost_high_usd"]:
        return "$0" if not row["cost_usd"] else _usd(row["cost_usd"])
    return f"{_usd(row['cost_usd'])} (range {_usd(row['cost_low_usd'])}-{_usd(row['cost_high_usd'])})"


def cost_lines(cost: dict[str, Any]) -> list[str]:
    """The report's lines for :func:`study_cost`."""
    where = f"study {cost['study']}" + (f" ({' '.join(cost['overrides'])})" if cost["overrides"] else "")
    basis = f"pilot {cost['pilot']}" if cost["pilot"] else "the published figures and the workloads' budgets"
    out = [f"  cost of {where}, {cost['cells']} cell(s), per trial as `specsnap estimate` prices it ({basis}; "
           "docs/cost.md):"]
    out += [f"  - {note}" for note in cost["notes"]]
    if "at_n" not in cost:
        return out
    row = cost["at_n"]
    n = row["n"]
    out.append(f"    at {n} trials per cell: {row['trials']:,} trials, {row['sessions']:,} sessions, {_money(row)}")
    for a in cost["agents"]:
        if not a["paid"]:
            label = "reference policy" if a["kind"] == REFERENCE_KIND else f"replay of {a['model']}, scripted"
            out.append(f"    - {a['agent']} ({label}): {a['trials'] * n:,} trials, {a['zero_cost']}")
            continue
        out.append(f"    - {a['agent']} ({a['model']}): {a['trials'] * n:,} trials, "
                   f"{_money({k: _times(a[k], n) for k in COSTS})}")
        out += [f"      note: {note}" for note in a["notes"]]
        for w in a["workloads"]:
            each = "cost unknown" if w["cost_per_trial"] is None else (
                f"{_usd(w['cost_per_trial'], 4)} (range {_usd(w['low_per_trial'], 4)}-"
                f"{_usd(w['high_per_trial'], 4)})")
            out.append(f"      {w['workload']}: {each} a trial; {w['basis']}")
    if "at_n_test" in cost:
        t = cost["at_n_test"]
        out.append(f"    at {t['n']} (where the sign-flip test itself reaches the target): {t['trials']:,} trials, "
                   f"{_money(t)}")
    if "at_n_range" in cost:
        lo, hi = cost["at_n_range"]
        out.append(f"    over the baseline's range of n, {lo['n']} to {hi['n']}: {_money(lo)} to {_money(hi)}")
    return out
