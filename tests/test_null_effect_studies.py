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
