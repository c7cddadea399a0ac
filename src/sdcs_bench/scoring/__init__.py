"""Scoring (docs/scoring.md): a clean scoring copy, the hidden tests, boundary rules, net and TES."""

from sdcs_bench.scoring.scorer import score_sandbox, scoring_copy

__all__ = ["score_sandbox", "scoring_copy"]
