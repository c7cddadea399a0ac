"""One event schema for every session, whatever harness ran it (docs/coherence.md, "Event stream").

A session is a totally ordered stream of five event types (the coherence-debt paper's Section
2.1): ``file_read``, ``fact_extracted``, ``edit_intent``, ``test_feedback`` and ``revert``. Every
event carries the run id (``<trial>/session_<k>``), a monotone event id, a timestamp, the actor and
a payload of its type; file versions advance on every write, a restoring one included. A
harness's own record (its transcript) is coarser than the schema: what it cannot provide is
named in the event's ``unrecoverable`` list, never left silently empty, and a type a record
cannot yield at all is named in the stream's ``not_recorded``.

``tool_event`` numbers the tool calls of the session (1, 2, ...): the unit of residency's window,
which counts tool events, not the events one call produced (``cat a b`` is one tool event and two
reads). Paths are workspace-relative; a path outside the workspace (``../../etc/passwd``, an
absolute path elsewhere) never becomes an event: it is counted in ``escaped`` and dropped.

Writes made through a script the agent wrote carry ``via_script: true`` and a ``script`` record:
a shell redirect, heredoc, ``tee``, ``sed -i`` or copy (the shell line is the script), code handed
to an interpreter inline, or a file the agent wrote itself and then ran. Such writes are invisible
to the harness's edit tools, so a script's targets are known only when the script names them as
literals; otherwise the ``edit_intent`` has no path (``path`` is unrecoverable).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sdcs_bench.coherence import shell

EVENT_TYPES = ("file_read", "fact_extracted", "edit_intent", "test_feedback", "revert")
SCHEMA = "specsnap.events/1"
MAX_EVENTS = 100_000  # a session producing more is cut (and says so)
CLOCK_SLACK_S = 0.001  # a record's times are kept to the millisecond: an entry this close to the start is the session's
MAX_PATH_CHARS = 4096
MAX_TEXT = 2000  # diagnostics, commands and messages are cut to this many characters
ESCAPED_KEPT = 20

# What no harness transcript records: the paper's schema asks the actor to state these at edit
# time; historical logs never do.
NOT_IN_TRANSCRIPTS = {
    "file_read": ["repository_version", "bytes"],
    "edit_intent": ["required_facts", "relied_on"],
    "test_feedback": ["contradicted_intents"],
    "revert": ["triggering_feedback"],
}
WRITE_HINT = re.compile(r"\.write\(|write_text|write_bytes|open\([^)]*['\"][wax]")


def iso_time(value: Any) -> str | None:
    """An ISO-8601 UTC timestamp from an ISO string, epoch seconds or epoch milliseconds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and 10 <= len(value) <= 40:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return None


def _cut(text: Any, limit: int = MAX_TEXT) -> str:
    text = text if isinstance(text, str) else json.dumps(text, default=str)
    return text if len(text) <= limit else text[: limit - 15] + " …[cut]"


@dataclass
class Event:
    run_id: str
    event_id: int
    timestamp: str | None
    actor: str
    type: str
    tool_event: int | None
    payload: dict[str, Any]
    unrecoverable: list[str]
    source: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "event_id": self.event_id, "timestamp": self.timestamp, "actor": self.actor,
                "type": self.type, "tool_event": self.tool_event, "payload": self.payload,
                "unrecoverable": self.unrecoverable, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        return cls(**{k: data[k] for k in ("run_id", "event_id", "timestamp", "actor", "type", "tool_event", "payload",
                                           "unrecoverable", "source")})


@dataclass
class Stream:
    """A session's events, with what the normaliser could not read."""

    run_id: str
    harness: str
    events: list[Event] = field(default_factory=list)
    records: list[str] = field(default_factory=list)  # the files it was read from (relative to the stage)
    final_message: str | None = None  # the agent's last message (the closing turn), cut
    messages: int = 0
    tool_events: int = 0
    skipped: int = 0  # record lines or entries that could not be read (malformed, wrong shape, too long)
    escaped: list[str] = field(default_factory=list)  # the first paths outside the workspace (never events)
    escaped_count: int = 0
    not_recorded: dict[str, str] = field(default_factory=dict)  # event type -> why this record cannot yield it
    agent_written: list[str] = field(default_factory=list)  # every path the agent wrote, earlier sessions' too
    truncated: bool = False
    # a resumed conversation's record also holds the earlier sessions' turns: recognised by their time
    # (before this session started) and left out of every count and event; how many there were
    carried_tool_events: int = 0
    carried_events: int = 0
    # when each tool event began (ISO, None where its record has no time): the cost of resuming
    # counts the tool events up to a write by these (coherence/resume.py)
    tool_event_times: list[str | None] = field(default_factory=list)

    def by_type(self) -> dict[str, int]:
        return {t: sum(1 for e in self.events if e.type == t) for t in EVENT_TYPES}

    def summary(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "run_id": self.run_id, "harness": self.harness, "records": self.records,
            "events": len(self.events), "by_type": self.by_type(), "tool_events": self.tool_events,
            "messages": self.messages, "final_message": self.final_message, "skipped": self.skipped,
            "escaped_count": self.escaped_count, "escaped": self.escaped, "not_recorded": self.not_recorded,
            "script_writes": sum(1 for e in self.events if e.type == "edit_intent" and e.payload.get("via_script")),
            "agent_written": self.agent_written, "truncated": self.truncated,
            "carried": {"tool_events": self.carried_tool_events, "events": self.carried_events},
        }

    def jsonl(self) -> str:
        return "".join(json.dumps(e.to_dict(), sort_keys=True) + "\n" for e in self.events)


