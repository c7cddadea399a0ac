"""The statistics beside every mean (docs/statistics.md): intervals, paired differences, power and
run-to-run disagreement, checked against a policy whose distribution is known (ref_coin: each
requirement kept with probability p, drawn from the trial's seed)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from sdcs_bench.agents.stochastic import distribution, draw, dropped
from sdcs_bench.pipeline import power, stats
from sdcs_bench.pipeline.board import make_board
from sdcs_bench.pipeline.paired import paired_differences
from sdcs_bench.trial import config
from sdcs_bench.trial.workload import load_workload

COIN = config.entity("agent", "ref_coin")["policy"]
REQS = [r.id for r in load_workload("tier_2").requirements]  # its eight requirements (the draws depend on the ids)


def kept(arm: str, seed: int) -> int:
    """ref_coin's net score in one trial: the requirements it keeps (every one it keeps passes,
    as the pipeline's closed forms check trial by trial)."""
    return len(REQS) - len(dropped(COIN, arm, seed, REQS))


def test_an_interval_is_a_t_interval_from_five_trials_and_says_when_there_are_too_few():
    values = [3, 5, 4, 6, 2, 5]  # mean 25/6, sd 1.4720; t(0.975, 5) = 2.5706
    a = stats.interval(values, "cell/a")
    half = 2.570582 * 1.471960 / math.sqrt(6)
    assert a.n == 6 and a.lo == pytest.approx(25 / 6 - half, abs=1e-5) and a.hi == pytest.approx(25 / 6 + half, abs=1e-5)
    assert stats.interval([4], "x") == stats.Interval(1, 4.0, None, None)
    assert stats.interval([4], "x").text() == "n=1: too few for an interval (5 needed)"
    assert stats.interval([3, 5, 4, 6], "x").text() == "n=4: too few for an interval (5 needed)"
    # a deterministic reference policy: its closed form, exact from two trials; a model's equal trials are not that
    assert stats.interval([7, 7, 7], "x", deterministic=True) == stats.Interval(3, 7.0, 7.0, 7.0)
    assert stats.interval([7, 7, 7], "x").lo is None
    assert stats.interval([], "x").text() == "n=0"
    wider = stats.interval(values, "cell/a", stats.Settings(level=0.99))
    assert wider.lo <= a.lo and wider.hi >= a.hi
    # a share: Wilson (3 of 5: [0.2307, 0.8824])
    share = stats.interval([1, 1, 0, 1, 0], "x", kind="share")
    assert (round(share.lo, 4), round(share.hi, 4)) == (0.2307, 0.8824)


def test_settings_refuse_what_cannot_be_an_interval():
    with pytest.raises(ValueError, match="resamples"):
        stats.Settings.from_config({"resamples": 10})
    with pytest.raises(ValueError, match="level"):
        stats.Settings.from_config({"level": 95})
    with pytest.raises(ValueError, match="valid: resamples, level, seed, adjust"):
        stats.Settings.from_config({"resample": 1000})
    with pytest.raises(ValueError, match="statistics.adjust is 'bonferroni': valid choices: none, holm, bh"):
        stats.Settings.from_config({"adjust": "bonferroni"})
    assert stats.Settings.from_config({"adjust": "bh"}).adjust == "bh" and stats.Settings().adjust == "holm"


def test_the_power_formulas_agree_with_their_textbook_values():
    # a paired difference of 1 with sd 2: the normal formula says 31.4; the noncentral t, 34 (R's power.t.test)
    assert power.t_n(1, 2, 0.05, 0.8) == 34
    assert power.t_power(10, 1, 2, 0.05) == pytest.approx(0.2932, abs=0.001)  # power.t.test(10, 1, 2, type="one")
    # the noncentral t at few pairs, against the normal tail integrated over the chi of the SD by hand
    # (the integration SpecSnap did before scipy was 0.001 short at 2 pairs)
    from scipy import integrate
    from scipy.stats import chi, norm, t

    for n in (2, 3, 6):
        df, lam = n - 1, math.sqrt(n) / 2
        crit = t.ppf(0.975, df)
        tail = integrate.quad(lambda x: chi.pdf(x, df) * (norm.sf(crit * x / math.sqrt(df) - lam)
                                                          + norm.cdf(-crit * x / math.sqrt(df) - lam)), 0, np.inf)[0]
        assert power.t_power(n, 1, 2, 0.05) == pytest.approx(tail, abs=1e-9), n
    # two proportions, 0.5 against 0.6: (1.96 sqrt(2 * .55 * .45) + 0.8416 sqrt(.25 + .24))^2 / 0.01 = 387.3
    assert power.two_proportion_n(0.5, 0.6, 0.05, 0.8) == 388
    # McNemar, discordant rates 0.3 and 0.2 (independent arms at 0.5 and 0.6): 390.1
    assert power.mcnemar_n(0.3, 0.2, 0.05, 0.8) == 391


