"""What each continuation mode hands a gold-patch reference policy, deterministically, so its
closed form holds (docs/protocol.md#continuation-modes). The pipeline's handoff stage and the
closed forms (:mod:`.expectations`) both call these.

- ``summary``: the policy's "model" is a summariser with a defined loss: for every requirement
  the previous session's event stream says it learnt (in full or as a summary line), that
  requirement's one-line summary (``- <id>: <summary>``), in the order learnt. Full texts and
  amendments are lost. Its meter is one call of the rendered transcript's and the summary's tokens.
- ``notes``: the same summariser answering in the notes schema (:mod:`sdcs_bench.trial.notes`): the
  goal (a fixed line), done (each file it edited, in order), in progress (when the session was cut:
  its last edit's file), next steps (the summary line of each requirement learnt, as above), no open
  questions. Rendered, the next session learns exactly what a summary teaches it; its meter is one
  call of the transcript's and the notes' (JSON) tokens.
- ``compact``: the carried conversation (the prompts the policy was given) is compacted to one
  turn: the summary line of every requirement whose full text or summary line it holds, in the
  workload's order. Same loss; the record keeps the tokens before and after and the text.
"""

from __future__ import annotations

import json
from typing import Any

from sdcs_bench.coherence.trace import SessionTrace, keep_from_end, render_lines
from sdcs_bench.core.tokens import count_tokens, meter_tokens
from sdcs_bench.trial import notes as notes_schema
from sdcs_bench.trial.policy_rules import norm, summary_line
from sdcs_bench.trial.workload_model import Workload

SUMMARY_VERSION = "specsnap-policy-summary/1"
NOTES_GOAL = "Carry on the task of TASK.md: every requirement it states, each kept as its tests expect."


def transcript_text(trace: SessionTrace, budget: int) -> str:
    """The previous session's transcript as the summariser reads it: its trace lines, kept from the
    end up to ``budget`` tokens."""
    kept, _ = keep_from_end(render_lines([trace]), budget)
    return "\n".join(kept)


def _learnt(workload: Workload, events: list[dict[str, Any]]) -> list[Any]:
    """The requirements a session's event stream says it learnt (in full or as a summary line), in order."""
    by_id = {r.id: r for r in workload.requirements}
    learnt = dict.fromkeys(str((e.get("payload") or {}).get("fact")) for e in events if e.get("type") == "fact_extracted")
    return [by_id[rid] for rid in learnt if rid in by_id]


def policy_summary(workload: Workload, events: list[dict[str, Any]], transcript: str) -> tuple[str, dict[str, Any]]:
    """The deterministic summary of a session from its event stream, and its record (meter)."""
    learnt = _learnt(workload, events)
    text = "\n".join(summary_line(r) for r in learnt)
    return text, {"by": "policy", "version": SUMMARY_VERSION, "calls": 1,
                  "tokens": {"meter": meter_tokens(transcript, text)}, "requirements": [r.id for r in learnt]}


def policy_notes(workload: Workload, trace: SessionTrace, transcript: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The deterministic notes on a session (valid in the schema), and their record (meter)."""
    learnt = _learnt(workload, list(trace.events))
    edited = list(dict.fromkeys(str((e.get("payload") or {}).get("path")) for e in trace.events
                                if e.get("type") == "edit_intent" and (e.get("payload") or {}).get("result") == "ok"
                                and (e.get("payload") or {}).get("path")))
    notes = {"schema": notes_schema.VERSION, "goal": NOTES_GOAL, "done": [f"edited {p}" for p in edited],
             "in_progress": ([{"task": "the session was stopped after its last edit", "files": [edited[-1]]}]
                             if trace.status == "cleaved" and edited else []),
             "next_steps": [summary_line(r).removeprefix("- ") for r in learnt], "open_questions": []}
    return notes, {"by": "policy", "version": SUMMARY_VERSION, "calls": 1,
                   "tokens": {"meter": meter_tokens(transcript, json.dumps(notes))},
                   "requirements": [r.id for r in learnt]}


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