def read_events(path: Path) -> list[Event]:
    """The events of an ``events.jsonl`` this module wrote."""
    text = Path(path).read_text()
    return [Event.from_dict(json.loads(line)) for line in text.splitlines() if line.strip()]


class StreamBuilder:
    """Builds one session's stream in order: the normalisers call it as they walk a record.

    ``workdir`` is the sandbox path the harness saw (absolute paths in a record are judged against
    it); ``agent_written`` the paths earlier sessions of the trial wrote."""

    def __init__(self, run_id: str, harness: str, workdir: str | Path, agent_written: tuple[str, ...] | list[str] = (),
                 since: float | None = None):
        self.stream = Stream(run_id, harness)
        # ``since``: when this session started (a resumed conversation: what its record holds from
        # before is the earlier sessions' history, not this session's work)
        self.since = since
        self.carrying = False  # the current tool event is carried history
        self.workdir = posixpath.normpath(str(workdir))
        self.version: dict[str, int] = {}
        self.written: set[str] = set(agent_written)
        self.contents: dict[str, str] = {}  # what the agent wrote into a file, when the record carries it
        self.open_intents: dict[str, list[int]] = {}  # path -> edit_intent ids since the last commit
        self.tool_event: int | None = None

    # -- paths -----------------------------------------------------------------------------------
    def path(self, raw: Any, cwd: str | None = None) -> str | None:
        """The workspace-relative form of a path a record names, or None (escaped or unreadable)."""
        if not isinstance(raw, str) or not raw or "\0" in raw or len(raw) > MAX_PATH_CHARS:
            if isinstance(raw, str) and raw:
                self._escaped(raw)
            return None
        raw = raw.strip()
        if raw.startswith("file://"):
            raw = raw[len("file://"):]
        if raw.startswith("~"):
            self._escaped(raw)
            return None
        base = self.workdir if cwd is None else cwd
        joined = posixpath.normpath(raw if raw.startswith("/") else posixpath.join(base, raw))
        if joined == self.workdir:
            return "."
        if not joined.startswith(self.workdir.rstrip("/") + "/"):
            self._escaped(raw)
            return None
        return joined[len(self.workdir.rstrip("/")) + 1:]

    def cwd(self, raw: Any) -> str:
        """A record's working directory as an absolute path inside the workspace (else the workspace)."""
        if isinstance(raw, str) and raw:
            rel = self.path(raw)
            if rel is not None:
                return posixpath.normpath(posixpath.join(self.workdir, rel))
        return self.workdir

    def _escaped(self, raw: str) -> None:
        self.stream.escaped_count += 1
        if len(self.stream.escaped) < ESCAPED_KEPT:
            self.stream.escaped.append(_cut(raw, 200))

    # -- events ----------------------------------------------------------------------------------
    def carried(self, ts: Any) -> bool:
        """Is a record entry of time ``ts`` history this session was carried, from before it started?
        (An entry with no time is this session's.)"""
        if self.since is None:
            return False
        stamp = iso_time(ts)
        if stamp is None:
            return False
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() < self.since - CLOCK_SLACK_S

    def step(self, ts: Any = None) -> int | None:
        """A new tool event (one tool call of the agent), made at ``ts`` when the record says (else
        its first event's time is taken); the events emitted next belong to it. One of an earlier
        session (carried history) is not counted, and neither are its events."""
        self.carrying = self.carried(ts)
        if self.carrying:
            self.stream.carried_tool_events += 1
            return None
        self.stream.tool_events += 1
        self.tool_event = self.stream.tool_events
        self.stream.tool_event_times.append(iso_time(ts))
        return self.tool_event

    def message(self, text: Any, ts: Any = None) -> None:
        if self.carried(ts):
            return
        if isinstance(text, str) and text.strip():
            self.stream.messages += 1
            self.stream.final_message = _cut(text.strip(), 4000)

    def skip(self, n: int = 1) -> None:
        self.stream.skipped += n

    def _emit(self, type_: str, payload: dict[str, Any], *, ts: Any, actor: str, source: dict[str, Any],
              unrecoverable: list[str]) -> Event | None:
        if len(self.stream.events) >= MAX_EVENTS:
            self.stream.truncated = True
            return None
        if self.carried(ts) or (self.carrying and iso_time(ts) is None):
            self.stream.carried_events += 1
            return None
        timestamp = iso_time(ts)
        missing = list(unrecoverable) + ([] if timestamp else ["timestamp"])
        if self.tool_event is not None and timestamp and self.stream.tool_event_times[self.tool_event - 1] is None:
            self.stream.tool_event_times[self.tool_event - 1] = timestamp
        event = Event(self.stream.run_id, len(self.stream.events) + 1, timestamp, actor, type_, self.tool_event,
                      payload, sorted(set(missing)), source)
        self.stream.events.append(event)
        return event

    def read(self, raw: Any, *, lines: Any = "all", via: str, ts: Any = None, actor: str = "agent",
             source: dict[str, Any], cwd: str | None = None) -> Event | None:
        path = self.path(raw, cwd)
        if path is None:
            return None
        if isinstance(lines, tuple):
            lines = list(lines)
        payload = {"path": path, "file_version": self.version.get(path, 0), "repository_version": None,
                   "lines": lines, "via": via, "agent_written": path in self.written}
        missing = list(NOT_IN_TRANSCRIPTS["file_read"]) + ([] if lines is not None else ["lines"])
        return self._emit("file_read", payload, ts=ts, actor=actor, source=source, unrecoverable=missing)

    def write(self, raw: Any, *, kind: str, tool: str, ts: Any = None, actor: str = "agent", source: dict[str, Any],
              cwd: str | None = None, script: dict[str, Any] | None = None, result: str | None = None,
              content: str | None = None, known_path: bool = True) -> Event | None:
        """An ``edit_intent``. ``raw`` None with ``known_path`` False: a script wrote files this record
        does not name."""
        if raw is None and not known_path:
            path = None
        else:
            path = self.path(raw, cwd)
            if path is None:
                return None
        base = self.version.get(path, 0) if path else None
        payload = {"path": path, "base_version": base, "new_version": base + 1 if path else None,
                   "kind": kind, "tool": _cut(tool, 200), "via_script": script is not None, "script": script,
                   "required_facts": None, "relied_on": None, "result": result}
        missing = list(NOT_IN_TRANSCRIPTS["edit_intent"]) + ([] if path else ["path", "base_version", "new_version"])
        if result is None:
            missing.append("result")
        event = self._emit("edit_intent", payload, ts=ts, actor=actor, source=source, unrecoverable=missing)
        if event is not None and path:
            self.version[path] = base + 1
            self.written.add(path)
            self.open_intents.setdefault(path, []).append(event.event_id)
            if content is not None:
                self.contents[path] = content
            elif kind == "delete":
                self.contents.pop(path, None)
        return event

    def test(self, command: str, *, verdict: str | None, exit_code: int | None, diagnostics: str | None, ts: Any = None,
             actor: str = "agent", source: dict[str, Any]) -> Event | None:
        payload = {"command": _cut(command), "result": verdict, "exit_code": exit_code,
                   "diagnostics": _cut(diagnostics[-MAX_TEXT:]) if diagnostics else None, "contradicted_intents": None}
        missing = list(NOT_IN_TRANSCRIPTS["test_feedback"]) + ([] if verdict else ["result"])
        missing += [] if exit_code is not None else ["exit_code"]
        missing += [] if diagnostics else ["diagnostics"]
        return self._emit("test_feedback", payload, ts=ts, actor=actor, source=source, unrecoverable=missing)

    def revert(self, raws: list[Any] | None, *, restored: str | None, ts: Any = None, actor: str = "agent",
               source: dict[str, Any], cwd: str | None = None, tool: str) -> Event | None:
        """A compensating write: ``raws`` None restores every changed file (``git reset --hard``)."""
        if raws is None:
            paths = sorted(self.open_intents) or sorted(p for p, v in self.version.items() if v)
            scope = "all"
        else:
            paths = [p for p in (self.path(r, cwd) for r in raws) if p]
            if not paths:
                return None
            scope = "paths"
        reverted = sorted({i for p in paths for i in self.open_intents.pop(p, [])})
        new_versions = {}
        for p in paths:
            self.version[p] = self.version.get(p, 0) + 1
            new_versions[p] = self.version[p]
        payload = {"paths": paths, "scope": scope, "restored": restored, "new_versions": new_versions,
                   "reverted_intents": reverted, "reverted_intents_derived": True, "triggering_feedback": None,
                   "tool": _cut(tool, 200)}
        missing = list(NOT_IN_TRANSCRIPTS["revert"]) + ([] if restored else ["restored"])
        return self._emit("revert", payload, ts=ts, actor=actor, source=source, unrecoverable=missing)

    def fact(self, fact: str, value: Any, *, acquisition: str, from_path: Any = None, ts: Any = None,
             actor: str = "agent", source: dict[str, Any], text: str | None = None) -> Event | None:
        """A fact the agent took in; ``text``: what it learnt, where its record states it (a reference
        policy's requirement text, logged under the trace continuation)."""
        path = self.path(from_path) if from_path else None
        payload = {"fact": _cut(fact, 200), "value": value, "acquisition": acquisition,
                   "source_span": {"path": path, "file_version": self.version.get(path, 0) if path else None,
                                   "lines": None}}
        if isinstance(text, str) and text:
            payload["text"] = _cut(text)
        missing = ["source_span.lines"] + ([] if path else ["source_span.path"])
        return self._emit("fact_extracted", payload, ts=ts, actor=actor, source=source, unrecoverable=missing)

    def committed(self) -> None:
        self.open_intents.clear()

    # -- a shell command -------------------------------------------------------------------------
    def shell(self, command: Any, *, cwd: str | None = None, output: str | None = None, exit_code: int | None = None,
              ts: Any = None, actor: str = "agent", source: dict[str, Any], tool: str = "shell",
              failed: bool | None = None) -> None:
        """The events of one shell tool call: its reads, its writes (each flagged as a script write),
        its reverts, its test run, and the writes of any script the agent wrote and ran."""
        if not isinstance(command, str):
            self.skip()
            return
        cwd = cwd or self.workdir
        try:
            actions = shell.analyse(command, cwd)
        except (RecursionError, ValueError, MemoryError):
            self.skip()
            return
        cmd = _cut(command, 500)
        for act in actions:
            if isinstance(act, shell.Read):
                self.read(act.path, lines=act.lines, via="shell", ts=ts, actor=actor, source=source)
            elif isinstance(act, shell.Write):
                result = None if failed is None else ("error" if failed else "ok")
                self.write(act.path, kind=act.kind, tool=tool, ts=ts, actor=actor, source=source,
                           script={"kind": act.script, "command": cmd}, result=result, content=act.content)
            elif isinstance(act, shell.Revert):
                if not failed:
                    self.revert(list(act.paths) if act.paths is not None else None, restored=act.restored, ts=ts,
                                actor=actor, source=source, tool=tool)
            elif isinstance(act, shell.Test):
                verdict = shell.test_verdict(output, exit_code)
                if verdict is None and failed is not None:
                    verdict = "fail" if failed else "pass"
                self.test(act.command, verdict=verdict, exit_code=exit_code, diagnostics=output, ts=ts, actor=actor,
                          source=source)
            elif isinstance(act, shell.Commit):
                if not failed:
                    self.committed()
            elif isinstance(act, shell.RunScript):
                self._ran_script(act.path, cmd, ts=ts, actor=actor, source=source)
            elif isinstance(act, shell.Inline):
                self._script_writes(act.code, {"kind": "inline", "command": cmd}, ts=ts, actor=actor, source=source,
                                    unknown_if_writes=True)

    def _ran_script(self, raw: str, cmd: str, *, ts: Any, actor: str, source: dict[str, Any]) -> None:
        path = self.path(raw)
        if path is None or path not in self.written:
            return  # not a script the agent wrote: the repository's own tooling
        info = {"kind": "agent_file", "command": cmd, "file": path}
        code = self.contents.get(path)
        if code is None:  # written some way the record does not show: what it wrote is unknown
            self.write(None, kind="unknown", tool="shell", ts=ts, actor=actor, source=source, script=info,
                       known_path=False)
            return
        self._script_writes(code, info, ts=ts, actor=actor, source=source, unknown_if_writes=True)

    def _script_writes(self, code: str | None, info: dict[str, Any], *, ts: Any, actor: str, source: dict[str, Any],
                       unknown_if_writes: bool) -> None:
        if not code:
            return
        targets = shell.python_write_targets(code)
        for target in targets:
            self.write(target, kind="modify", tool="shell", ts=ts, actor=actor, source=source, script=info)
        if not targets and unknown_if_writes and WRITE_HINT.search(code):
            self.write(None, kind="unknown", tool="shell", ts=ts, actor=actor, source=source, script=info,
                       known_path=False)

    def finish(self, not_recorded: dict[str, str]) -> Stream:
        self.stream.not_recorded = dict(not_recorded)
        self.stream.agent_written = sorted(self.written)
        return self.stream
