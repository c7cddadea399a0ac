"""The leaderboard's computation: one row per (workload, arm, agent, variant, continuation) from
the scorecards, its means over the valid trials and each mean's interval (docs/statistics.md)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from sdcs_bench.pipeline import stats
from sdcs_bench.pipeline.labels import handoff_label, source_label
from sdcs_bench.pipeline.rows import HANDOFF_MEANS, LIST_PRICE_COLUMN, RESUME_MEANS, STANDARDS_MEANS
from sdcs_bench.trial.components import REFERENCE_KIND, REPLAY_KIND


GROUP = ["workload", "arm", "agent", "agent_kind", "variant", "continuation"]


# The scores each leaderboard row gives an interval for, and the digits they are rounded to: a
# t-interval for the means of counts and scores, Wilson for the shares (docs/statistics.md).
INTERVAL_METRICS = {"raw": 2, "net": 2, "tes": 2, "tokens": 0, "tests_passed": 2, "cost_usd": 4, "full_marks": 2,
                    "s1_edit_survived": 2}


SHARE_METRICS = ("full_marks", "s1_edit_survived")  # a 0/1 outcome per trial


def make_board(scorecards: pd.DataFrame, settings: stats.Settings = stats.Settings()) -> pd.DataFrame:
    """One row per (workload, arm, agent, variant). Scores are means over the group's *valid*
    trials: a trial whose integrity check failed (a cleaved edit committed, an edit the watcher
    never saw) measured something other than the protocol, so it is counted in ``invalid`` and
    kept out of every mean. A *tampered* trial (the code under test forged its verdicts) is the
    agent's doing: it scores zero, counts in every mean, and is counted in ``tampered``."""
    # Columns later versions added: a scorecards table written before them still aggregates.
    missing = {"tampered": False, "family": "synthetic", "model": "none", "harness": "reference", "predicted_resolved": float("nan"),
               "turns": float("nan"), "baseline_ok": float("nan"), **dict.fromkeys(STANDARDS_MEANS, float("nan")),
               "std_expected_better_share": float("nan"), "tests_passed": float("nan"),
               "tests_total": float("nan"), "expected_tests": float("nan"), "expected_abstention": None, "abstention": None,
               "withheld_k": float("nan"), "withhold_mode": None, "withhold_when": None, "cut_rule": None,
               "successor_source": "", "successor_harness": "", "successor_model": "",
               **dict.fromkeys(RESUME_MEANS, float("nan")), "continuation": "reset",
               "expected_mean": float("nan"), "cost_usd": float("nan"), "cost_unpriced_tokens": 0,
               "budget_exhausted": False, "limit_exceeded": "",
               **dict.fromkeys(HANDOFF_MEANS, float("nan"))}
    scorecards = scorecards.assign(**{col: value for col, value in missing.items() if col not in scorecards})
    counted = scorecards[stats.counted(scorecards)]  # (valid and not stopped by the budget)
    stopped = scorecards["budget_exhausted"].fillna(False).astype(bool)
    # A trial the budget stopped (docs/cost.md) is neither a result nor invalid: counted apart, in no mean.
    # So is a trial a limit ended (docs/sandboxes.md): the agent hit its box's walls; counted apart.
    limited = scorecards["limit_exceeded"].fillna("").astype(str) != ""
    scorecards = scorecards.assign(valid=scorecards["valid"].astype(bool) | stopped | limited, budget_exhausted=stopped,
                                   limited=limited, tampered=scorecards["tampered"].astype(bool))
    counts = scorecards.groupby(GROUP, sort=True).agg(
        trials=("trial", "count"), invalid=("valid", lambda v: int((~v).sum())),
        budget_exhausted=("budget_exhausted", "sum"), limit_exceeded=("limited", "sum"),
        tampered=("tampered", lambda v: int(v.sum())),
        tamper_evidence=("tamper_evidence", lambda s: " | ".join(sorted({e.split(" | ")[0] for e in s.fillna("") if e}))),
        n_requirements=("n_requirements", "first"),
        # (the mean of the trials' closed forms: one value for a deterministic policy, the mean of its
        # seeds' draws for a stochastic one, whose distribution's mean is ``expected_mean``)
        expected_net=("expected_net", "mean"), expected_mean=("expected_mean", "first"),
        family=("family", "first"), model=("model", "first"), harness=("harness", "first"),
        predicted_resolved=("predicted_resolved", "first"),
        matches_expected=("matches_expected", lambda s: bool(s.all()) if s.notna().all() else None),
        defects_survived=("poison_survived", lambda s: " | ".join(sorted({v or "none" for v in s.fillna("")}))),
        std_expected_better_share=("std_expected_better_share", "first"),
        tests_total=("tests_total", "first"), expected_tests=("expected_tests", "first"),
        expected_abstention=("expected_abstention", "first"), withheld_k=("withheld_k", "first"),
        abstention=("abstention", lambda s: " | ".join(sorted({v for v in s.dropna()})) or None),
        withhold_mode=("withhold_mode", "first"), withhold_when=("withhold_when", "first"),
        cut_rule=("cut_rule", "first"), successor_source=("successor_source", "first"),
        successor_harness=("successor_harness", "first"), successor_model=("successor_model", "first"),
        # what the row's trials cost in all (valid or not: the money is spent), unknown when one's is
        cost_usd_total=("cost_usd", lambda v: v.sum() if v.notna().all() else float("nan")),
        cost_unpriced_tokens=("cost_unpriced_tokens", "sum"),
    )
    scores = counted.groupby(GROUP, sort=True).agg(
        raw=("raw", "mean"), net=("net", "mean"), tes=("tes", "mean"), tokens=("tokens", "mean"),
        turns=("turns", "mean"), baseline_kept=("baseline_ok", "mean"),
        s1_edit_survived=("s1_edit_survived", _known_mean),
        **{col: (col, _known_mean) for col in STANDARDS_MEANS},
        tests_passed=("tests_passed", "mean"),
        cost_usd=("cost_usd", lambda v: v.mean() if v.notna().all() else float("nan")),
        **{col: (col, _known_mean) for col in RESUME_MEANS},
        **{col: (col, _known_mean) for col in HANDOFF_MEANS},
    )
    board = counts.join(scores, how="left").join(_intervals(counted, settings),
                                                  how="left").reset_index()
    board["n"] = board["n"].fillna(0).astype(int)
    board["net_interval"] = interval_texts(board, "n", "net", "net_lo", "net_hi")
    board = _versus_vanilla(board).astype({"predicted_resolved": "Int64"})  # a count, empty for the tiers
    # A handoff names both agents: "<first>, then <successor>" (one label when both are the same kind).
    board["source"] = [handoff_label(source_label(kind, model, harness), then)
                       for kind, model, harness, then in board[["agent_kind", "model", "harness", "successor_source"]]
                       .fillna("").itertuples(index=False)]
    cols = [*GROUP, "source", "model", "harness", "successor_model", "successor_harness", "family", "trials", "invalid", "tampered", "budget_exhausted",
            "limit_exceeded", "n",
            "n_requirements", "raw", "net",
            "net_interval", "full_marks", *(f"{m}_{end}" for m in INTERVAL_METRICS for end in ("lo", "hi")), "tes", "tokens",
            "cost_usd", "cost_usd_total", "cost_unpriced_tokens", "turns",
            "baseline_kept", "predicted_resolved", "tokens_vs_vanilla", "resolved_vs_vanilla",
            "s1_edit_survived", "expected_net", "expected_mean", "matches_expected", "defects_survived", *STANDARDS_MEANS,
            "std_expected_better_share", "tamper_evidence", "tests_passed", "tests_total", "expected_tests",
            "withheld_k", "withhold_mode", "withhold_when", "abstention", "expected_abstention", "cut_rule",
            *RESUME_MEANS, *HANDOFF_MEANS]
    board = board.astype({"withheld_k": "Int64", "tests_total": "Int64", "expected_tests": "Int64"})
    return board[cols].round({"raw": 2, "net": 2, "tes": 2, "tokens": 0, "turns": 1, "baseline_kept": 2,
                              "expected_net": 2, "expected_mean": 2, "full_marks": 2, "cost_usd": 4, "cost_usd_total": 4,
                              **{f"{m}_{end}": INTERVAL_METRICS[m] for m in INTERVAL_METRICS for end in ("lo", "hi")},
                              "tokens_vs_vanilla": 2, "resolved_vs_vanilla": 2, "s1_edit_survived": 2,
                              "std_decisions": 1, "std_better_share": 4, "std_followed_standard_share": 4,
                              "tests_passed": 2, "resume_reached": 2, "resume_calls": 1, "resume_tokens": 0,
                              "resume_tool_events": 1, "resume_reread_share": 2, "handoff_calls": 1,
                              "handoff_tokens": 0, "context_tokens": 0, "invalid_notes": 2})


