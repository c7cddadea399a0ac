"""A session's own conversation as a handoff writer reads it (``handoff.source: conversation``,
docs/protocol.md#who-writes-a-handoff): the messages of the last model request the session made
(kept by the proxy as ``conversation.json``; it holds every turn the model saw, carried history
included), rendered as text lines, one per message part; then what the last reply did as the
harness recorded it (its events after that request, as the trace says them: the reply itself is
not in any request); then the session's closing message.

The request is whatever the harness sent, in its provider's wire shape (Anthropic Messages, OpenAI
Chat Completions or Responses, Gemini generateContent); it is read by shape, never trusted: every
part is flattened and cut to :data:`PART_CHARS`, and at most :data:`MAX_PARTS` are read. The
harness's system prompt and tool declarations are its own, not the session's: left out, as is every
part carrying a message SpecSnap itself wrote (a refusal, a proxy error: :mod:`sdcs_bench.core.voice`).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from sdcs_bench.core.voice import said_by_specsnap

PART_CHARS = 4000  # one rendered part at most
MAX_PARTS = 20_000  # parts read of one request at most
READ_LIMIT = 64 << 20  # the conversation file read at most (the proxy's request bodies are bounded lower)
CONVERSATION = "conversation.json"


def _flat(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= PART_CHARS else text[:PART_CHARS] + " [...]"


def _text_of(content: Any) -> str:
    """The text of a content value: a string, or a list of blocks with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("text"))
    return ""


def _messages(messages: list[Any]) -> list[tuple[str, str]]:
    """Anthropic Messages and OpenAI Chat Completions: ``messages`` of role and content."""
    out: list[tuple[str, str]] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") in ("system", "developer"):
            continue
        role, content = str(m.get("role") or "?"), m.get("content")
        if role == "tool":  # OpenAI Chat: a tool's result
            out.append(("tool result", _text_of(content)))
            continue
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    out.append((role, str(block.get("text", ""))))
                elif kind == "tool_use":
                    out.append((f"{role} called {block.get('name')}", block.get("input")))
                elif kind == "tool_result":
                    out.append(("tool result", _text_of(block.get("content"))))
        elif content:
            out.append((role, content))
        for call in m.get("tool_calls") or []:  # OpenAI Chat
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                out.append((f"{role} called {fn.get('name')}", fn.get("arguments")))
    return out


def _responses(items: Any) -> list[tuple[str, str]]:
    """OpenAI Responses: ``input`` as a string or a list of items."""
    if isinstance(items, str):
        return [("user", items)]
    out: list[tuple[str, str]] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") not in ("system", "developer"):
            out.append((str(item.get("role") or "?"), _text_of(item.get("content"))))
        elif kind in ("function_call", "custom_tool_call"):
            out.append((f"assistant called {item.get('name')}", item.get("arguments", item.get("input"))))
        elif kind == "local_shell_call":
            out.append(("assistant called shell", item.get("action")))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            out.append(("tool result", item.get("output")))
    return out


def _contents(contents: Any) -> list[tuple[str, str]]:
    """Gemini: ``contents`` of role and parts."""
    out: list[tuple[str, str]] = []
    for c in contents if isinstance(contents, list) else []:
        if not isinstance(c, dict):
            continue
        role = "assistant" if c.get("role") == "model" else str(c.get("role") or "user")
        for part in c.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if part.get("text") and not part.get("thought"):
                out.append((role, part["text"]))
            elif isinstance(part.get("functionCall"), dict):
                out.append((f"{role} called {part['functionCall'].get('name')}", part["functionCall"].get("args")))
            elif isinstance(part.get("functionResponse"), dict):
                out.append(("tool result", part["functionResponse"].get("response")))
    return out


def conversation_lines(request: Any, final_message: str | None = None, after: list[str] = ()) -> list[str]:
    """The conversation of a model request as text lines (``<who>: <text>``), oldest first; ``after``:
    the lines of what its reply did (trace lines of the events after it)."""
    parts: list[tuple[str, Any]] = []
    if isinstance(request, dict):
        if isinstance(request.get("messages"), list):
            parts = _messages(request["messages"][:MAX_PARTS])
        elif "input" in request:
            parts = _responses(request["input"][:MAX_PARTS] if isinstance(request["input"], list) else request["input"])
        elif isinstance(request.get("contents"), list):
            parts = _contents(request["contents"][:MAX_PARTS])
    lines = [f"{who}: {_flat(text)}" for who, text in parts[:MAX_PARTS] if text not in (None, "", [], {})]
    lines = [line for line in lines if not said_by_specsnap(line)]
    lines += [f"assistant then: {line}" for line in after]
    if final_message and not said_by_specsnap(final_message):
        lines.append(f"assistant (last message): {_flat(final_message)}")
    return lines


def read_conversation(stage: Path) -> tuple[Any, float | None]:
    """The last request a session's proxy saw and when (None: it kept none, or it cannot be read)."""
    path = Path(stage) / CONVERSATION
    try:
        with path.open("rb") as fh:
            data = fh.read(READ_LIMIT + 1)
        if len(data) > READ_LIMIT:
            return None, None
        kept = json.loads(data)
        at = kept.get("at")
        return kept.get("request"), float(at) if isinstance(at, (int, float)) else None
    except (OSError, ValueError, RecursionError, AttributeError):
        return None, None


def events_after(events: list[dict[str, Any]], at: float | None) -> list[dict[str, Any]]:
    """The events of a session stamped at or after ``at`` (seconds since the epoch): what the reply
    to its last request did. None: no time to go by, none."""
    if at is None:
        return []
    out = []
    for e in events:
        stamp = e.get("timestamp")
        try:
            when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        if when >= at:
            out.append(e)
    return out
