"""Conclusions that hold at the n users can afford (issue 36, docs/statistics.md): the sign-flip test
keeps its level at every n and says when it cannot test, Holm/BH across a table, intervals that
cover, and `specsnap power` answers that match a simulation of the very test SpecSnap applies."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from sdcs_bench.pipeline import leaderboard as lb
from sdcs_bench.pipeline import power, stats
from sdcs_bench.pipeline.aggregate import leaderboard, paired_differences, to_markdown


# --- the distributions, by hand ---------------------------------------------------------------------


def test_t_quantiles_and_wilson_match_their_tables():
    for df, want in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (7, 2.3646), (19, 2.0930), (100, 1.9840)):
        assert stats.t_ppf(0.975, df) == pytest.approx(want, abs=1e-4), df
    assert stats.t_cdf(-2.0, 3) == pytest.approx(0.06966, abs=1e-5)
    lo, hi = stats.wilson(19, 404)  # the published disagreement: 19 of 404
    assert (round(lo, 3), round(hi, 3)) == (0.030, 0.072)
    assert stats.wilson(0, 5) == (0.0, pytest.approx(0.4345, abs=1e-4))  # z^2 / (n + z^2)


# --- the sign-flip test -----------------------------------------------------------------------------


def _brute_p(d: list[float]) -> float:
    """Every sign vector, by itertools (independent of the implementation's bit tricks)."""
    obs = abs(sum(d))
    hits = sum(abs(sum(s * x for s, x in zip(signs, d))) >= obs - 1e-9
               for signs in itertools.product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


def test_the_sign_flip_p_values_are_exact_by_hand():
    six = stats.paired_test([0] * 6, [1, 2, 3, 1, 2, 5], "k")
    assert six.p == 2 / 64 and six.test == "sign-flip, exact" and six.n == 6  # every difference positive
    # |1 - 2 + 3 + 1 + 2 + 5| = 10 of 14: the flipped subsets summing to <= 2 or >= 12, 6 each
    assert stats.paired_test([0] * 6, [1, -2, 3, 1, 2, 5], "k").p == 12 / 64
    assert stats.paired_test([0] * 7, [0, 1, 1, 1, 1, 1, 1], "k").p == 4 / 128  # a zero: flips that change nothing
    rng = np.random.default_rng(0)
    for n in (6, 9, 12):
        d = rng.integers(-3, 5, n).astype(float).tolist()
        assert stats.paired_test([0] * n, d, "k").p == pytest.approx(_brute_p(d)), d
    # paired: second - first, whatever the baseline's level
    assert stats.paired_test([5, 5, 5, 5, 5, 5], [6, 7, 8, 6, 7, 10], "k").p == 2 / 64


def test_the_monte_carlo_p_value_is_seeded_and_close_to_the_exact_one():
    rng = np.random.default_rng(1)
    d = rng.normal(0.4, 1, 18).round(2).tolist()
    exact = _brute_p(d)
    a = stats.paired_test([0] * 18, d, "row/a")
    assert a.test == "sign-flip, Monte Carlo (20,000 sign vectors)"
    assert a == stats.paired_test([0] * 18, d, "row/a")  # the same bytes on a rerun
    assert abs(a.p - exact) < 0.01 and a.p > 0


def test_too_few_pairs_say_so_and_deterministic_policies_keep_their_closed_form():
    two = stats.paired_test([3, 4], [5, 7], "k")
    assert two.p is None and two.test == "too few pairs (n=2; 6 needed)" and two.lo is None
    assert stats.paired_test([0] * 5, [1] * 5, "k").test == "too few pairs (n=5; 6 needed)"
    assert stats.min_pairs(0.05) == 6 and stats.min_pairs(0.01) == 8 and stats.min_pairs(0.10) == 5
    closed = stats.paired_test([4, 4], [6, 6], "k", deterministic=True)
    assert closed.test == stats.CLOSED_FORM and (closed.lo, closed.hi, closed.p) == (2, 2, None)
    d = [1, 2, 0, 3, 1, 2]
    res = stats.paired_test([0] * 6, d, "k")
    assert res.effect_size == pytest.approx(np.mean(d) / np.std(d, ddof=1))


def test_under_the_null_the_test_marks_at_most_its_level_at_every_n():
    """Each trial's net ~ Binomial(8, 0.5) in both arms: the share of studies with p <= 0.05."""
    rng = np.random.default_rng(2)
    for n in (2, 3, 5, 6, 8, 20):
        d = (rng.binomial(8, 0.5, (1500, n)) - rng.binomial(8, 0.5, (1500, n))).astype(float)
        if n < stats.min_pairs():
            assert all(stats.paired_test([0] * n, row.tolist(), "k").p is None for row in d[:50])
            continue
        p, _ = stats.sign_flip_pvalues(d, rng, 2000)
        assert (p <= 0.05).mean() <= 0.06, n
    # continuous symmetric differences: exactly floor(0.05 * 2^n) / 2^n at n = 8 (12/256)
    p, _ = stats.sign_flip_pvalues(rng.normal(0, 1, (6000, 8)))
    assert abs((p <= 0.05).mean() - 12 / 256) < 0.01


# --- many comparisons -------------------------------------------------------------------------------


def test_holm_and_bh_adjust_across_the_tested_comparisons_only():
    ps = [0.01, 0.04, None, 0.03, 0.2]
    assert stats.adjust(ps, "holm") == pytest.approx([0.04, 0.09, None, 0.09, 0.2])
    assert stats.adjust(ps, "bh") == pytest.approx([0.04, 0.16 / 3, None, 0.16 / 3, 0.2])
    assert stats.adjust(ps, "none") == ps
    with pytest.raises(ValueError, match="valid choices: none, holm, bh"):
        stats.adjust(ps, "bonferroni")


def _cards(agents: dict[str, tuple[list[int], list[int]]], kind: str = "model") -> pd.DataFrame:
    rows = []
    for agent, arms in agents.items():
        for arm, nets in zip(("Vanilla", "State_MD_Only"), arms):
            for seed, net in enumerate(nets):
                rows.append({"trial": f"{agent}{arm}{seed}", "workload": "tier_2", "arm": arm, "agent": agent,
                             "agent_kind": kind, "variant": "none", "seed": seed, "n_requirements": 8, "raw": net,
                             "net": net, "tes": float(net), "tokens": 100 + seed, "s1_edit_survived": seed % 2 == 0,
                             "expected_net": None, "matches_expected": None, "poison_survived": "", "valid": True,
                             "invalid_reasons": "", "tampered": False, "tamper_evidence": ""})
    return pd.DataFrame(rows)


def test_the_paired_table_tests_adjusts_and_says_why_it_did_not():
    up = ([3, 4, 2, 5, 3, 4, 2, 3], [5, 6, 3, 7, 4, 6, 4, 4])  # every difference positive: p = 2/256
    cards = _cards({"a": up, "b": up, "c": up, "few": ([3, 4], [5, 6])})
    paired = paired_differences(cards).query("metric == 'net'").set_index("agent")
    assert paired.loc["a", "p"] == pytest.approx(2 / 256, abs=1e-4)
    assert paired.loc["a", "p_adjusted"] == pytest.approx(3 * 2 / 256, abs=1e-4)  # Holm over the 3 tested
    assert paired.loc[["a", "b", "c"], "marked"].all() and (paired["adjust"] == "holm").all()
    assert paired.loc["few", "test"] == "too few pairs (n=2; 6 needed)" and not paired.loc["few", "marked"]
    assert paired.loc["a", "effect_size"] == pytest.approx(round(1.625 / np.std([2, 2, 1, 2, 1, 2, 2, 1], ddof=1), 2))
    none = paired_differences(cards, stats.Settings(adjust="none")).query("metric == 'net'").set_index("agent")
    assert none.loc["a", "p_adjusted"] == none.loc["a", "p"]
    md = to_markdown(leaderboard(cards), "s", paired_differences(cards))
    assert "**4 comparisons**, 3 tested, 3 marked `*`" in md and "too few pairs (n=2; 6 needed)" in md
    assert "Holm-adjusted p <= 0.05" in md and "| p | p (holm) | mark |" in md


def test_a_deterministic_reference_policy_is_its_closed_form_not_a_test():
    cards = _cards({"ref_oracle": ([8, 8, 8], [6, 6, 6])}, kind="reference policy")
    (row,) = paired_differences(cards).query("metric == 'net'").itertuples()
    assert row.test == stats.CLOSED_FORM and not row.marked and (row.lo, row.hi, row.difference) == (-2, -2, -2)
    board = leaderboard(cards).set_index("arm")
    assert board.loc["Vanilla", "net_interval"] == "[8, 8]"  # exact, from its closed form


# --- cell intervals ---------------------------------------------------------------------------------


def test_cells_carry_a_t_interval_wilson_shares_and_say_when_too_few():
    cards = _cards({"m": ([3, 4, 2, 5, 3, 4, 8, 8], [5, 6, 3])})
    board = leaderboard(cards).set_index("arm")
    van, few = board.loc["Vanilla"], board.loc["State_MD_Only"]
    lo, hi = stats.t_interval(np.array([3, 4, 2, 5, 3, 4, 8, 8], dtype=float))
    assert (van["net_lo"], van["net_hi"]) == (round(lo, 2), round(hi, 2))
    assert van["full_marks"] == 0.25
    assert (van["full_marks_lo"], van["full_marks_hi"]) == tuple(round(x, 2) for x in stats.wilson(2, 8))
    assert (van["s1_edit_survived_lo"], van["s1_edit_survived_hi"]) == tuple(round(x, 2) for x in stats.wilson(4, 8))
    assert few["net_interval"] == "n=3: too few for an interval (5 needed)" and pd.isna(few["full_marks_lo"])
    assert lb.MIN_INTERVAL_N == stats.MIN_INTERVAL_N
    cells = {r["arm"]: lb._local_cell(r) for r in json.loads(leaderboard(cards).to_json(orient="records"))}
    assert cells["State_MD_Only"]["text"] == "4.7/8 n=3 (too few for a CI)" and "lo" not in cells["State_MD_Only"]
    assert cells["Vanilla"]["text"] == f"4.6/8 [{lo:.1f},{hi:.1f}] n=8".replace(".0,", ",").replace(".0]", "]")


def test_t_intervals_cover_at_least_93_percent_from_five_trials():
    """Cells of Binomial(8, 0.5) and Binomial(8, 0.8) trials (true means 4 and 6.4)."""
    rng = np.random.default_rng(3)
    for p in (0.5, 0.8):
        for n in (5, 8):
            cells = rng.binomial(8, p, (3000, n))
            covered = np.mean([stats.interval(c, "k").covers(8 * p) for c in cells])
            assert covered >= 0.93, (p, n, covered)


def test_a_pooled_mean_resamples_within_its_workloads():
    values, clusters = [0] * 10 + [8] * 10, ["a"] * 10 + ["b"] * 10
    pooled = stats.clustered_interval(values, clusters, "pool")
    assert (pooled.mean, pooled.lo, pooled.hi) == (4, 4, 4)  # no spread within a workload: none in the pool
    rng = np.random.default_rng(4)
    values = rng.binomial(8, 0.5, 30).tolist() + rng.binomial(8, 0.8, 30).tolist()
    clusters = ["a"] * 30 + ["b"] * 30
    one = stats.clustered_interval(values, clusters, "pool")
    assert one == stats.clustered_interval(values, clusters, "pool") and one.lo < np.mean(values) < one.hi
    assert stats.clustered_interval([1, 2, 3], ["a", "a", "b"], "pool").lo is None  # too few


# --- power ------------------------------------------------------------------------------------------


def _simulate_binary(n: int, p10: float, p01: float, studies: int, seed: int) -> float:
    """The share of studies of n pairs of 0/1 outcomes that SpecSnap's sign-flip test marks."""
    rng = np.random.default_rng(seed)
    u = rng.random((studies, n))
    d = np.where(u < p10, 1.0, np.where(u < p10 + p01, -1.0, 0.0))
    p, _ = stats.sign_flip_pvalues(d, rng, 2000)
    return float((p <= 0.05).mean())


def test_power_at_a_stated_baseline_is_the_two_proportion_answer_and_the_test_reaches_it():
    report = power.power_report(0.1, metric="full_marks", baseline="0.5")
    assert abs(report.n - 388) <= 38.8 and report.n == 388
    assert any("independent cells" in a for a in report.assumptions)
    # the sign-flip test on 388 pairs of independent Bernoulli(0.5) and Bernoulli(0.6) outcomes
    simulated = _simulate_binary(report.n, 0.6 * 0.5, 0.5 * 0.4, 1500, 5)
    assert abs(simulated - report.target) <= 0.05 and abs(simulated - report.test_power) <= 0.04


def test_a_published_baseline_prints_the_range_its_wilson_interval_implies():
    report = power.power_report(0.1, metric="full_marks", baseline="19/404")
    lo, hi = stats.wilson(19, 404)
    assert report.n_range == [power.two_proportion_n(lo, lo + 0.1, 0.05, 0.8),
                              power.two_proportion_n(hi, hi + 0.1, 0.05, 0.8)]
    assert report.n_range[0] < report.n < report.n_range[1]


def test_power_from_a_pilots_discordant_pairs_is_mcnemar_and_matches_the_test(tmp_path):
    rng = np.random.default_rng(6)
    u = rng.random(300)
    base = (u >= 0.6).astype(int)  # pilot: compared-only 0.3, baseline-only 0.1 (discordant 0.4)
    comp = ((u < 0.3) | (u >= 0.7)).astype(int)
    run = tmp_path / "pilot"
    run.mkdir()
    pd.DataFrame([{"trial": f"{arm}{s}", "workload": "w", "arm": arm, "agent": "m", "variant": "none",
                   "continuation": "reset", "seed": s, "net": 8 * int(v), "n_requirements": 8, "valid": True}
                  for s in range(300) for arm, v in (("Vanilla", base[s]), ("State_MD_Only", comp[s]))]
                 ).to_csv(run / "scorecards.csv", index=False)
    report = power.power_report(0.15, metric="full_marks", run_dir=run)
    assert report.method.startswith("McNemar")
    q10, q01 = report.parameters["compared-only rate"], report.parameters["baseline-only rate"]
    assert report.n == power.mcnemar_n(q10, q01, 0.05, 0.8)
    simulated = _simulate_binary(report.n, q10, q01, 2000, 7)
    assert abs(simulated - report.test_power) <= 0.03 and abs(simulated - 0.8) <= 0.05


def test_power_for_a_count_from_a_pilot_matches_a_simulation_of_the_sign_flip_test(tmp_path):
    """Pilot: net ~ Binomial(8, 0.5) against Binomial(8, 0.65), 400 seeds. The t-corrected answer
    and the test's own n, each checked against fresh studies from the true distribution."""
    rng = np.random.default_rng(8)
    base, comp = rng.binomial(8, 0.5, 400), rng.binomial(8, 0.65, 400)
    run = tmp_path / "pilot"
    run.mkdir()
    pd.DataFrame([{"trial": f"{arm}{s}", "workload": "w", "arm": arm, "agent": "m", "variant": "none",
                   "continuation": "reset", "seed": s, "net": int(v), "n_requirements": 8, "valid": True}
                  for s in range(400) for arm, v in (("Vanilla", base[s]), ("State_MD_Only", comp[s]))]
                 ).to_csv(run / "scorecards.csv", index=False)
    report = power.power_report(1.2, metric="net", run_dir=run)
    assert report.method.startswith("t-corrected") and any("SD" in a for a in report.assumptions)

    def detected(n: int) -> float:
        g = np.random.default_rng(n)
        d = (g.binomial(8, 0.65, (2000, n)) - g.binomial(8, 0.5, (2000, n))).astype(float)
        p, _ = stats.sign_flip_pvalues(d, g, 2000)
        return float((p <= 0.05).mean())

    assert abs(detected(report.n) - report.test_power) <= 0.05
    assert abs(detected(report.n_test) - report.target) <= 0.05


def test_the_exact_binary_power_is_the_simulated_one_at_small_n():
    for n in (6, 9, 12):
        exact = power.signflip_binary_power(n, 0.4, 0.1, 0.05)
        assert abs(exact - _simulate_binary(n, 0.4, 0.1, 4000, n)) <= 0.025, n
    assert power.signflip_binary_power(5, 0.9, 0.0, 0.05) == 0  # below 6 pairs nothing can be marked
    assert power.signflip_binary_power(6, 1.0, 0.0, 0.05) == pytest.approx(1.0)  # all six discordant one way


def test_the_power_command_states_its_assumptions():
    from conftest import specsnap

    out = specsnap("power", "--metric", "full_marks", "--baseline-rate", "0.5", "--delta", "0.1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "trials per cell (two-proportion formula): 388" in text and "assumptions:" in text
    assert "power of SpecSnap's sign-flip test at n = 388" in text


def test_a_bad_adjustment_stops_the_plan_with_one_error_naming_the_choices(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--results", str(tmp_path),
                             "--override", "statistics.adjust=bonferroni"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "statistics.adjust is 'bonferroni': valid choices: none, holm, bh" in result.stderr
    assert not any(tmp_path.iterdir())  # nothing planned
