"""The statistics checked against truth inside a study (docs/statistics.md, "Checked against truth").

A study of a stochastic reference policy (``policy.keep``: a known probability per arm, paired or
independent draws; :mod:`sdcs_bench.agents.stochastic`) knows, for each row of its paired table,
the true distribution of the row's differences. So the table can be judged against it:

- **null** rows, whose two arms keep each requirement with the same probability (independent
  draws: two samples of one distribution): no difference is real. The share of them the test
  calls significant (raw p at most ``1 - level``) must be at most the level within its
  Monte-Carlo error; the marks (after the table's adjustment) can only be fewer.
- **effect** rows, whose arms' probabilities differ: a planted difference. The share the test
  detects (raw p) must match the power predicted for it, within its Monte-Carlo error. The
  prediction is the very test SpecSnap applies (:func:`stats.sign_flip_pvalues`) run on studies
  drawn by the policy's own mechanism (fresh seeds, the row's number of pairs and the workload's
  requirements): no formula stands between the truth and the check.

The ``null_check`` and ``effect_check`` studies are built for it; the ``intervals`` study carries
effect rows too. The aggregate prints the lines (:func:`check_lines`) and writes them into the
leaderboard and the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdcs_bench.agents.stochastic import dropped, keep_probability
from sdcs_bench.pipeline import stats

SIMULATED_STUDIES = 2000  # per row: the predicted power's own Monte-Carlo sd is at most 0.011
FIRST_SEED = 10**9  # the simulated studies' seeds: far from any a study runs


@dataclass(frozen=True)
class TruthCheck:
    """One kind of row judged against its truth: ``rows`` of them, ``significant`` with a raw p at
    most the level, ``marked`` after the adjustment; ``expected`` the share that should be
    significant (the level under the null, the mean predicted power under an effect) and
    ``allowed`` the Monte-Carlo margin around it (two standard errors of the share)."""

    kind: str
    rows: int
    significant: int
    marked: int
    expected: float
    allowed: float
    level: float

    @property
    def share(self) -> float:
        return self.significant / self.rows

    @property
    def passed(self) -> bool:
        if self.kind == "null":
            return self.share <= self.expected + self.allowed
        return abs(self.share - self.expected) <= self.allowed

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        alpha = f"{1 - self.level:g}"
        if self.kind == "null":
            return (f"Checked against a known null: {verdict}. {self.significant} of {self.rows} rows where no "
                    f"difference is real have a raw p <= {alpha} (share {self.share:.3f}; at most {self.expected:g} "
                    f"+ {self.allowed:.3f} Monte-Carlo margin allowed); {self.marked} marked after adjustment.")
        return (f"Checked against a known effect: {verdict}. {self.significant} of {self.rows} rows with a planted "
                f"difference have a raw p <= {alpha} (share {self.share:.3f}); the power predicted for them is "
                f"{self.expected:.3f} (the sign-flip test on {SIMULATED_STUDIES:,} studies per row drawn by the policy "
                f"itself), {self.allowed:.3f} Monte-Carlo margin allowed; {self.marked} marked after adjustment.")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "expected": round(self.expected, 4), "allowed": round(self.allowed, 4),
                "share": round(self.share, 4), "passed": self.passed}


def _kept(policy: Mapping[str, Any], arm: str, seeds: range, requirements: Sequence[str]) -> np.ndarray:
    return np.array([len(requirements) - len(dropped(policy, arm, s, requirements)) for s in seeds], dtype=float)


def predicted_power(policy: Mapping[str, Any], baseline: str, compared: str, requirements: Sequence[str],
                    pairs: int, settings: stats.Settings, studies: int = SIMULATED_STUDIES) -> float:
    """How often the sign-flip test, at the row's level, calls a difference significant in studies
    of ``pairs`` seeds drawn by the policy under the two arms (a row's net is its kept count)."""
    if pairs < stats.min_pairs(settings.alpha):
        return 0.0
    seeds = range(FIRST_SEED, FIRST_SEED + studies * pairs)
    diffs = (_kept(policy, compared, seeds, requirements) - _kept(policy, baseline, seeds, requirements))
    p, _ = stats.sign_flip_pvalues(diffs.reshape(studies, pairs), stats.rng(settings, "truth-check"))
    return float(np.mean(p <= settings.alpha + 1e-12))


def truth_checks(paired: pd.DataFrame, truths: Mapping[tuple[str, str], tuple[Mapping[str, Any], Sequence[str]]],
                 settings: stats.Settings) -> list[TruthCheck]:
    """The paired table's net rows of each arm against its baseline, for the (agent, workload)
    pairs in ``truths`` (a stochastic policy and the workload's requirement ids), judged against
    their known truth: a null check and an effect check, each where such rows exist."""
    if paired.empty:
        return []
    rows = paired[(paired["axis"] == "arm") & (paired["metric"] == "net") & paired["p"].notna()]
    null: list[tuple[bool, bool]] = []
    effect: list[tuple[bool, bool, float]] = []
    for row in rows.itertuples(index=False):
        truth = truths.get((row.agent, row.workload))
        if truth is None:
            continue
        policy, requirements = truth
        p_base, p_comp = keep_probability(policy, row.baseline), keep_probability(policy, row.compared)
        if p_base is None or p_comp is None:
            continue
        significant, marked = bool(row.p <= settings.alpha + 1e-12), bool(row.marked)
        if p_base == p_comp:
            null.append((significant, marked))
        else:
            power = predicted_power(policy, row.baseline, row.compared, requirements, int(row.pairs), settings)
            effect.append((significant, marked, power))
    checks = []
    if null:
        m, alpha = len(null), settings.alpha
        checks.append(TruthCheck("null", m, sum(s for s, _ in null), sum(k for _, k in null), alpha,
                                 2 * math.sqrt(alpha * (1 - alpha) / m), settings.level))
    if effect:
        m = len(effect)
        powers = [w for *_, w in effect]
        spread = math.sqrt(sum(w * (1 - w) for w in powers)) / m  # the share's sd, rows independent
        checks.append(TruthCheck("effect", m, sum(s for s, _, _ in effect), sum(k for _, k, _ in effect),
                                 sum(powers) / m, 2 * spread + 1 / math.sqrt(SIMULATED_STUDIES), settings.level))
    return checks
