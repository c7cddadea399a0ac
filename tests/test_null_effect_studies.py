"""The statistics' own checks (docs/statistics.md, "Checked against truth"): the stochastic reference
policy's draws, and the ``null_check`` and ``effect_check`` studies."""

from __future__ import annotations

import pytest

from sdcs_bench.agents.stochastic import distribution, dropped
from sdcs_bench.core.errors import SpecSnapError

REQS = [f"R{i}" for i in range(1, 9)]


def test_independent_draws_make_two_arms_of_one_p_a_true_null():
    """Paired draws make two arms of the same p identical seed by seed (every difference 0, a null
    no test can get wrong); independent draws make them two samples of Binomial(8, 0.5): the
    differences vary, average 0 and have variance 2 * 8 * 0.25 = 4."""
    paired = {"keep": {"probability": 0.5}}
    independent = {"keep": {"probability": 0.5, "draws": "independent"}}
    seeds = range(4000)

    def diffs(policy):
        return [len(dropped(policy, "A", s, REQS)) - len(dropped(policy, "B", s, REQS)) for s in seeds]

    assert set(diffs(paired)) == {0}
    d = diffs(independent)
    mean = sum(d) / len(d)
    var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
    assert abs(mean) < 0.1 and 3.6 < var < 4.4, (mean, var)
    kept = [8 - len(dropped(independent, "A", s, REQS)) for s in seeds]
    assert abs(sum(kept) / len(kept) - distribution(independent, "A", 8)["mean"]) < 0.1


def test_an_unknown_draw_kind_names_the_choices():
    with pytest.raises(SpecSnapError, match="paired, independent"):
        dropped({"keep": {"probability": 0.5, "draws": "shuffled"}}, "A", 0, REQS)


# -- the checks themselves, on paired tables of known make-up ---------------------------------------
def _rows(agent: str, compared: str, ps: list[float], pairs: int = 8) -> list[dict]:
    return [{"axis": "arm", "metric": "net", "agent": agent, "workload": f"w{i}", "baseline": "Vanilla",
             "compared": compared, "pairs": pairs, "p": p, "marked": False} for i, p in enumerate(ps)]


def _truths(agent: str, policy: dict, workloads: int) -> dict:
    """Workloads of their own requirements (ids shared between workloads would share their draws)."""
    return {(agent, f"w{i}"): (policy, [f"w{i}-{r}" for r in REQS]) for i in range(workloads)}


def test_a_null_table_that_marks_too_often_fails_its_check():
    """Twenty independent null rows: the test's simulated false-positive rate at this design is at
    most the level; one significant row is well within what 99% of such tables show, eight are far
    past it, and the check says FAIL."""
    import pandas as pd

    from sdcs_bench.pipeline import checks, stats

    policy = {"keep": {"probability": 0.5, "draws": "independent"}}
    ok = checks.truth_checks(pd.DataFrame(_rows("c", "B", [0.01] + [0.5] * 19)), _truths("c", policy, 20), stats.Settings())
    bad = checks.truth_checks(pd.DataFrame(_rows("c", "B", [0.01] * 8 + [0.5] * 12)), _truths("c", policy, 20), stats.Settings())
    assert [c.kind for c in ok] == ["null"] and ok[0].passed and ok[0].significant == 1
    assert ok[0].expected <= 0.05 and 1 <= ok[0].high <= 4, ok[0]
    assert not bad[0].passed and "FAIL" in bad[0].line() and bad[0].share == 0.4


def test_an_effect_table_is_judged_against_the_power_of_the_test_for_its_distribution():
    """p = 0.5 against 0.75, paired draws, 8 requirements, 8 pairs: each difference is
    Binomial(8, 0.25), so a pair differs with probability 1 - 0.75^8 = 0.90 and always upwards; the
    exact two-sided sign-flip test of 8 pairs reaches 0.05 once at least 6 of them differ (2 / 2^6 =
    0.031; 5 give 0.0625), so its power is P(Binomial(8, 0.90) >= 6) = 0.96. The check predicts that
    by simulation; ten independent rows detect 8 to 10 in 99% of simulated tables, so a table
    detecting all ten passes and one detecting 1 of 10 fails."""
    import math

    import pandas as pd

    from sdcs_bench.pipeline import checks, stats

    policy = {"keep": {"probability": 0.5, "by_arm": {"B": 0.75}}}
    q = 1 - 0.75 ** 8
    exact = sum(math.comb(8, k) * q ** k * (1 - q) ** (8 - k) for k in range(6, 9))
    predicted = checks.predicted_power(policy, "Vanilla", "B", REQS, 8, stats.Settings())
    assert abs(predicted - exact) < 0.02, (predicted, exact)
    good = checks.truth_checks(pd.DataFrame(_rows("e", "B", [0.01] * 10)), _truths("e", policy, 10), stats.Settings())
    poor = checks.truth_checks(pd.DataFrame(_rows("e", "B", [0.01] + [0.3] * 9)), _truths("e", policy, 10), stats.Settings())
    assert [c.kind for c in good] == ["effect"] and good[0].passed and good[0].expected == pytest.approx(exact, abs=0.02)
    assert (good[0].low, good[0].high) in ((7, 10), (8, 10)), good[0]
    assert not poor[0].passed and "FAIL" in poor[0].line()


