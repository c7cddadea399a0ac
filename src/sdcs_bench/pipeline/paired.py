"""Paired differences (docs/statistics.md): each arm against Vanilla and each continuation mode
against reset, over trials matched on everything else (the seed included), each tested by the
sign-flip test and adjusted across its table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd

from sdcs_bench.pipeline import stats
from sdcs_bench.trial.components import REFERENCE_KIND


# Paired differences (docs/statistics.md): each axis's rows against its baseline, over trials that
# match on everything else (the seed included). The axis, its baseline, and what a pair shares.
PAIRED_AXES = (("arm", "Vanilla"), ("continuation", "reset"))


PAIRED_METRICS = ("net", "tokens")


PAIRED_COLUMNS = ["axis", "baseline", "compared", "metric", "workload", "variant", "continuation", "arm", "agent",
                  "agent_kind", "pairs", "baseline_mean", "compared_mean", "difference", "sd", "effect_size", "lo", "hi",
                  "excludes_zero", "test", "p", "p_adjusted", "adjust", "marked"]


def matched_pairs(cards: pd.DataFrame, metrics: tuple[str, ...]
                  ) -> Iterator[tuple[str, str, str, dict[str, Any], pd.DataFrame]]:
    """Each comparison of :data:`PAIRED_AXES` in ``cards`` (the trials to pair: see :func:`stats.counted`):
    ``(axis, baseline, compared, what the pairs share, pairs)``, the pairs matched on everything but
    the axis, the seed included, with each metric beside its ``<metric>_base``."""
    cards = cards.assign(continuation=cards.get("continuation", "reset"))
    for axis, base in PAIRED_AXES:
        if base not in set(cards[axis]) or cards[axis].nunique() < 2:
            continue
        fixed = [c for c in ("workload", "variant", "continuation", "arm", "agent", "agent_kind") if c != axis and c in cards]
        key = [*fixed, "seed"]
        left = cards[cards[axis] == base].drop_duplicates(key)[[*key, *metrics]]
        for compared, part in cards[cards[axis] != base].groupby(axis, sort=True):
            joined = part.drop_duplicates(key).merge(left, on=key, how="inner", suffixes=("", "_base"))
            for group, pairs in joined.groupby(fixed, sort=True):
                yield axis, base, compared, dict(zip(fixed, group)), pairs


def paired_differences(scorecards: pd.DataFrame, settings: stats.Settings = stats.Settings()) -> pd.DataFrame:
    """For each arm against Vanilla (and each continuation mode against reset), within every
    workload, variant (a cut point is a variant), the other axis and agent: the mean of the paired
    differences ``compared - baseline`` over the seeds both have a valid trial for, their SD and
    effect size, the t-interval (``lo``, ``hi``; ``excludes_zero``) and the two-sided sign-flip test
    (:func:`stats.paired_test`): ``p``, and ``p_adjusted`` across the table's tests (one table per
    axis and metric; ``statistics.adjust``: holm by default). ``marked``: the adjusted p is at most
    1 - level. A comparison of too few pairs, or of a deterministic reference policy (its closed
    form), has no test: ``test`` says which."""
    if scorecards.empty:
        return pd.DataFrame(columns=PAIRED_COLUMNS)
    rows = []
    counted = scorecards[stats.counted(scorecards)]
    if "expected_mean" not in counted:
        counted = counted.assign(expected_mean=float("nan"))
    for axis, base, compared, where, pairs in matched_pairs(counted, (*PAIRED_METRICS, "expected_mean")):
        fixed = where.get("agent_kind") == REFERENCE_KIND and bool(
            pairs["expected_mean"].isna().all() and pairs["expected_mean_base"].isna().all())
        for metric in PAIRED_METRICS:
            got = pairs[[f"{metric}_base", metric]].dropna()
            label = "/".join(map(str, (axis, compared, *where.values(), metric)))
            res = stats.paired_test(got[f"{metric}_base"].tolist(), got[metric].tolist(), label, settings, fixed)
            rows.append({"axis": axis, "baseline": base, "compared": compared, "metric": metric, **where,
                         axis: compared, "pairs": res.n, "baseline_mean": got[f"{metric}_base"].mean(),
                         "compared_mean": got[metric].mean(), "difference": res.mean, "sd": res.sd,
                         "effect_size": res.effect_size, "lo": res.lo, "hi": res.hi,
                         "excludes_zero": res.excludes_zero, "test": res.test, "p": res.p})
    out = pd.DataFrame(rows, columns=PAIRED_COLUMNS)
    out["adjust"] = settings.adjust
    out["p_adjusted"] = None
    for _, table in out.groupby(["axis", "metric"], sort=False):
        out.loc[table.index, "p_adjusted"] = pd.Series(stats.adjust(table["p"].tolist(), settings.adjust),
                                                       index=table.index, dtype=object)
    out["p_adjusted"] = out["p_adjusted"].astype(float)
    out["marked"] = out["p_adjusted"].le(settings.alpha + 1e-12)
    return out.round({"baseline_mean": 2, "compared_mean": 2, "difference": 2, "sd": 2, "effect_size": 2, "lo": 2,
                      "hi": 2, "p": 4, "p_adjusted": 4})
