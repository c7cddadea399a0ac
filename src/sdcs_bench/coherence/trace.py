"""A trial's earlier sessions as text, for the ``trace:<budget>`` continuation (docs/protocol.md).

Each session's normalised event stream (``events.jsonl``, :mod:`.events`) becomes one line per
event: what it read, what it learnt (with the text it learnt, where its record carries one), what
it edited (an edit that failed, or whose outcome is not recorded, said so), what it reverted, the
tests it ran and their result (the output's last lines, cut), and its closing message. Nothing
SpecSnap itself said (a refusal at the cut, a proxy error, the budget: :mod:`sdcs_bench.core.voice`)
is carried: a closing message quoting it is left out, and so are output lines carrying it. No time, id or version appears, so the same work renders the same text. The
lines are kept from the end while their ``o200k_base`` tokens (each line with its newline) fit the
budget; a line saying how many were cut from the start replaces the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sdcs_bench.core.tokens import count_tokens
from sdcs_bench.core.voice import said_by_specsnap, without_specsnap_lines

LINE_CHARS = 2400  # one rendered line at most (a requirement's text fits; a test's output is cut)
OUTPUT_CHARS = 300  # the end of a test run's output kept on its line


def _flat(text: Any, limit: int = LINE_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 8] + " …[cut]"


def event_line(event: dict[str, Any]) -> str | None:
    """One event of ``events.jsonl`` as a line of the trace (None: nothing worth a line)."""
    kind, p = event.get("type"), event.get("payload") or {}
    if kind == "file_read":
        return f"read {p.get('path')}"
    if kind == "fact_extracted":
        text = p.get("text")
        return f"learnt {p.get('fact')}: {_flat(text)}" if text else f"learnt {p.get('fact')}"
    if kind == "edit_intent":
        where = p.get("path") or "(a file its script names no path for)"
        how = " (by a script)" if p.get("via_script") else ""
        # Only what happened crosses: an edit refused or failed is said to be so, one whose outcome its
        # record does not show is said to be unknown (docs/protocol.md#handoff).
        outcome = {"ok": "", "error": " (failed: not applied)"}.get(p.get("result"), " (outcome not recorded)")
        return f"edit {where}{how}{outcome}"
    if kind == "revert":
        return f"revert {', '.join(p.get('paths') or [])}"
    if kind == "test_feedback":
        out = without_specsnap_lines(str(p.get("diagnostics") or "")).strip()
        tail = f" | {_flat(str(out)[-OUTPUT_CHARS:], OUTPUT_CHARS + 10)}" if out else ""
        return f"test {_flat(p.get('command'), 500)} -> {p.get('result') or 'unknown'}{tail}"
    return None


@dataclass(frozen=True)
class SessionTrace:
    index: int
    status: str  # how the session ended (cleaved, ok, timeout, crashed)
    events: Sequence[dict[str, Any]]
    final_message: str | None = None


def render_lines(sessions: Iterable[SessionTrace]) -> list[str]:
    lines: list[str] = []
    for s in sessions:
        lines.append(f"### Session {s.index} ({s.status})")
        lines += [line for line in map(event_line, s.events) if line]
        if s.final_message and not said_by_specsnap(s.final_message):  # (a harness quoting SpecSnap's refusal)
            lines.append(f"said: {_flat(s.final_message, 1000)}")
    return lines


def keep_from_end(lines: list[str], budget: int) -> tuple[list[str], dict[str, int]]:
    """The last lines whose tokens fit ``budget``, and what was kept and cut."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = count_tokens(line + "\n")
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    kept.reverse()
    cut = len(lines) - len(kept)
    return kept, {"lines": len(lines), "kept": len(kept), "cut": cut, "tokens": used}


def render_trace(sessions: Iterable[SessionTrace], budget: int) -> tuple[str, dict[str, int]]:
    """The trace text a continuation's prompt carries, and its record (lines kept and cut, tokens)."""
    kept, record = keep_from_end(render_lines(sessions), budget)
    head = [f"[{record['cut']} earlier line(s) cut to fit {budget} tokens]"] if record["cut"] else []
    return "\n".join(head + kept), record
