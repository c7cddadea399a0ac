"""The statistics checked against truth inside a study (docs/statistics.md, "Checked against truth").

A study of a stochastic reference policy (``policy.keep``: a known probability per arm, paired or
independent draws; :mod:`sdcs_bench.agents.stochastic`) knows, for each row of its paired table,
the true distribution of the row's differences. So the table can be judged against it:

- **null** rows, whose two arms keep each requirement with the same probability (independent
  draws: two samples of one distribution): no difference is real.
- **effect** rows, whose arms' probabilities differ: a planted difference.

Each kind is judged against the same table simulated :data:`SIMULATED_STUDIES` times (:func:`simulate`):
the policy's own draw function at fresh seeds, every row of a simulated table drawn from the same
seeds, as the study draws every row from its seeds 0..n-1, so rows that share an arm's draws are as
dependent as the study's; on each, the very test SpecSnap applies (:func:`stats.sign_flip_pvalues`).
Under the null the test's false-positive rate there must not pass the level and the study's count of
significant rows must not pass what 99% of the simulated tables show; under an effect the count must
lie within their central 99%. No formula and no independence stand between the truth and the check.

The ``null_check`` and ``effect_check`` studies are built for it; the ``intervals`` study carries
effect rows too. The aggregate prints each :meth:`TruthCheck.line` and writes them into the
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
from sdcs_bench.trial.components import Policy

SIMULATED_STUDIES = 2000  # per row: the predicted power's own Monte-Carlo sd is at most 0.011
FIRST_SEED = 10**9  # the simulated studies' seeds: far from any a study runs


@dataclass(frozen=True)
class TruthCheck:
    """One kind of row judged against its truth: ``rows`` of them, ``significant`` with a raw p at
    most the level, ``marked`` after the adjustment. The truth is the same table simulated
    :data:`SIMULATED_STUDIES` times, its rows drawn together as the study draws them (the same seeds
    for every row, so rows that share an arm's draws are as dependent as in the study): ``expected``
    is the share of rows the test calls significant there (under the null: the test's real
    false-positive rate at this design, which must not pass the level), and ``low``..``high`` the
    counts of significant rows 99% of those tables fall within."""

    kind: str
    rows: int
    significant: int
    marked: int
    expected: float
    low: int
    high: int
    level: float

    @property
    def share(self) -> float:
        return self.significant / self.rows

    @property
    def alpha(self) -> float:
        return 1 - self.level

    @property
    def passed(self) -> bool:
        if self.kind == "null":  # (the test keeps its level here, and this table is not improbably marked)
            margin = 2 * math.sqrt(self.alpha * (1 - self.alpha) / SIMULATED_STUDIES)  # (the simulated rate's own error)
            return self.expected <= self.alpha + margin and self.significant <= self.high
        return self.low <= self.significant <= self.high

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        alpha = f"{self.alpha:g}"
        simulated = f"{SIMULATED_STUDIES:,} tables like this one, drawn by the policy itself"
        if self.kind == "null":
            return (f"Checked against a known null: {verdict}. {self.significant} of {self.rows} rows where no "
                    f"difference is real have a raw p <= {alpha}; in {simulated}, the test calls a share "
                    f"{self.expected:.3f} of such rows significant (at most {alpha} allowed) and at most {self.high} "
                    f"of {self.rows} in 99% of them; {self.marked} marked after adjustment.")
        return (f"Checked against a known effect: {verdict}. {self.significant} of {self.rows} rows with a planted "
                f"difference have a raw p <= {alpha}; in {simulated}, the test's power is {self.expected:.3f} and "
                f"99% of them detect {self.low} to {self.high} of {self.rows}; {self.marked} marked after adjustment.")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "expected": round(self.expected, 4), "share": round(self.share, 4),
                "passed": self.passed}


@dataclass(frozen=True)
class _Row:
    policy: Policy | Mapping[str, Any]
    baseline: str
    compared: str
    requirements: tuple[str, ...]
    pairs: int


def _kept(policy: Mapping[str, Any], arm: str, seeds: Sequence[int], requirements: Sequence[str]) -> np.ndarray:
    return np.array([len(requirements) - len(dropped(policy, arm, s, requirements)) for s in seeds], dtype=float)


def simulate(rows: Sequence[_Row], settings: stats.Settings, studies: int = SIMULATED_STUDIES) -> np.ndarray:
    """Which rows the sign-flip test calls significant (raw p at most 1 - level) in each of
    ``studies`` simulated tables (rows x studies, booleans). Table k uses the seeds FIRST_SEED +
    k * pairs + j for every row, as a study uses its seeds 0..n-1 for every row: an arm's draws are
    shared by every row that has it, so the rows are exactly as dependent as the study's."""
    longest = max(r.pairs for r in rows)
    kept: dict[tuple, np.ndarray] = {}  # (policy, arm, requirements, pairs) -> studies x pairs

    def draws(row: _Row, arm: str) -> np.ndarray:
        key = (repr(sorted(row.policy.items()) if isinstance(row.policy, Mapping) else row.policy), arm,
               row.requirements, row.pairs)
        if key not in kept:
            seeds = (FIRST_SEED + np.arange(studies)[:, None] * longest + np.arange(row.pairs)[None, :]).ravel()
            kept[key] = _kept(row.policy, arm, seeds.tolist(), row.requirements).reshape(studies, row.pairs)
        return kept[key]

    out = np.zeros((len(rows), studies), dtype=bool)
    for i, row in enumerate(rows):
        if row.pairs < stats.min_pairs(settings.alpha):
            continue
        p, _ = stats.sign_flip_pvalues(draws(row, row.compared) - draws(row, row.baseline),
                                       stats.rng(settings, "truth-check"))
        out[i] = p <= settings.alpha + 1e-12
    return out


def predicted_power(policy: Mapping[str, Any], baseline: str, compared: str, requirements: Sequence[str],
                    pairs: int, settings: stats.Settings, studies: int = SIMULATED_STUDIES) -> float:
    """How often the sign-flip test, at the row's level, calls a difference significant in studies
    of ``pairs`` seeds drawn by the policy under the two arms (a row's net is its kept count)."""
    row = _Row(policy, baseline, compared, tuple(requirements), pairs)
    return float(simulate([row], settings, studies).mean())


def _judge(kind: str, rows: list[_Row], observed: list[tuple[bool, bool]], settings: stats.Settings) -> TruthCheck:
    sig = simulate(rows, settings)
    counts = sig.sum(axis=0)
    low, high = (int(np.quantile(counts, q, method="inverted_cdf")) for q in (0.005, 0.995))
    if kind == "null":
        low, high = 0, int(np.quantile(counts, 0.99, method="inverted_cdf"))
    return TruthCheck(kind, len(rows), sum(s for s, _ in observed), sum(k for _, k in observed), float(sig.mean()),
                      low, high, settings.level)


def truth_checks(paired: pd.DataFrame, truths: Mapping[tuple[str, str], tuple[Mapping[str, Any], Sequence[str]]],
                 settings: stats.Settings) -> list[TruthCheck]:
    """The paired table's net rows of each arm against its baseline, for the (agent, workload)
    pairs in ``truths`` (a stochastic policy and the workload's requirement ids), judged against
    their known truth: a null check and an effect check, each where such rows exist."""
    if paired.empty:
        return []
    table = paired[(paired["axis"] == "arm") & (paired["metric"] == "net") & paired["p"].notna()]
    kinds: dict[str, tuple[list[_Row], list[tuple[bool, bool]]]] = {"null": ([], []), "effect": ([], [])}
    for row in table.itertuples(index=False):
        truth = truths.get((row.agent, row.workload))
        if truth is None:
            continue
        policy, requirements = truth
        p_base, p_comp = keep_probability(policy, row.baseline), keep_probability(policy, row.compared)
        if p_base is None or p_comp is None:
            continue
        rows, observed = kinds["null" if p_base == p_comp else "effect"]
        rows.append(_Row(policy, row.baseline, row.compared, tuple(requirements), int(row.pairs)))
        observed.append((bool(row.p <= settings.alpha + 1e-12), bool(row.marked)))
    return [_judge(kind, rows, observed, settings) for kind, (rows, observed) in kinds.items() if rows]
