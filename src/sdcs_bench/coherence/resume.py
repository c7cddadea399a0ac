"""The cost of resuming (docs/scoring.md, "The cost of resuming").

Every session after the first resumes someone's work. What it costs to get going again is counted
up to its **first useful edit**: the first completed write to a source file (a file the cleave
rule would count: ``.py``, not the arm's memory files nor a protected path) that adds at least one
non-blank line, every line it added being still in that file when the trial ends. Lines are
compared stripped, as sets, as :func:`scoring.scorer.s1_edit_survived` compares the cut hunk; a
write that only deletes adds nothing and is never a useful edit. The record keeps a short digest
of each added line, not the line, and at most ``MAX_WRITES`` writes of ``MAX_ADDED`` digests: its
size is bounded whatever the agent writes, and no text the agent wrote is copied into it.

During the session the watcher records each completed write: when it was made (see
``session.cleave.CleaveController._record_write``) and the lines it added to what the file held before (its previous write in the
session, else the session's start) (:class:`WrittenFile`). After the session, :func:`write_costs` puts each write on the session's
clock: the answered model calls whose request came at or before it, and their tokens (a reference
policy: its metered steps, asked before each step), the tool events whose timestamps are not later than it, the wall time
since the agent started, and which files of earlier sessions (those they read or wrote, from
their event streams) this session had read by then. Which write was the first useful one is known
only at the end of the trial: :func:`resume_report` decides it from the final tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sdcs_bench.coherence.events import Event
from sdcs_bench.core.timing import timed

MAX_WRITES = 500  # writes recorded per session (later ones are counted, not kept)
MAX_ADDED = 400  # added lines kept per write (a write adding more is judged on these)
READ_LIMIT = 4 << 20  # a source file larger than this is not read: a write to it adds nothing the record follows
MAX_LINES_KEPT = 2_000_000  # line digests held while a session runs (past it the record stops, incomplete)
MAX_FILES_SEEN = 5_000  # files of earlier sessions carried to the next (past it: the first, in order)
FIELDS = ("calls", "tokens", "tool_events", "wall_s", "reread_share")


def line_set(data: bytes) -> set[str]:
    """A file's lines as the survival tests compare them: the digests of its stripped, non-blank
    lines, as a set."""
    return {hashlib.blake2b(s.encode(), digest_size=8).hexdigest()
            for line in data.decode("utf-8", "replace").splitlines() if (s := line.strip())}


class WrittenFile:
    """The writes of one session, as the watcher completes them (the caller serialises the calls).

    ``start`` maps each source file to its bytes at the session's start (None: not read, being too
    large or not a regular file), read into line digests when the file is first written and then
    dropped. A write whose file's previous content could not be read (too large, a link, gone) is
    recorded as adding nothing: what it added is unknown."""

    def __init__(self, start: dict[str, bytes | None]) -> None:
        self._start = start
        self._lines: dict[str, set[str] | None] = {}  # path -> its lines as last written (None: unknown)
        self._kept = 0  # digests held in _lines
        self._full = False  # past MAX_LINES_KEPT: nothing more is recorded
        self.writes: list[dict[str, Any]] = []
        self.dropped = 0  # writes past MAX_WRITES
        self.failed: str | None = None  # why the record is incomplete (the watcher failed, a limit)

    def wrote(self, rel: str, data: bytes | None, at: float) -> None:
        if self._full:
            return
        if rel in self._lines:
            before = self._lines[rel]
        else:
            start = self._start.pop(rel, b"")  # (a file not there at the start: created in the session)
            before = line_set(start) if start is not None else None
        now = line_set(data) if data is not None else None
        self._kept += len(now or ()) - len(before or ())
        self._lines[rel] = now
        if self._kept > MAX_LINES_KEPT:
            self.failed = f"more than {MAX_LINES_KEPT:,} distinct lines written: the record stops here"
            self._full = True
            self._lines.clear()
            return
        added = sorted(now - before) if now is not None and before is not None else []
        if not added:
            return
        if len(self.writes) >= MAX_WRITES:
            self.dropped += 1
            return
        self.writes.append({"path": rel, "at": round(at, 4), "added": added[:MAX_ADDED], "added_count": len(added)})

    def record(self) -> dict[str, Any]:
        return {"writes": self.writes, "dropped": self.dropped, "failed": self.failed}


def _epoch(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def files_touched(events: Iterable[Event]) -> set[str]:
    """The files a session read or wrote, by its event stream (reads, edits with a path, reverts)."""
    out: set[str] = set()
    for e in events:
        if e.type in ("file_read", "edit_intent") and e.payload.get("path"):
            out.add(str(e.payload["path"]))
        elif e.type == "revert":
            out.update(str(p) for p in e.payload.get("paths") or [] if p)
    return out


def write_costs(written: dict[str, Any], *, calls: dict[str, Any] | None, events: list[Event],
                tool_event_times: list[str | None], started: float, prior: Iterable[str]) -> dict[str, Any]:
    """Each recorded write on the session's clock (see the module's text). ``calls`` is the session's
    call count as the cleave controller kept it (``per_call`` tokens, ``at`` times, ``by``);
    ``tool_event_times`` when each tool event began. A quantity the records cannot place in time
    is None, with the reason in ``unplaced``."""
    prior = set(prior)
    unplaced: dict[str, str] = {}
    per_call = list((calls or {}).get("per_call") or [])
    call_at = list((calls or {}).get("at") or [])
    if calls is None:
        unplaced["calls"] = "the session's calls were not counted"
    elif any(t is None for t in call_at) or len(call_at) != len(per_call):
        unplaced["calls"] = "a model call (or metered step) has no time"
    elif calls.get("unreadable_meters"):
        unplaced["calls"] = "a metered step's record could not be read"
    tool_times = [_epoch(ts) for ts in tool_event_times]
    if any(t is None for t in tool_times):
        unplaced["tool_events"] = "the harness's record has tool calls without a time"
    reads = [(_epoch(e.timestamp), str(e.payload["path"])) for e in events
             if e.type == "file_read" and e.payload.get("path") in prior]
    if any(t is None for t, _ in reads):
        unplaced["reread"] = "a read of an earlier session's file has no timestamp"
    out = []
    for w in written.get("writes") or []:
        t = float(w["at"])
        row: dict[str, Any] = {"path": w["path"], "at": w["at"], "added": w["added"], "added_count": w["added_count"],
                               "wall_s": round(max(0.0, t - started), 3)}
        if "calls" not in unplaced:
            upto = [n for n, at in zip(per_call, call_at) if at <= t]
            row["calls"], row["tokens"] = len(upto), sum(upto)
        if "tool_events" not in unplaced:
            row["tool_events"] = sum(1 for at in tool_times if at <= t)
        if "reread" not in unplaced:
            row["reread"] = sorted({p for at, p in reads if at <= t})
        out.append(row)
    return {"writes": out, "prior_files": len(prior), "by": (calls or {}).get("by"), "unplaced": unplaced,
            "dropped": written.get("dropped", 0), "failed": written.get("failed")}


@timed("session instruments")
def resume_report(sessions: list[dict[str, Any]], final_lines: Callable[[str], set[str] | None]) -> dict[str, Any]:
    """The cost of resuming of each continuation session (those whose record has ``resume``), from
    the final tree (``final_lines(path)``: the digests of the file's lines at the end, None when it
    is gone or cannot be read). Each file is read once, and only the digests some write added are
    kept of it."""
    needed: dict[str, set[str]] = {}
    for s in sessions:
        for w in (s.get("resume") or {}).get("writes") or []:
            needed.setdefault(w["path"], set()).update(w["added"])
    present: dict[str, set[str] | None] = {}
    for path, digests in needed.items():
        lines = final_lines(path)
        present[path] = digests & lines if lines is not None else None

    def survives(w: dict[str, Any]) -> bool:
        kept = present.get(w["path"])
        return bool(w["added"]) and kept is not None and set(w["added"]) <= kept

    out = []
    for s in sessions:
        costs = s.get("resume")
        if costs is None:
            continue
        # the earliest write that survives (writes are recorded as the watcher completes them)
        first = min((w for w in costs["writes"] if survives(w)), key=lambda w: w["at"], default=None)
        row: dict[str, Any] = {"session": s["session"], "index": s.get("index"), "agent": s.get("agent"),
                               "reached": first is not None, "by": costs.get("by"),
                               "prior_files": costs.get("prior_files"),
                               "complete": not costs.get("failed") and not costs.get("dropped")}
        if first is not None:
            row["path"] = first["path"]
            for k in ("calls", "tokens", "tool_events", "wall_s"):
                row[k] = first.get(k)
            reread, prior = first.get("reread"), costs.get("prior_files")
            row["reread"] = reread
            row["reread_share"] = round(len(reread) / prior, 4) if reread is not None and prior else None
        if costs.get("unplaced"):
            row["unplaced"] = costs["unplaced"]
        if costs.get("failed"):
            row["problem"] = f"the watcher failed; writes after it are not recorded: {costs['failed']}"
        out.append(row)
    return {"sessions": out, **summary(out)}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A trial's resume figures over its continuation sessions whose record is complete: the share
    that reached a useful edit, and the mean of each cost over those that did (None where none
    did, or none could be placed). ``incomplete`` counts the sessions left out."""
    complete = [r for r in rows if r.get("complete", True)]
    reached = [r for r in complete if r["reached"]]
    out: dict[str, Any] = {"continuations": len(rows), "incomplete": len(rows) - len(complete),
                           "reached_share": round(len(reached) / len(complete), 4) if complete else None}
    for k in FIELDS:
        vals = [r[k] for r in reached if r.get(k) is not None]
        out[k] = round(sum(vals) / len(vals), 4) if vals else None
    return out