def interval_texts(frame: pd.DataFrame, n: str, mean: str, lo: str, hi: str) -> list[str]:
    """Each row's interval in words (:meth:`stats.Interval.text`), from its columns (empty: None)."""
    cols = frame[[n, mean, lo, hi]]
    return [stats.Interval(int(k), m, a, b).text() for k, m, a, b in
            cols.astype(object).where(cols.notna(), None).itertuples(index=False)]


def _deterministic(kind: str, part: pd.DataFrame) -> bool:
    """A row of a deterministic reference policy: its trials land on closed forms (no distribution)."""
    return kind == REFERENCE_KIND and ("expected_mean" not in part or bool(part["expected_mean"].isna().all()))


def _intervals(valid: pd.DataFrame, settings: stats.Settings) -> pd.DataFrame:
    """Per row (over its valid trials): n, the share with full marks, and each metric's interval
    bounds (:func:`stats.interval`; none below its n, but a deterministic reference policy's exact
    zero-width one)."""
    cols = ["n", "full_marks", *(f"{m}_{end}" for m in INTERVAL_METRICS for end in ("lo", "hi"))]
    keys, out = [], []
    valid = valid.assign(full_marks=(valid["net"] == valid["n_requirements"]).astype(float))
    for key, part in valid.groupby(GROUP, sort=True):
        row: dict[str, Any] = {"n": len(part), "full_marks": float(part["full_marks"].mean())}
        fixed = _deterministic(key[GROUP.index("agent_kind")], part)
        for metric in INTERVAL_METRICS:
            values = part[metric].tolist() if metric in part else []
            if metric == "cost_usd" and part[metric].isna().any():
                values = []  # a cost unknown for one trial is unknown for the row: no interval either
            kind = "share" if metric in SHARE_METRICS else "mean"
            iv = stats.interval(values, "/".join(map(str, key)) + f"/{metric}", settings, kind, fixed)
            row[f"{metric}_lo"], row[f"{metric}_hi"] = iv.lo, iv.hi
        keys.append(key)
        out.append(row)
    index = pd.MultiIndex.from_tuples(keys, names=GROUP)
    return pd.DataFrame(out, index=index, columns=cols).astype(float)


