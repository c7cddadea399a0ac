"""The four wire protocols a coding-agent harness speaks to its model (docs/agents.md).

For each protocol: how to recognise a request, how to render a scripted reply (replay mode),
and how to read the usage out of a reply, streamed or not (both modes: in replay the proxy reads
back what it rendered, so the parser is exercised on every call). Usage always lands in the
five disjoint components of :class:`~sdcs_bench.core.tokens.TokenUsage`; every vendor's own
inclusive/exclusive convention is undone here and nowhere else.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sdcs_bench.core.tokens import TokenUsage

ANTHROPIC = "anthropic_messages"
OPENAI_CHAT = "openai_chat"
OPENAI_RESPONSES = "openai_responses"
GEMINI = "gemini"
PROTOCOLS = (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI)

# Which provider family (and so which real endpoint) each protocol belongs to.
FAMILY = {ANTHROPIC: "anthropic", OPENAI_CHAT: "openai", OPENAI_RESPONSES: "openai", GEMINI: "gemini"}

# Components a protocol cannot carry: a script asking for them would be silently lost on the wire.
UNREPRESENTABLE = {
    ANTHROPIC: ("reasoning",),  # thinking is billed inside output_tokens
    OPENAI_CHAT: ("cache_write",),
    OPENAI_RESPONSES: ("cache_write",),
    GEMINI: ("cache_write",),
}


# --------------------------------------------------------------------------- the allowlist
#
# The one home of which requests the proxy relays (docs/agents.md#the-model-proxy): exactly the model
# calls the pinned harnesses make, and the few reads (model lists, token counts) they need. Anything
# else is refused. Matching is on the raw request target, with strict character classes: a path
# fullmatches one pattern below (so no `%`, `\`, `;`, `@`, `//`, dot segment or absolute URI can pass),
# and its query string holds only that call's allowlisted keys, each once, with plain values. The
# upstream URL is rebuilt from the match (:attr:`Call.path`), never from the client's bytes.

_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"  # one path segment: a model name (never `.` or `..`)
_MODEL_ID = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"  # a model id (OpenAI fine-tunes: `ft:gpt-4o:org::id`)
_QUERY_VALUE = re.compile(r"[A-Za-z0-9._~-]{1,256}")  # a query value: no escapes, no separators
_METHOD = re.compile(r"[A-Z]{1,16}")
MAX_TARGET = 2048  # a longer request target is refused unread


@dataclass(frozen=True)
class Rule:
    """One allowed model call: ``method`` + a path ``template`` of one provider ``family``."""

    method: str
    family: str  # anthropic | openai | gemini: which upstream it goes to
    template: str  # its path; `{model}` is one path segment (`{model}:action` for Gemini)
    protocol: str | None  # the wire protocol of a model call; None for a model list
    kind: str  # "generate", "count_tokens", "models"
    query: frozenset[str] = frozenset()  # the query keys it may carry

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.template, _SEGMENT if self.family == "gemini" else _MODEL_ID)


@functools.lru_cache(maxsize=None)
def _compiled(template: str, model: str) -> re.Pattern[str]:
    return re.compile(re.escape(template).replace(re.escape("{model}"), f"(?P<model>{model})"))


_GEMINI_Q = frozenset({"alt", "key"})
ALLOWED: tuple[Rule, ...] = (
    # Anthropic Messages: Claude Code (`?beta=true`), mini-swe-agent on Anthropic, the summary handoff.
    Rule("POST", "anthropic", "/v1/messages", ANTHROPIC, "generate", frozenset({"beta"})),
    Rule("POST", "anthropic", "/v1/messages/count_tokens", ANTHROPIC, "count_tokens", frozenset({"beta"})),
    Rule("GET", "anthropic", "/v1/models", None, "models", frozenset({"beta", "limit", "after_id", "before_id"})),
    Rule("GET", "anthropic", "/v1/models/{model}", None, "models", frozenset({"beta"})),
    # OpenAI: Chat Completions (Aider, mini-swe-agent, `command`), Responses (Codex, opencode, handoff).
    Rule("POST", "openai", "/v1/chat/completions", OPENAI_CHAT, "generate"),
    Rule("POST", "openai", "/v1/responses", OPENAI_RESPONSES, "generate"),
    Rule("GET", "openai", "/v1/models", None, "models"),
    Rule("GET", "openai", "/v1/models/{model}", None, "models"),
    # Gemini: Gemini CLI (`:streamGenerateContent?alt=sse`), the summary handoff.
    Rule("POST", "gemini", "/v1beta/models/{model}:generateContent", GEMINI, "generate", _GEMINI_Q),
    Rule("POST", "gemini", "/v1beta/models/{model}:streamGenerateContent", GEMINI, "generate", _GEMINI_Q),
    Rule("POST", "gemini", "/v1beta/models/{model}:countTokens", GEMINI, "count_tokens", _GEMINI_Q),
    Rule("GET", "gemini", "/v1beta/models", None, "models", frozenset({"key", "alt", "pageSize", "pageToken"})),
    Rule("GET", "gemini", "/v1beta/models/{model}", None, "models", _GEMINI_Q),
)
FAMILIES = ("anthropic", "openai", "gemini")


@dataclass(frozen=True)
class Call:
    """An allowed request, as the proxy relays it: its canonical path and query, rebuilt from the match."""

    method: str
    path: str  # canonical: the rule's template with the matched model name
    query: tuple[tuple[str, str], ...]  # (key, value) in the client's order, each key once
    protocol: str | None
    kind: str
    families: tuple[str, ...]  # the providers it may go to (two for `GET /v1/models`)
    model: str | None = None  # the model named in the path, if any

    def target(self, query: tuple[tuple[str, str], ...] | None = None) -> str:
        """Path and query string (``query`` replaces the client's: e.g. the real key for a stand-in)."""
        q = self.query if query is None else query
        return self.path + ("?" + "&".join(f"{k}={v}" for k, v in q) if q else "")


def match(method: str, target: str, families: tuple[str, ...] = FAMILIES) -> Call | None:
    """The allowed call ``method target`` is (``target``: the raw request target, path and query
    string, byte for byte as the client sent it), or None: refuse it. Only ``families``' calls."""
    if not _METHOD.fullmatch(method) or len(target) > MAX_TARGET or not target.startswith("/"):
        return None
    path, sep, qs = target.partition("?")
    if sep and not qs:
        return None  # a bare `?`
    found = [(rule, m) for rule in ALLOWED if rule.method == method and rule.family in families
             and (m := rule.pattern.fullmatch(path))]
    if not found:
        return None
    rule, m = found[0]
    allowed_keys = frozenset().union(*(r.query for r, _ in found))
    query: list[tuple[str, str]] = []
    for pair in qs.split("&") if qs else ():
        key, eq, value = pair.partition("=")
        if not eq or key not in allowed_keys or key in (k for k, _ in query) or not _QUERY_VALUE.fullmatch(value):
            return None
        query.append((key, value))
    model = m.groupdict().get("model")
    path_out = rule.template.replace("{model}", model) if model else rule.template
    return Call(method, path_out, tuple(query), rule.protocol, rule.kind,
                tuple(r.family for r, _ in found), model)


def shown(text: str, limit: int = 200) -> str:
    """A client's bytes, safe to write in a ledger or a message: truncated, non-printables escaped."""
    out = "".join(c if " " < c < "\x7f" and c != "\\" else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                  for c in text[:limit])
    return out + ("..." if len(text) > limit else "")


def wants_stream(protocol: str, path: str, body: dict[str, Any]) -> bool:
    if protocol == GEMINI:
        return ":streamGenerateContent" in path
    return bool(body.get("stream"))


def request_model(protocol: str, path: str, body: dict[str, Any]) -> str:
    if protocol == GEMINI:
        tail = path.split("?", 1)[0].rsplit("/models/", 1)[-1]
        return tail.split(":", 1)[0]
    return str(body.get("model", ""))


# --------------------------------------------------------------------------- scripted replies


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""  # filled in at render time when the script gives none


@dataclass(frozen=True)
class Reply:
    """One model turn, protocol-neutral: text and/or tool calls, and what it cost."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TokenUsage = field(default_factory=lambda: TokenUsage(source="proxy"))
    reasoning_text: str = ""

    @property
    def stops_for_tools(self) -> bool:
        return bool(self.tool_calls)


def check_representable(protocol: str, usage: TokenUsage) -> None:
    lost = [c for c in UNREPRESENTABLE[protocol] if getattr(usage, c)]
    if lost:
        raise ValueError(f"{protocol} cannot carry usage component(s) {lost}; set them to 0 in the script")


def render(protocol: str, reply: Reply, model: str, stream: bool, seq: int) -> tuple[str, Iterator[bytes]]:
    """(content type, body chunks) of a scripted reply in ``protocol``."""
    check_representable(protocol, reply.usage)
    prefix = "toolu_replay" if protocol == ANTHROPIC else "call_replay"
    calls = tuple(c if c.id else ToolCall(c.name, c.arguments, f"{prefix}_{seq}_{j}") for j, c in enumerate(reply.tool_calls))
    reply = Reply(reply.text, calls, reply.usage, reply.reasoning_text)
    renderer = _RENDERERS[protocol]
    if stream:
        return "text/event-stream", renderer.stream(reply, model, seq)
    return "application/json", iter([json.dumps(renderer.whole(reply, model, seq)).encode()])


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class _Anthropic:
    @staticmethod
    def usage(u: TokenUsage) -> dict[str, int]:
        return {
            "input_tokens": u.uncached_input,
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cache_read,
            "output_tokens": u.output,
        }

    @classmethod
    def blocks(cls, reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.text:
            out.append({"type": "text", "text": reply.text})
        out += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in reply.tool_calls]
        return out

    @classmethod
    def whole(cls, reply: Reply, model: str, seq: int) -> dict[str, Any]:
        return {
            "id": f"msg_replay_{seq}", "type": "message", "role": "assistant", "model": model,
            "content": cls.blocks(reply), "stop_reason": "tool_use" if reply.stops_for_tools else "end_turn",
            "stop_sequence": None, "usage": cls.usage(reply.usage),
        }

    @classmethod
    def stream(cls, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        start = cls.whole(reply, model, seq)
        usage = start.pop("usage")
        start.update(content=[], stop_reason=None, usage={**usage, "output_tokens": 0})
        yield sse({"type": "message_start", "message": start}, "message_start")
        for i, block in enumerate(cls.blocks(reply)):
            if block["type"] == "text":
                yield sse({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                          "content_block_start")
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                empty = {**block, "input": {}}
                yield sse({"type": "content_block_start", "index": i, "content_block": empty}, "content_block_start")
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield sse({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta")
            yield sse({"type": "content_block_stop", "index": i}, "content_block_stop")
        stop = "tool_use" if reply.stops_for_tools else "end_turn"
        yield sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": reply.usage.output}}, "message_delta")
        yield sse({"type": "message_stop"}, "message_stop")

    @staticmethod
    def parse(events: Iterable[dict[str, Any]]) -> TokenUsage | None:
        fields_: dict[str, int] = {}
        found = False
        for ev in events:
            usage = ev.get("usage") if ev.get("type") in (None, "message", "message_delta") else None
            if ev.get("type") == "message_start":
                usage = (ev.get("message") or {}).get("usage")
            if isinstance(usage, dict):
                found = True
                fields_.update({k: v for k, v in usage.items() if isinstance(v, int)})
                creation = usage.get("cache_creation")  # (the 5-minute / 1-hour split of the cache writes)
                if isinstance(creation, dict) and isinstance(creation.get("ephemeral_1h_input_tokens"), int):
                    fields_["ephemeral_1h_input_tokens"] = creation["ephemeral_1h_input_tokens"]
        if not found:
            return None
        return TokenUsage(
            uncached_input=fields_.get("input_tokens", 0),
            cache_read=fields_.get("cache_read_input_tokens", 0),
            cache_write=fields_.get("cache_creation_input_tokens", 0),
            output=fields_.get("output_tokens", 0),
            cache_write_1h=min(fields_.get("ephemeral_1h_input_tokens", 0), fields_.get("cache_creation_input_tokens", 0)),
            source="proxy",
        )


def chat_usage(usage: dict[str, Any], source: str = "proxy", litellm: bool = False) -> TokenUsage:
    """An OpenAI Chat Completions ``usage`` object as disjoint components: ``prompt_tokens``
    includes the cached tokens, ``completion_tokens`` the reasoning ones. With ``litellm``, also
    the cache fields litellm passes through from Anthropic (``cache_read_input_tokens``,
    ``cache_creation_input_tokens``, both inside ``prompt_tokens``)."""
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    written = 0
    if litellm:
        cached = cached or int(usage.get("cache_read_input_tokens") or 0)
        written = int(usage.get("cache_creation_input_tokens") or 0)
    reasoning = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
    return TokenUsage(uncached_input=prompt - cached - written, cache_read=cached, cache_write=written,
                      output=completion - reasoning, reasoning=reasoning, source=source)


class _OpenAIChat:
    @staticmethod
    def usage(u: TokenUsage) -> dict[str, Any]:
        prompt, completion = u.uncached_input + u.cache_read, u.output + u.reasoning
        return {
            "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning},
        }

    @staticmethod
    def tool_calls(reply: Reply) -> list[dict[str, Any]]:
        return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in reply.tool_calls]

    @classmethod
    def whole(cls, reply: Reply, model: str, seq: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = cls.tool_calls(reply)
        return {
            "id": f"chatcmpl-replay-{seq}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if reply.stops_for_tools else "stop"}],
            "usage": cls.usage(reply.usage),
        }

    @classmethod
    def stream(cls, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        base = {"id": f"chatcmpl-replay-{seq}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        yield chunk({"role": "assistant", "content": ""})
        if reply.text:
            yield chunk({"content": reply.text})
        for i, call in enumerate(cls.tool_calls(reply)):
            yield chunk({"tool_calls": [{"index": i, **call}]})
        yield chunk({}, "tool_calls" if reply.stops_for_tools else "stop")
        yield sse({**base, "choices": [], "usage": cls.usage(reply.usage)})
        yield b"data: [DONE]\n\n"

    @staticmethod
    def parse(events: Iterable[dict[str, Any]]) -> TokenUsage | None:
        usage = None
        for ev in events:
            if isinstance(ev.get("usage"), dict):
                usage = ev["usage"]
        return None if usage is None else chat_usage(usage)


class _OpenAIResponses:
    @staticmethod
    def usage(u: TokenUsage) -> dict[str, Any]:
        inp, out = u.uncached_input + u.cache_read, u.output + u.reasoning
        return {
            "input_tokens": inp, "input_tokens_details": {"cached_tokens": u.cache_read},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": inp + out,
        }

    @staticmethod
    def items(reply: Reply, seq: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if reply.reasoning_text:
            items.append({"type": "reasoning", "id": f"rs_replay_{seq}",
                          "summary": [{"type": "summary_text", "text": reply.reasoning_text}]})
        if reply.text:
            items.append({"type": "message", "id": f"msg_replay_{seq}", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
        for i, c in enumerate(reply.tool_calls):
            items.append({"type": "function_call", "id": f"fc_replay_{seq}_{i}", "call_id": c.id, "name": c.name,
                          "arguments": json.dumps(c.arguments), "status": "completed"})
        return items

    @classmethod
    def whole(cls, reply: Reply, model: str, seq: int) -> dict[str, Any]:
        return {"id": f"resp_replay_{seq}", "object": "response", "created_at": int(time.time()),
                "status": "completed", "model": model, "output": cls.items(reply, seq),
                "usage": cls.usage(reply.usage)}

    @classmethod
    def stream(cls, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        done = cls.whole(reply, model, seq)
        n = 0

        def ev(kind: str, **data: Any) -> bytes:
            nonlocal n
            n += 1
            return sse({"type": kind, "sequence_number": n, **data}, kind)

        yield ev("response.created", response={**done, "status": "in_progress", "output": [], "usage": None})
        for i, item in enumerate(done["output"]):
            if item["type"] == "message":
                yield ev("response.output_item.added", output_index=i, item={**item, "content": [],
                                                                             "status": "in_progress"})
                text = item["content"][0]["text"]
                yield ev("response.content_part.added", item_id=item["id"], output_index=i, content_index=0,
                         part={"type": "output_text", "text": "", "annotations": []})
                yield ev("response.output_text.delta", item_id=item["id"], output_index=i, content_index=0,
                         delta=text)
                yield ev("response.output_text.done", item_id=item["id"], output_index=i, content_index=0, text=text)
                yield ev("response.content_part.done", item_id=item["id"], output_index=i, content_index=0,
                         part=item["content"][0])
            else:
                yield ev("response.output_item.added", output_index=i, item=item)
            yield ev("response.output_item.done", output_index=i, item=item)
        yield ev("response.completed", response=done)

    @staticmethod
    def parse(events: Iterable[dict[str, Any]]) -> TokenUsage | None:
        usage = None
        for ev in events:
            holder = ev.get("response") if isinstance(ev.get("response"), dict) else ev
            if isinstance(holder.get("usage"), dict):
                usage = holder["usage"]
        if usage is None:
            return None
        inp, out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        cached = int((usage.get("input_tokens_details") or {}).get("cached_tokens") or 0)
        reasoning = int((usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0)
        return TokenUsage(uncached_input=inp - cached, cache_read=cached, output=out - reasoning,
                          reasoning=reasoning, source="proxy")


class _Gemini:
    @staticmethod
    def usage(u: TokenUsage) -> dict[str, int]:
        prompt = u.uncached_input + u.cache_read
        meta = {"promptTokenCount": prompt, "candidatesTokenCount": u.output,
                "totalTokenCount": prompt + u.output + u.reasoning}
        if u.cache_read:
            meta["cachedContentTokenCount"] = u.cache_read
        if u.reasoning:
            meta["thoughtsTokenCount"] = u.reasoning
        return meta

    @staticmethod
    def parts(reply: Reply) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        if reply.text:
            parts.append({"text": reply.text})
        parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in reply.tool_calls]
        return parts

    @classmethod
    def whole(cls, reply: Reply, model: str, seq: int) -> dict[str, Any]:
        return {
            "candidates": [{"content": {"role": "model", "parts": cls.parts(reply)}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": cls.usage(reply.usage), "modelVersion": model, "responseId": f"replay-{seq}",
        }

    @classmethod
    def stream(cls, reply: Reply, model: str, seq: int) -> Iterator[bytes]:
        yield sse(cls.whole(reply, model, seq))

    @staticmethod
    def parse(events: Iterable[dict[str, Any]]) -> TokenUsage | None:
        meta = None
        for ev in events:
            if isinstance(ev.get("usageMetadata"), dict):
                meta = ev["usageMetadata"]  # cumulative: the last one counts
        if meta is None:
            return None
        prompt = int(meta.get("promptTokenCount") or 0) + int(meta.get("toolUsePromptTokenCount") or 0)
        cached = int(meta.get("cachedContentTokenCount") or 0)
        return TokenUsage(uncached_input=prompt - cached, cache_read=cached,
                          output=int(meta.get("candidatesTokenCount") or 0),
                          reasoning=int(meta.get("thoughtsTokenCount") or 0), source="proxy")


_RENDERERS = {ANTHROPIC: _Anthropic, OPENAI_CHAT: _OpenAIChat, OPENAI_RESPONSES: _OpenAIResponses, GEMINI: _Gemini}


def parse_body(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """The JSON objects of a reply: one for a plain body, one per ``data:`` line of an SSE stream
    (Gemini's non-SSE stream is a JSON array)."""
    text = body.decode("utf-8", errors="replace")
    if "event-stream" in content_type or text.lstrip().startswith(("data:", "event:")):
        out = []
        for line in text.splitlines():
            if line.startswith("data:"):
                payload = line[5:].strip()
                if payload and payload != "[DONE]":
                    try:
                        out.append(json.loads(payload))
                    except json.JSONDecodeError:
                        continue
        return [o for o in out if isinstance(o, dict)]
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    if isinstance(data, list):
        return [d for d in data if isinstance(d, dict)]
    return [data] if isinstance(data, dict) else []


def parse_usage(protocol: str, body: bytes, content_type: str) -> TokenUsage | None:
    """What a reply says it cost, as disjoint components; None when it carries no usage."""
    return _RENDERERS[protocol].parse(parse_body(body, content_type))


def error_body(protocol: str | None, status: int, message: str) -> dict[str, Any]:
    """An error in the shape each client library expects, so harnesses report it cleanly."""
    if protocol == ANTHROPIC:
        kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol == GEMINI:
        state = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED",
                 503: "UNAVAILABLE"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": message, "status": state}}
    return {"error": {"message": message, "type": "specsnap_proxy", "code": str(status)}}
