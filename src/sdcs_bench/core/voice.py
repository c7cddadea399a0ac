"""SpecSnap's own voice: every message SpecSnap itself puts where an agent can see it (the model
proxy's refusals and errors, the cleave's git guard and tool hooks, the run's budget) begins with one
of these prefixes, so what SpecSnap said is told apart from what an agent or its model said, and never
handed to the next session as the agent's work (docs/protocol.md#handoff)."""

from __future__ import annotations

SPECSNAP = "specsnap: "  # a refusal: the cleave, the budget, the git guard, the tool hooks
PROXY = "specsnap proxy: "  # the model proxy's own errors
PREFIXES = (SPECSNAP, PROXY)


def said_by_specsnap(text: object) -> bool:
    """Does ``text`` carry a message SpecSnap itself wrote (quoted by a harness or not)?"""
    return isinstance(text, str) and any(p in text for p in PREFIXES)


def without_specsnap_lines(text: str) -> str:
    """``text`` without the lines that carry SpecSnap's own messages."""
    return "\n".join(line for line in text.splitlines() if not said_by_specsnap(line))
