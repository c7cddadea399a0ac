"""Replay scripts: the model turns a replay-mode proxy serves, in order (docs/agents.md).

A script is YAML (or JSON)::

    model: replay-model            # the name reported back (optional)
    sessions:                      # per session index; "responses" serves any other session
      1:
        - text: "I'll add the module and commit."
          tool_calls:
            - {name: Write, arguments: {file_path: "{workdir}/pkg/new.py", content: "X = 1\\n"}}
            - {name: Bash, arguments: {command: "git add -A && git commit -qm wip"}}
          usage: {uncached_input: 1200, cache_read: 0, cache_write: 300, output: 80}
      2:
        - {text: "Done.", usage: {uncached_input: 900, output: 12}}
    responses: []

Each entry is one model reply. Optional keys: ``match`` (serve this entry only to a request whose
body contains the string: side calls such as a title request), ``repeat`` (never used up),
``error: {status: 529, message: ...}`` (an infrastructure failure instead of a reply) and
``delay_s``. ``{workdir}`` in any string of a tool call's arguments becomes the sandbox path.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.proxy.wire import Reply, ToolCall

ENTRY_KEYS = {"text", "tool_calls", "usage", "match", "repeat", "error", "delay_s", "reasoning_text", "note"}
USAGE_KEYS = {"uncached_input", "cache_read", "cache_write", "output", "reasoning"}


@dataclass
class Entry:
    reply: Reply
    match: str | None = None
    repeat: bool = False
    error: dict[str, Any] | None = None
    delay_s: float = 0.0
    used: bool = False


@dataclass
class ReplayScript:
    path: Path
    model: str
    sessions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> ReplayScript:
        path = Path(path)
        if not path.is_file():
            raise SpecSnapError(f"replay script {path} does not exist")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise SpecSnapError(f"replay script {path} is not valid YAML: {exc}") from exc
        return cls.from_data(data, path)

    @classmethod
    def from_data(cls, data: dict[str, Any], path: Path) -> ReplayScript:
        """A script from its parsed content (a trial file carries it, so a stage reads no conf/);
        ``path`` only names it in messages."""
        if not isinstance(data, dict):
            raise SpecSnapError(f"replay script {path} must be a mapping (model, sessions or responses)")
        sessions = {str(k): v for k, v in (data.get("sessions") or {}).items()}
        if "responses" in data:
            sessions["*"] = data["responses"]
        script = cls(Path(path), str(data.get("model", "replay-model")), sessions)
        for key, entries in sessions.items():
            for i, raw in enumerate(entries or []):
                _entry(raw, f"{path} session {key} entry {i + 1}", {})  # validate now, not mid-session
        return script

    def for_session(self, index: int, variables: dict[str, str]) -> SessionScript:
        raw = self.sessions.get(str(index), self.sessions.get("*", []))
        where = f"{self.path} session {index}"
        return SessionScript([_entry(r, f"{where} entry {i + 1}", variables) for i, r in enumerate(raw or [])])

    def expected_usage(self, index: int) -> TokenUsage:
        """The sum of every non-error entry of a session, each counted once (what a test compares
        the ledger with when the session used its whole script once; a ``repeat`` entry served
        n times adds its usage n times to the ledger)."""
        total = TokenUsage(source="proxy")
        for entry in self.for_session(index, {}).entries:
            if entry.error is None:
                total = total + entry.reply.usage
        return total


class SessionScript:
    """The entries of one session, handed out under a lock (requests arrive concurrently)."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self._lock = threading.Lock()

    def take(self, body: str) -> tuple[int, Entry] | None:
        with self._lock:
            for want_match in (True, False):
                for i, entry in enumerate(self.entries):
                    if entry.used or (entry.match is not None) != want_match:
                        continue
                    if want_match and entry.match not in body:
                        continue
                    entry.used = not entry.repeat
                    return i, entry
        return None



def _substitute(value: Any, variables: dict[str, str]) -> Any:
    if isinstance(value, str):
        for name, sub in variables.items():
            value = value.replace("{" + name + "}", sub)
        return value
    if isinstance(value, list):
        return [_substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, variables) for k, v in value.items()}
    return value


def _entry(raw: Any, where: str, variables: dict[str, str]) -> Entry:
    if not isinstance(raw, dict):
        raise SpecSnapError(f"{where}: an entry must be a mapping")
    extra = set(raw) - ENTRY_KEYS
    if extra:
        raise SpecSnapError(f"{where}: unknown key(s) {sorted(extra)}", ENTRY_KEYS)
    usage = raw.get("usage") or {}
    bad = set(usage) - USAGE_KEYS
    if bad:
        raise SpecSnapError(f"{where}: unknown usage component(s) {sorted(bad)}", USAGE_KEYS)
    calls = []
    for j, call in enumerate(raw.get("tool_calls") or []):
        if not isinstance(call, dict) or "name" not in call:
            raise SpecSnapError(f"{where}: tool call {j + 1} needs a name")
        args = call.get("arguments", {})
        if isinstance(args, str):
            args = json.loads(args)
        calls.append(ToolCall(str(call["name"]), _substitute(args, variables), str(call.get("id", ""))))
    reply = Reply(
        text=str(raw.get("text", "")),
        tool_calls=tuple(calls),
        usage=TokenUsage(**{k: int(v) for k, v in usage.items()}, source="proxy"),
        reasoning_text=str(raw.get("reasoning_text", "")),
    )
    error = raw.get("error")
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("status"), int)):
        raise SpecSnapError(f"{where}: error must be a mapping with an integer status")
    return Entry(reply, raw.get("match"), bool(raw.get("repeat", False)), error, float(raw.get("delay_s", 0)))