def _known_mean(values: pd.Series) -> float | None:
    """The mean of the values a row's trials have (None where none has one)."""
    return values.dropna().mean() if values.notna().any() else None


def _versus_vanilla(board: pd.DataFrame) -> pd.DataFrame:
    """Each row's mean tokens and mean requirements passed (bugs resolved, on a real repository) as
    a ratio to the same agent's Vanilla row on the same workload and variant in this study, as the
    original study reported its repository runs; empty where there is no Vanilla row or its value
    is 0 (a reference policy spends no tokens)."""
    keys = ["workload", "agent", "agent_kind", "variant", "continuation"]
    vanilla = board.loc[board["arm"] == "Vanilla", [*keys, "tokens", "raw"]]
    joined = board.merge(vanilla.rename(columns={"tokens": "tokens_vanilla", "raw": "raw_vanilla"}), on=keys,
                         how="left")

    def ratio(num: str, den: str) -> pd.Series:
        den_values = joined[den].where(joined[den] > 0)
        return (joined[num] / den_values).astype(float)

    return board.assign(tokens_vs_vanilla=ratio("tokens", "tokens_vanilla"), resolved_vs_vanilla=ratio("raw", "raw_vanilla"))


def with_list_prices(board: pd.DataFrame, scorecards: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with each replay row's ``hypothetical_list_usd``: its trials' replayed calls at
    list prices, summed (unknown where one's is); empty on every other row (they paid what they cost)."""
    if board.empty or scorecards.empty or LIST_PRICE_COLUMN not in scorecards:
        return board.assign(**{LIST_PRICE_COLUMN: float("nan")})
    cards = scorecards[scorecards["agent_kind"] == REPLAY_KIND]
    if "continuation" not in cards:  # (scorecards written before continuation modes: all reset)
        cards = cards.assign(continuation="reset")
    if cards.empty:
        return board.assign(**{LIST_PRICE_COLUMN: float("nan")})
    listed = cards.groupby(GROUP, sort=True)[LIST_PRICE_COLUMN].agg(
        lambda v: round(float(v.sum()), 4) if v.notna().all() else float("nan")).rename(LIST_PRICE_COLUMN)
    out = board.drop(columns=[LIST_PRICE_COLUMN], errors="ignore").merge(listed.reset_index(), on=GROUP, how="left")
    return out.set_axis(board.index)