def test_the_draws_are_uniform_independent_and_nested_across_arms():
    u = np.array([draw(seed, r) for seed in range(2000) for r in REQS])
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    for seed in range(50):  # the requirements kept under p = 0.5 are kept under 0.75 too
        assert dropped(COIN, "State_MD_Only", seed, REQS) <= dropped(COIN, "Vanilla", seed, REQS)
    assert distribution(COIN, "Vanilla", 8)["mean"] == 4 and distribution(COIN, "State_MD_Only", 8)["mean"] == 6
    assert distribution({"knows_sprint": "always"}, "Vanilla", 8) is None  # deterministic policies have none


def test_the_leaderboard_interval_of_the_stochastic_policy_covers_its_mean():
    """The intervals study's rows, computed the way the aggregate computes them."""
    cards = []
    for arm in ("Vanilla", "State_MD_Only"):
        for seed in range(20):
            net = kept(arm, seed)
            cards.append({"trial": f"{arm}{seed}", "workload": "tier_2", "arm": arm, "agent": "ref_coin",
                          "agent_kind": "reference policy", "variant": "none", "seed": seed, "n_requirements": 8,
                          "raw": net, "net": net, "tes": float(net), "tokens": 0, "s1_edit_survived": True,
                          "expected_net": net, "expected_mean": 8 * (0.5 if arm == "Vanilla" else 0.75),
                          "matches_expected": True, "poison_survived": "", "valid": True, "invalid_reasons": "",
                          "tampered": False, "tamper_evidence": ""})
    board = make_board(pd.DataFrame(cards)).set_index("arm")
    for arm, mean in (("Vanilla", 4), ("State_MD_Only", 6)):
        row = board.loc[arm]
        assert row["n"] == 20 and row["expected_mean"] == mean
        assert row["net_lo"] <= mean <= row["net_hi"], (arm, row["net_lo"], row["net_hi"])
    (diff,) = paired_differences(pd.DataFrame(cards)).query("metric == 'net'").itertuples()
    assert diff.pairs == 20 and diff.excludes_zero and diff.lo <= 2 <= diff.hi
    assert diff.marked and diff.p < 0.001 and diff.test.startswith("sign-flip, Monte Carlo")  # 20 > 16 pairs


@pytest.mark.slow
def test_coverage_of_the_95_percent_intervals_over_hundreds_of_seeds():
    """400 cells of 20 trials each (8,000 seeds of ref_coin under Vanilla, Binomial(8, 0.5), mean
    4): the share of cells whose 95% t-interval covers 4 is close to 95%."""
    settings = stats.Settings()
    covered = sum(stats.interval([kept("Vanilla", 20 * cell + i) for i in range(20)], f"cell{cell}", settings).covers(4)
                  for cell in range(400))
    coverage = covered / 400
    print(f"\ncoverage of the 95% t-intervals of ref_coin (n = 20 per cell, 400 cells): {coverage:.3f}")
    assert 0.93 <= coverage <= 0.98


@pytest.mark.slow
def test_a_planted_paired_difference_is_detected_at_the_predicted_rate():
    """Two arms of ref_coin whose p differ by 0.1 (0.5 and 0.6; nested draws: a paired difference
    Binomial(8, 0.1), mean 0.8, sd 0.85, never negative). The power ``specsnap power --from`` predicts
    (the sign-flip test simulated on a pilot's differences: 2,000 seeds) for studies of 8 and 12 seeds
    is how often 1,000 fresh studies' sign-flip test marks the difference (each figure's Monte-Carlo
    sd about 0.015). The t formula, printed
    beside it, is far off for so few, so skewed and so tied differences: the reason the report
    gives the test's own power."""
    policy = {"keep": {"probability": 0.5, "by_arm": {"B": 0.6}}}

    def differences(seeds):
        return [len(dropped(policy, "A", s, REQS)) - len(dropped(policy, "B", s, REQS)) for s in seeds]

    pilot = np.array(differences(range(100_000, 102_000)), dtype=float)
    draw = power.pilot_draw(pilot - pilot.mean(), 0.8, lattice=True)
    studies = 1000
    for n in (8, 12):
        predicted = power.signflip_simulated_power(draw, n, 0.05, np.random.default_rng(n))
        formula = power.t_power(n, 0.8, float(pilot.std(ddof=1)), 0.05)
        detected = sum(stats.paired_test([0] * n, differences(range(n * i, n * i + n)), f"study{i}").p <= 0.05
                       for i in range(studies)) / studies
        print(f"\nplanted paired difference 0.8 (sd 0.85), {n} pairs: detected in {detected:.3f} of {studies} studies; "
              f"predicted {predicted:.3f} (the test simulated on a 2,000-seed pilot), {formula:.3f} (t formula)")
        assert abs(detected - predicted) <= 0.05


