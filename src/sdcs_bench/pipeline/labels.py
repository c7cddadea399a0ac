"""How every table, plot and page labels a row: what produced it, and the order of the arms.

Kept apart from the aggregation so that the leaderboard, the plots and the report can use them
without importing each other (``aggregate`` writes the plots; the plots read the published tables).
"""

from __future__ import annotations

from sdcs_bench.trial.components import BY_HAND_KIND, REFERENCE_KIND, REPLAY_KIND

REFERENCE_NOTICE = (
    "Rows of kind 'reference policy' come from SpecSnap's built-in policies, which call no model: "
    "deterministic, or (ref_coin) drawn from the trial's seed with a known distribution. They validate "
    "the pipeline and its statistics against closed-form expectations; they are not model results."
)
REPLAY_NOTICE = (
    "Rows of kind 'replay (scripted, no model)' come from a real harness binary driven by a scripted "
    "replay of model replies. They test the harness adapters end to end; they are not model results."
)
PUBLISHED_SOURCE = "published"


def arm_order(arms) -> list[str]:
    """Arms as every table and plot lists them: Vanilla (the baseline) first, then by name."""
    return sorted(set(arms), key=lambda arm: (arm != "Vanilla", arm))


def source_label(agent_kind: str, model: str | None = None, harness: str | None = None) -> str:
    """What produced a row, as every table, plot and page labels it: a built-in reference policy, a
    real harness replaying a script, or a real agent (its model, through its harness)."""
    if agent_kind == REFERENCE_KIND:
        return "reference policy"
    if agent_kind == REPLAY_KIND:
        return f"replay ({harness}, scripted, no model)" if harness else REPLAY_KIND
    if agent_kind == BY_HAND_KIND:
        return f"by hand: {model or 'model not given'} via {harness or 'harness not given'} (tokens as reported)"
    return f"real agent: {model} via {harness}"


def handoff_label(first: str, then: str | None) -> str:
    """A handoff trial's source: both agents' labels (just one when they read the same, as two
    reference policies do)."""
    return first if not then or then == first else f"{first}, then {then}"
