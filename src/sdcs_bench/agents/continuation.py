"""What each continuation mode hands a gold-patch reference policy, deterministically, so its
closed form holds (docs/protocol.md#continuation-modes). The pipeline's handoff stage and the
closed forms (:mod:`.expectations`) both call these.

- ``summary``: the policy's "model" is a summariser with a defined loss: for every requirement
  the previous session's event stream says it learnt (in full or as a summary line), that
  requirement's one-line summary (``- <id>: <summary>``), in the order learnt. Full texts and
  amendments are lost. Its meter is one call of the rendered transcript's and the summary's tokens.
- ``compact``: the carried conversation (the prompts the policy was given) is compacted to one
  turn: the summary line of every requirement whose full text or summary line it holds, in the
  workload's order. Same loss; the record keeps the tokens before and after and the text.
"""

from __future__ import annotations

import json
from typing import Any

from sdcs_bench.coherence.trace import SessionTrace, keep_from_end, render_lines
from sdcs_bench.core.tokens import count_tokens, meter_tokens
from sdcs_bench.trial.policy_rules import norm, summary_line
from sdcs_bench.trial.workload_model import Workload

SUMMARY_VERSION = "specsnap-policy-summary/1"


def transcript_text(trace: SessionTrace, budget: int) -> str:
    """The previous session's transcript as the summariser reads it: its trace lines, kept from the
    end up to ``budget`` tokens."""
    kept, _ = keep_from_end(render_lines([trace]), budget)
    return "\n".join(kept)


def policy_summary(workload: Workload, events: list[dict[str, Any]], transcript: str) -> tuple[str, dict[str, Any]]:
    """The deterministic summary of a session from its event stream, and its record (meter)."""
    by_id = {r.id: r for r in workload.requirements}
    learnt = list(dict.fromkeys(str((e.get("payload") or {}).get("fact")) for e in events
                                if e.get("type") == "fact_extracted"))
    text = "\n".join(summary_line(by_id[rid]) for rid in learnt if rid in by_id)
    return text, {"by": "policy", "version": SUMMARY_VERSION, "calls": 1,
                  "tokens": {"meter": meter_tokens(transcript, text)}, "requirements": [r for r in learnt if r in by_id]}


def compact_turns(workload: Workload, turns: list[str]) -> tuple[list[str], dict[str, Any]]:
    """The conversation compacted (one turn), and its record."""
    held = norm("\n\n".join(turns))
    kept = [r for r in workload.requirements if norm(r.text) in held or norm(summary_line(r)) in held]
    text = "\n".join(summary_line(r) for r in kept)
    return ([text] if text else []), {
        "by": "policy", "version": SUMMARY_VERSION, "tokens_before": sum(count_tokens(t) for t in turns),
        "tokens_after": count_tokens(text), "summary": text, "requirements": [r.id for r in kept]}


def compact_state(workload: Workload, data: bytes) -> tuple[bytes, dict[str, Any]]:
    """A policy's carried conversation file, compacted (the same file, with its turns replaced)."""
    try:
        state = json.loads(data)
        turns = [str(t) for t in state["turns"]]
    except (ValueError, KeyError, TypeError):
        return data, {"by": "policy", "problem": "the carried conversation could not be read: left as it was"}
    compacted, record = compact_turns(workload, turns)
    return json.dumps({**state, "turns": compacted}).encode(), record