def test_rows_that_share_their_draws_are_judged_together():
    """Two rows of one workload whose compared arms keep with the same p under paired draws are the
    same row twice: the simulated tables detect 0 or 2 of them, never 1, and so must the study."""
    import pandas as pd

    from sdcs_bench.pipeline import checks, stats

    policy = {"keep": {"probability": 0.5, "by_arm": {"B": 0.75, "C": 0.75}}}
    rows = [*_rows("e", "B", [0.01]), *_rows("e", "C", [0.01])]
    sig = checks.simulate([checks._Row(policy, "Vanilla", arm, tuple(REQS), 8) for arm in ("B", "C")], stats.Settings())
    assert (sig[0] == sig[1]).all()
    (check,) = checks.truth_checks(pd.DataFrame(rows), _truths("e", policy, 1), stats.Settings())
    assert check.passed and check.significant == 2


def test_deterministic_policies_and_too_few_pairs_are_not_judged():
    import pandas as pd

    from sdcs_bench.pipeline import checks, stats

    rows = _rows("d", "B", [None, None])
    assert checks.truth_checks(pd.DataFrame(rows), {("d", "w0"): ({}, REQS), ("d", "w1"): ({}, REQS)},
                               stats.Settings()) == []
    assert checks.predicted_power({"keep": {"probability": 0.5}}, "Vanilla", "B", REQS, 5, stats.Settings()) == 0.0


# -- the studies, through Snakemake ------------------------------------------------------------------
def _check_lines(run_dir) -> list[dict]:
    import json

    return json.loads((run_dir / "leaderboard.json").read_text())["truth_checks"]


@pytest.mark.pipeline
def test_a_narrowed_null_check_runs_through_snakemake_and_says_its_check(tmp_path):
    """The null_check study on one workload, two arms and six seeds (the fewest the test can use):
    one null row, its check line in the leaderboard (markdown, JSON) and the terminal's table."""
    from conftest import specsnap
    from test_pipeline import run_grid

    board, run = run_grid(tmp_path, "null_check", "nc", workload=["tier_1"], arm=["Vanilla", "AGENTS_MD_Only"],
                          seed=[str(s) for s in range(6)])
    assert board["matches_expected"].all() and set(board["agent_kind"]) == {"reference policy"}
    (check,) = _check_lines(run)
    assert (check["kind"], check["rows"], check["passed"]) == ("null", 1, True), check
    assert check["line"] in (run / "leaderboard.md").read_text()
    import html

    assert check["line"] in html.unescape((run / "report" / "index.html").read_text())
    shown = specsnap("leaderboard", "--run", "nc", "--results", str(tmp_path / "results"), cwd=tmp_path)
    assert "Checked against a known null: PASS" in " ".join(shown.stdout.split())


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("study, kind", [("null_check", "null"), ("effect_check", "effect")])
def test_the_statistics_check_studies_pass_their_own_checks(tmp_path, study, kind):
    """The whole study (2 workloads x 4 arms x 8 seeds, 64 trials): six rows of its kind, every
    valid trial on its closed form, and its check line PASS."""
    import pandas as pd
    from test_pipeline import snakemake

    run = snakemake(tmp_path, "--cores", "2", "--config", f"study={study}")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    cards = pd.read_csv(tmp_path / "results" / study / "scorecards.csv")
    valid = cards[cards["valid"]]  # (an invalid trial, marked so, is in no pair: issue 40's cuts under load)
    assert len(valid) >= 60 and valid["matches_expected"].all(), cards[~cards["matches_expected"]].to_string()
    (check,) = _check_lines(tmp_path / "results" / study)
    assert (check["kind"], check["rows"], check["passed"]) == (kind, 6, True), check
    print("\n" + check["line"])
