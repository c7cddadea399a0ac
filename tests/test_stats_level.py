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
from sdcs_bench.pipeline.board import make_board
from sdcs_bench.pipeline.markdown import to_markdown
from sdcs_bench.pipeline.paired import paired_differences


# --- the distributions, by hand ---------------------------------------------------------------------


def test_t_quantiles_and_wilson_match_their_tables():
    for df, want in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (7, 2.3646), (19, 2.0930), (100, 1.9840)):
        assert stats.t_ppf(0.975, df) == pytest.approx(want, abs=1e-4), df
    assert stats.z(0.975) == pytest.approx(1.959964, abs=1e-6) and stats.z(0.8) == pytest.approx(0.841621, abs=1e-6)
    # 1..5: mean 3, sd sqrt(2.5); the half-width t(0.975, 4) sd / sqrt(5) = 2.7764 x 1.5811 / 2.2361 = 1.9632
    lo, hi = stats.t_interval(np.arange(1.0, 6.0))
    assert (lo, hi) == (pytest.approx(3 - 1.9632, abs=1e-4), pytest.approx(3 + 1.9632, abs=1e-4))
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


def test_the_exact_p_is_scipy_s_exact_permutation_test():
    """Where every sign vector is counted, scipy.stats.permutation_test (one sample, sign flips,
    two-sided as twice the smaller one-sided p) gives the same p: the null of a sum of sign-flipped
    differences is symmetric. (SpecSnap keeps its own: the same vectors for thousands of studies at
    once, and its seeded Monte Carlo beyond 16 pairs: stats.sign_flip_pvalues.)"""
    from scipy.stats import permutation_test

    rng = np.random.default_rng(3)
    for n in (6, 7, 9, 12):
        for d in (rng.integers(-3, 5, n).astype(float), rng.normal(0.5, 1, n).round(2)):
            theirs = permutation_test((d,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
                                      n_resamples=np.inf, alternative="two-sided").pvalue
            assert stats.paired_test([0] * n, d.tolist(), "k").p == pytest.approx(theirs, abs=1e-12), d


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
    md = to_markdown(make_board(cards), "s", paired_differences(cards))
    assert "**4 comparisons**, 3 tested, 3 marked `*`" in md and "too few pairs (n=2; 6 needed)" in md
    assert "Holm-adjusted p <= 0.05" in md and "| p | p (holm) | mark |" in md


def test_a_deterministic_reference_policy_is_its_closed_form_not_a_test():
    cards = _cards({"ref_oracle": ([8, 8, 8], [6, 6, 6])}, kind="reference policy")
    (row,) = paired_differences(cards).query("metric == 'net'").itertuples()
    assert row.test == stats.CLOSED_FORM and not row.marked and (row.lo, row.hi, row.difference) == (-2, -2, -2)
    board = make_board(cards).set_index("arm")
    assert board.loc["Vanilla", "net_interval"] == "[8, 8]"  # exact, from its closed form


# --- cell intervals ---------------------------------------------------------------------------------


def test_cells_carry_a_t_interval_wilson_shares_and_say_when_too_few():
    cards = _cards({"m": ([3, 4, 2, 5, 3, 4, 8, 8], [5, 6, 3])})
    board = make_board(cards).set_index("arm")
    van, few = board.loc["Vanilla"], board.loc["State_MD_Only"]
    lo, hi = stats.t_interval(np.array([3, 4, 2, 5, 3, 4, 8, 8], dtype=float))
    assert (van["net_lo"], van["net_hi"]) == (round(lo, 2), round(hi, 2))
    assert van["full_marks"] == 0.25
    assert (van["full_marks_lo"], van["full_marks_hi"]) == tuple(round(x, 2) for x in stats.wilson(2, 8))
    assert (van["s1_edit_survived_lo"], van["s1_edit_survived_hi"]) == tuple(round(x, 2) for x in stats.wilson(4, 8))
    assert few["net_interval"] == "n=3: too few for an interval (5 needed)" and pd.isna(few["full_marks_lo"])
    assert lb.MIN_INTERVAL_N == stats.MIN_INTERVAL_N
    cells = {r["arm"]: lb._local_cell(r) for r in json.loads(make_board(cards).to_json(orient="records"))}
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


def test_the_exact_binary_power_is_every_outcome_put_through_the_test():
    """Every one of the 3^n vectors of paired 0/1 differences (+1 w.p. p10, -1 w.p. p01, else 0), its
    p-value from the sign-flip test itself: the power is the probability of those it marks."""
    for n, (p10, p01), alpha in ((6, (0.4, 0.1), 0.05), (8, (0.3, 0.2), 0.05), (9, (0.45, 0.05), 0.01),
                                 (10, (0.35, 0.15), 0.05)):
        d = np.array(list(itertools.product((1.0, -1.0, 0.0), repeat=n)))
        prob = np.prod(np.where(d == 1, p10, np.where(d == -1, p01, 1 - p10 - p01)), axis=1)
        p, method = stats.sign_flip_pvalues(d)
        assert method == "exact"
        assert power.signflip_binary_power(n, p10, p01, alpha) == pytest.approx(prob[p <= alpha + 1e-12].sum(),
                                                                                abs=1e-12), (n, alpha)


def test_the_power_command_states_its_assumptions():
    from conftest import specsnap

    out = specsnap("power", "--metric", "full_marks", "--baseline-rate", "0.5", "--delta", "0.1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "trials per cell (two-proportion formula): 388" in text and "assumptions:" in text
    assert "power of SpecSnap's sign-flip test at n = 388" in text


def test_the_power_command_prices_that_many_trials_per_cell_of_the_study_named():
    """smoke with Claude Code (Sonnet) and the oracle under two arms: four cells, two of them paid.
    No pilot: a tier_2 trial is its TES budget, 400,000 tokens, at $3 a million as uncached input
    ($1.20; range $0.30 to $15 a million: $0.12 to $6). At 388 trials per cell: 2 x 388 x $1.20 =
    $931.20 (range $93.12 to $4,656); at the test's own 408, $979.20. The oracle: $0."""
    from conftest import specsnap

    args = ["power", "--metric", "full_marks", "--baseline", "0.5", "--delta", "0.1", "--study", "smoke",
            "--override", "agent=[claude_code_sonnet,ref_oracle]", "--override", "arm=[Vanilla,State_MD_Only]"]
    out = specsnap(*args, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["n"], report["n_test"]) == (388, 408)
    cost = report["cost"]
    assert cost["cells"] == 4 and cost["pilot"] is None
    assert cost["at_n"] == {"n": 388, "trials": 4 * 388, "sessions": 2 * 4 * 388,  # smoke's trials: two sessions
                            "cost_usd": pytest.approx(2 * 388 * 1.20), "cost_low_usd": pytest.approx(2 * 388 * 0.12),
                            "cost_high_usd": pytest.approx(2 * 388 * 6.00)}
    assert cost["at_n_test"]["cost_usd"] == pytest.approx(979.20)
    ref = {a["agent"]: a for a in cost["agents"]}["ref_oracle"]
    assert not ref["paid"] and ref["cost_usd"] == 0 and "calls no model" in ref["zero_cost"]
    text = specsnap(*args).stdout
    assert "cost of study smoke (agent=[claude_code_sonnet,ref_oracle] arm=[Vanilla,State_MD_Only]), 4 cell(s)" in text
    assert "at 388 trials per cell: 1,552 trials, 3,104 sessions, $931.20 (range $93.12-$4,656.00)" in text
    assert "- claude_code_sonnet (claude-sonnet-4-5): 776 trials, $931.20 (range $93.12-$4,656.00)" in text
    assert "tier_2: $1.2000 (range $0.1200-$6.0000) a trial; the workload's TES budget" in text
    assert "- ref_oracle (reference policy): 776 trials, $0 (a reference policy calls no model)" in text
    assert "at 408 (where the sign-flip test itself reaches the target): 1,632 trials, $979.20" in text
    # reference policies only (smoke as it is): $0 at any n, and said so
    refs = specsnap("power", "--metric", "full_marks", "--baseline", "0.5", "--delta", "0.1", "--study", "smoke")
    assert "no session of the study calls a paid model (reference policies and replays): $0 at any n" in refs.stdout
    alone = specsnap("power", "--sd", "2", "--delta", "1", "--override", "arm=[Vanilla]")
    assert alone.returncode == 2 and "name it with --study" in alone.stderr


def _priced_pilot(results, ledger: bool):
    """A pilot of Claude Code (Sonnet) on tier_2: 6 seeds x Vanilla and State_MD_Only, each trial one
    session of 10,000 x (its index + 1) uncached input and 1,000 output tokens (with ``ledger``)."""
    run = results / "pilot"
    run.mkdir(parents=True)
    nets = {"Vanilla": [3, 4, 2, 5, 3, 4], "State_MD_Only": [5, 5, 4, 6, 4, 6]}
    cards = [{"trial": f"{arm}{s}", "workload": "tier_2", "arm": arm, "agent": "claude_code_sonnet", "variant": "none",
              "continuation": "reset", "seed": s, "net": net[s], "n_requirements": 8, "valid": True}
             for arm, net in nets.items() for s in range(6)]
    pd.DataFrame(cards).to_csv(run / "scorecards.csv", index=False)
    if ledger:
        pd.DataFrame([{"trial": c["trial"], "agent": "claude_code_sonnet", "agent_kind": "model", "session": "S1",
                       "status": "ok", "tokens_uncached_input": 10_000 * (i + 1), "tokens_cache_read": 0,
                       "tokens_cache_write": 0, "tokens_output": 1_000, "tokens_reasoning": 0}
                      for i, c in enumerate(cards)]).to_csv(run / "ledger.csv", index=False)
    (run / "leaderboard.json").write_text("{}")
    return run


def test_the_power_command_prices_from_its_pilot_s_trials(tmp_path):
    """The --from run's trials are the price basis: a trial's mean cost is (65,000 x $3 + 1,000 x
    $15) / 1e6 = $0.21 (the cheapest 10,000 input: $0.045; the dearest 120,000: $0.375); the study
    (smoke, Sonnet, two arms) has two cells, so n trials per cell cost 2 n x $0.21."""
    from conftest import specsnap

    results = tmp_path / "results"
    _priced_pilot(results, ledger=True)
    args = ["power", "--delta", "1", "--from", "pilot", "--results", str(results), "--study", "smoke",
            "--override", "agent=[claude_code_sonnet]", "--override", "arm=[Vanilla,State_MD_Only]"]
    out = specsnap(*args, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    n, cost = report["n"], report["cost"]
    assert cost["pilot"] == "pilot" and cost["cells"] == 2
    assert (cost["at_n"]["cost_usd"], cost["at_n"]["cost_low_usd"], cost["at_n"]["cost_high_usd"]) == \
        (pytest.approx(2 * n * 0.21), pytest.approx(2 * n * 0.045), pytest.approx(2 * n * 0.375))
    assert f"${2 * n * 0.21:,.2f} (range ${2 * n * 0.045:,.2f}-${2 * n * 0.375:,.2f})" in specsnap(*args).stdout
    # a pilot with no ledger (no paid sessions to price from) says so, and the budget prices it
    other = tmp_path / "other"
    _priced_pilot(other, ledger=False)
    fallback = specsnap(*args[:5], "--results", str(other), *args[7:], "--json")
    assert fallback.returncode == 0, fallback.stderr
    cost = json.loads(fallback.stdout)["cost"]
    assert cost["pilot"] is None and "run pilot is no price basis" in cost["notes"][0]
    assert cost["at_n"]["cost_usd"] == pytest.approx(2 * json.loads(fallback.stdout)["n"] * 1.20)


def test_a_bad_adjustment_stops_the_plan_with_one_error_naming_the_choices(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--results", str(tmp_path),
                             "--override", "statistics.adjust=bonferroni"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "statistics.adjust is 'bonferroni': valid choices: none, holm, bh" in result.stderr
    assert not any(tmp_path.iterdir())  # nothing planned
