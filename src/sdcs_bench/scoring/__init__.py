"""Scoring (SPEC §6): a clean scoring copy, the hidden tests, boundary rules, net and TES."""

from .scorer import score_sandbox, scoring_copy

__all__ = ["score_sandbox", "scoring_copy"]