def _intervals_study(tmp_path, seeds: int):
    from test_pipeline import run_grid

    return run_grid(tmp_path, "intervals", "intervals", seed=[str(s) for s in range(seeds)])


@pytest.mark.pipeline
def test_every_trial_of_the_stochastic_policy_lands_on_its_own_draw(tmp_path):
    """Through Snakemake: each trial's net is its seed's draw (its closed form); the rows carry n,
    the interval and the distribution's mean; the paired table compares the two arms seed by seed."""
    board, run = _intervals_study(tmp_path, 3)
    cards = pd.read_csv(run / "scorecards.csv")
    assert len(cards) == 6 and cards["matches_expected"].all(), cards[["trial", "net", "expected_net"]]
    for card in cards.itertuples():
        assert card.net == kept(card.arm, card.seed), card.trial
    assert set(cards.groupby("arm")["net"].nunique()) != {1}  # the seeds differ: a real distribution
    board = board.set_index("arm")
    assert board["n"].tolist() == [3, 3] and board.loc["Vanilla", "expected_mean"] == 4
    # three seeds of a stochastic policy: too few for an interval, and the rows say so
    assert board["net_lo"].isna().all() and (board["net_interval"] == "n=3: too few for an interval (5 needed)").all()
    paired = pd.read_csv(run / "paired.csv").query("metric == 'net'")
    assert paired["pairs"].tolist() == [3] and paired["test"].tolist() == ["too few pairs (n=3; 6 needed)"]
    assert not paired["marked"].any() and "too few pairs (n=3; 6 needed)" in (run / "leaderboard.md").read_text()
    want = np.mean([kept("State_MD_Only", s) - kept("Vanilla", s) for s in range(3)])
    assert paired["difference"].iloc[0] == round(want, 2)  # (paired.csv rounds to two places)


@pytest.mark.pipeline
@pytest.mark.slow
def test_the_intervals_study_covers_the_true_means(tmp_path):
    """The `intervals` study whole (40 trials): each row's 95% interval covers its distribution's mean
    (4 and 6), and the paired difference's covers 2 and excludes 0."""
    board, run = _intervals_study(tmp_path, 20)
    for row in board.itertuples():
        assert row.n == 20 and row.net_lo <= row.expected_mean <= row.net_hi, row
    (diff,) = pd.read_csv(run / "paired.csv").query("metric == 'net'").itertuples()
    assert diff.excludes_zero and diff.lo <= 2 <= diff.hi and diff.marked


def test_power_before_any_run_from_a_stated_or_published_baseline():
    from conftest import specsnap

    stated = specsnap("power", "--metric", "full_marks", "--baseline", "0.5", "--delta", "0.1")
    assert stated.returncode == 0, stated.stderr
    assert "trials per cell (two-proportion formula): 388" in stated.stdout and "assumptions:" in stated.stdout
    assert "baseline rate of full marks is 0.5 and the compared arm's 0.6" in stated.stdout
    # no baseline: the rate the published disagreement (19 of 404, Wilson [3.0%, 7.2%]) implies, with its range
    published = specsnap("power", "--metric", "full_marks", "--delta", "0.1")
    assert published.returncode == 0, published.stderr
    assert "19 of 404 (4.7%, Wilson 95% [3.0%, 7.2%]" in published.stdout
    assert "range of n over the baseline's interval: " in published.stdout
    assert "give --baseline RATE" in published.stdout
    net = specsnap("power", "--delta", "1")
    assert net.returncode == 2 and "--from RUN" in net.stderr and "--sd S" in net.stderr
    bad = specsnap("power", "--delta", "1", "--metric", "nett")
    assert bad.returncode == 2 and "valid choices: full_marks, net" in bad.stderr
    rate = specsnap("power", "--metric", "full_marks", "--baseline", "1.5", "--delta", "0.1")
    assert rate.returncode == 2 and "strictly between 0 and 1" in rate.stderr


def test_power_from_a_finished_study_pools_its_paired_differences(tmp_path):
    from conftest import specsnap

    run = tmp_path / "results" / "pilot"
    run.mkdir(parents=True)
    cards = [{"trial": f"{arm}{seed}", "workload": "tier_2", "arm": arm, "agent": "m", "variant": "none",
              "continuation": "reset", "seed": seed, "net": net, "n_requirements": 8, "valid": True}
             for seed, (v, s) in enumerate([(3, 5), (4, 5), (2, 5), (5, 6)])
             for arm, net in (("Vanilla", v), ("State_MD_Only", s))]
    pd.DataFrame(cards).to_csv(run / "scorecards.csv", index=False)
    (run / "leaderboard.json").write_text("{}")
    result = specsnap("power", "--delta", "1", "--from", "pilot", "--results", str(tmp_path / "results"), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    sd = float(np.std([2, 1, 3, 1], ddof=1))  # the differences 2, 1, 3, 1
    assert report["design"] == "paired (same seed)"
    assert report["parameters"]["sd of the paired differences"] == pytest.approx(sd)
    assert report["n"] == power.t_n(1, sd, 0.05, 0.8) and report["n_test"] >= 6 and report["assumptions"]


def _run(where, nets, kind="model"):
    where.mkdir(parents=True)
    pd.DataFrame([{"trial": f"w__Vanilla__m__none__s{i}", "net": net, "n_requirements": 8, "valid": True,
                   "agent_kind": kind} for i, net in enumerate(nets)]).to_csv(where / "scorecards.csv", index=False)
    return where


def test_a_disagreement_rate_carries_its_wilson_interval_and_its_n(tmp_path):
    """Ten matched trials: full marks differ on 2 (8 -> 7 twice), net on 3. Wilson at 95% (z = 1.95996):
    2 of 10, centre (0.2 + z^2/20) / (1 + z^2/10) = 0.28326, half-width z sqrt(0.016 + z^2/400) /
    (1 + z^2/10) = 0.22658: [0.0567, 0.5098]; 3 of 10: [0.1078, 0.6032]."""
    from sdcs_bench.pipeline import stability

    first = _run(tmp_path / "a", [8, 8, 8, 8, 5, 5, 5, 5, 5, 5])
    second = _run(tmp_path / "b", [7, 7, 8, 8, 4, 5, 5, 5, 5, 5])
    result = stability.compare(first, second)
    assert (result["matched"], result["full_marks_disagree"], result["net_disagree"]) == (10, 2, 3)
    assert result["full_marks_interval"] == [pytest.approx(0.0567, abs=1e-4), pytest.approx(0.5098, abs=1e-4)]
    assert result["net_interval"] == [pytest.approx(0.1078, abs=1e-4), pytest.approx(0.6032, abs=1e-4)]
    text = "\n".join(stability.lines(result))
    assert "full marks disagree: 2 of 10 (20.0%), Wilson 95% [5.7%, 51.0%] over n = 10" in text
    assert "net disagrees:       3 of 10 (30.0%), Wilson 95% [10.8%, 60.3%] over n = 10" in text
    assert "published: 19 of 404 matched trials (4.8% in the paper), Wilson 95% [3.0%, 7.2%]" in text
    # below five matched trials no interval, as for every share; reference policies: 0 by construction
    few = stability.compare(_run(tmp_path / "c", [8, 8, 5]), _run(tmp_path / "d", [7, 8, 5]))
    assert few["full_marks_interval"] is None
    assert "full marks disagree: 1 of 3 (33.3%), n = 3: too few for an interval (5 needed)" in "\n".join(
        stability.lines(few))
    ref = stability.compare(_run(tmp_path / "e", [8] * 6, "reference policy"), _run(tmp_path / "f", [8] * 6,
                                                                                      "reference policy"))
    assert ref["full_marks_interval"] is None and ref["reference_only"]
    assert "0 of 6 (0.0%), n = 6: no interval, 0 by construction" in "\n".join(stability.lines(ref))


@pytest.mark.pipeline
@pytest.mark.slow
def test_a_rerun_batch_repeats_a_share_of_the_cells_and_reports_no_disagreement_for_reference_policies(tmp_path):
    from conftest import ROOT, specsnap
    from test_pipeline import snakemake

    first = snakemake(tmp_path, "--cores", "2", "--config", "study=smoke", "name=first",
                      'overrides=["agent=[ref_oracle,ref_null]","arm=[Vanilla]"]')
    assert first.returncode == 0, first.stderr[-3000:]
    result = specsnap("--root", str(ROOT), "rerun", "--from", "first", "--share", "0.5", "--seed", "3", "--results",
                      "results", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    batch = tmp_path / "results" / "first.rerun-s3"
    cards = pd.read_csv(batch / "scorecards.csv")
    assert len(cards) == 2 and cards["agent"].nunique() == 1 and sorted(cards["seed"]) == [0, 1]  # one cell, both seeds
    assert set(cards["trial"]) <= set(pd.read_csv(tmp_path / "results" / "first" / "scorecards.csv")["trial"])
    assert "full marks disagree: 0 of 2 (0.0%)" in result.stdout and "0 by construction" in result.stdout
    saved = json.loads((batch / "stability.json").read_text())
    assert saved["matched"] == 2 and saved["net_rate"] == 0 and saved["reference_only"]
    # the batch is a run of its own: the finished run is untouched, and a second rerun does nothing new
    again = specsnap("stability", "first", "first.rerun-s3", "--results", "results", cwd=tmp_path)
    assert again.returncode == 0 and "2 matched trial(s)" in again.stdout
