"""The model proxy (docs/agents.md#the-model-proxy): one local HTTP server per session, between a
harness and its model. Every byte a client sends is treated as an attacker's.

- **forward** mode relays each call to the real endpoint, streaming the reply back unchanged,
  and appends the call's usage (read from the reply itself) to the session's ledger: the same
  count for every harness, and one that survives a killed harness.
- **replay** mode serves a script's turns instead (:mod:`.script`): no network, no key.
- Only model calls pass (:data:`.wire.ALLOWED`: method + path per provider, matched on the raw
  request target); the upstream URL is rebuilt from the match, on the configured base. Anything
  else is refused (403), in both modes.
- With a ``session_token``, every request must carry exactly that stand-in as its credential
  (else 401); in forward mode the real ``credential`` takes its place on the way upstream, so the
  harness never holds the real key.
- Bounded: body size (as sent and as decoded), connections at once, time to send a request,
  requests per minute, refusal rows in the ledger.
- In both modes, every model call first asks the session's cleave controller (``refusal``). Once
  the cleave has fired, or when the controller cannot judge in time whether it has, the call is
  refused (HTTP 403) and recorded as refused with the reason: a harness cannot think on after its
  stop, and an unanswered question never fails open.
- While ``refusal`` is asked, the call being made is known on the asking thread
  (:func:`call_in_flight`: its mode, protocol, model and body), and whoever asks may be told how
  it ended (:meth:`CallInFlight.when_ended`: its ledger row, or None). A run's budget
  (session/budget.py) prices the call at its worst case and reserves that before it is made, and
  turns the reservation into the call's cost when it ends.

Request headers (where the credential travels) are never stored.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import hmac
import io
import json
import os
import re
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sdcs_bench.core import voice
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.proxy import wire
from sdcs_bench.proxy.script import SessionScript

DEFAULT_UPSTREAMS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host",
              "accept-encoding", "upgrade", "proxy-connection", "te", "trailer"}
# Never relayed upstream either: what would name the client or steer a gateway.
NOT_RELAYED = HOP_BY_HOP | {"expect", "cookie", "proxy-authorization", "forwarded", "via", "x-forwarded-for",
                            "x-forwarded-host", "x-forwarded-proto", "x-real-ip"}
# Where a harness puts its key: the stand-in must be in each one present (and in `?key=`).
CREDENTIAL_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "api-key")
_TOKEN_FORM = re.compile(r"[A-Za-z0-9._~-]{16,256}")  # a stand-in: fits a header and a query value
INFRA_STATUSES = (408, 409, 429, 500, 502, 503, 504, 529)  # the provider's trouble, not the agent's


class CallInFlight:
    """The model call a proxy's thread is answering, as whoever ``refusal`` asks may see it (the
    run's budget prices it before it is made): what it asks, and whom to tell how it ended."""

    def __init__(self, mode: str, protocol: str | None, model: str | None, payload: dict[str, Any],
                 body: bytes) -> None:
        self.mode, self.protocol, self.model = mode, protocol, model
        self.payload, self.body = payload, body
        self._ended: list[Callable[[dict[str, Any] | None], object]] = []
        self.over = False

    def when_ended(self, tell: Callable[[dict[str, Any] | None], object]) -> None:
        """Call ``tell`` once the call has ended: with its ledger row, or None when the proxy failed
        while answering it (no row)."""
        self._ended.append(tell)

    def end(self, row: dict[str, Any] | None) -> None:
        if self.over:
            return
        self.over = True
        for tell in self._ended:
            tell(row)


_IN_FLIGHT: contextvars.ContextVar[CallInFlight | None] = contextvars.ContextVar("specsnap_call", default=None)


def call_in_flight() -> CallInFlight | None:
    """The model call this thread's proxy is answering (while it asks ``refusal``), or None."""
    return _IN_FLIGHT.get()


@contextlib.contextmanager
def _in_flight(call: CallInFlight) -> Iterator[CallInFlight]:
    token = _IN_FLIGHT.set(call)
    try:
        yield call
    finally:
        _IN_FLIGHT.reset(token)
        call.end(None)  # (ended without its row: the proxy failed while answering it)


def upstream_overrides() -> dict[str, str]:
    """SPECSNAP_UPSTREAM_ANTHROPIC / _OPENAI / _GEMINI: send a provider's forwarded calls to another
    endpoint (a gateway, a regional endpoint) without editing any agent's config."""
    return {p: os.environ[f"SPECSNAP_UPSTREAM_{p.upper()}"] for p in DEFAULT_UPSTREAMS
            if os.environ.get(f"SPECSNAP_UPSTREAM_{p.upper()}")}


class Ledger:
    """Per-call records of one session, appended as JSON lines (and kept in memory)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, row: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            row = {"seq": len(self.rows) + 1, **row}
            self.rows.append(row)
            if self.path is not None:
                with self.path.open("a") as fh:
                    fh.write(json.dumps(row, sort_keys=True) + "\n")
        return row

    def totals(self) -> TokenUsage:
        return ledger_totals(self.rows)


def ledger_totals(rows: list[dict[str, Any]]) -> TokenUsage:
    total = TokenUsage(source="proxy")
    for row in rows:
        if row.get("usage"):
            total = total + TokenUsage.from_dict({**row["usage"], "source": "proxy"})
    return total


def read_ledger(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class ModelProxy:
    """A proxy for one session. ``with ModelProxy(...) as proxy:`` serves on ``proxy.url``."""

    def __init__(
        self,
        *,
        ledger: Path | None,
        mode: str = "replay",
        script: SessionScript | None = None,
        model: str = "replay-model",
        upstreams: dict[str, str] | None = None,
        refusal: Callable[[], str | None] = lambda: None,
        on_answered: Callable[..., object] = lambda tokens, seq, at: None,
        dump_dir: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        upstream_timeout_s: float = 600.0,
        provider: str | None = None,  # only this provider's calls pass (None: any of the three)
        session_token: str | None = None,  # the stand-in every request must carry (None: no check)
        credential: str | None = None,  # forward mode: the real key, put in the stand-in's place upstream
        max_body_bytes: int = 32 * 2**20,  # one request body, as sent and as decoded (gzip, deflate, zstd)
        max_connections: int = 16,  # connections served at once; one more is answered 503 and closed
        socket_timeout_s: float = 60.0,  # each wait on a client's socket (an idle keep-alive one too)
        request_timeout_s: float = 120.0,  # to send one whole request, from its first byte
        max_requests_per_minute: int = 600,  # this session's requests (a sliding minute); more get 429
        max_ledgered_refusals: int = 1000,  # refusals ledgered one by one; later ones are only counted
    ) -> None:
        if mode not in ("replay", "forward"):
            raise ValueError(f"proxy mode {mode!r} is not one of replay, forward")
        if mode == "replay" and script is None:
            raise ValueError("replay mode needs a script")
        if provider is not None and provider not in wire.FAMILIES:
            raise ValueError(f"proxy provider {provider!r} is not one of {', '.join(wire.FAMILIES)}")
        if session_token is not None and not _TOKEN_FORM.fullmatch(session_token):
            raise ValueError("a session token is 16-256 characters of [A-Za-z0-9._~-]")
        if credential is not None and (session_token is None or mode != "forward"):
            raise ValueError("a credential is put in place of a session token, in forward mode only")
        if mode == "forward" and session_token is not None and not credential:
            raise ValueError("forward mode with a session token needs the real credential to put in its place")
        if credential is not None and any(c in credential for c in "\r\n\0"):
            raise ValueError("the credential has a line break or a NUL")
        self.mode = mode
        self.script = script
        self.model = model
        self.upstreams = {**DEFAULT_UPSTREAMS, **upstream_overrides(), **(upstreams or {})}
        self.refusal = refusal
        # Told of every answered model call (its tokens, ledger row, and when its request came): a
        # token or turn cut rule fires there, so the call that reaches the cut is the last one answered.
        self.on_answered = on_answered
        self.ledger = Ledger(ledger)
        self.dump_dir = dump_dir
        self.last_request: dict[str, Any] | None = None  # the last generate request's body, parsed, and when
        self.last_request_at: float | None = None
        self.upstream_timeout_s = upstream_timeout_s
        self.families = (provider,) if provider else wire.FAMILIES
        self.session_token = session_token
        self._credential = credential  # (never in a ledger row, a log or a message)
        self.max_body_bytes = max_body_bytes
        self.max_connections = max_connections
        self.socket_timeout_s = socket_timeout_s
        self.request_timeout_s = request_timeout_s
        self.max_requests_per_minute = max_requests_per_minute
        self.max_ledgered_refusals = max_ledgered_refusals
        self._recent: collections.deque[float] = collections.deque()  # admitted requests of the last minute
        self._rate_lock = threading.Lock()
        self._refusals = 0
        self.refusals_unledgered = 0
        self._server = _Server((host, port), _Handler, self)
        # Calls being answered right now: stop() waits for them, so a call still being read to its
        # end (its caller killed mid-reply) is ledgered before anyone reads the ledger's totals.
        self._in_flight = 0
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self._client = None

    def __repr__(self) -> str:  # (never the credential)
        return f"ModelProxy(mode={self.mode!r}, url={self.url!r})"

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ModelProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, name="specsnap-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, after every call in flight has been answered and ledgered (an idle
        keep-alive connection is not waited for)."""
        self._server.shutdown()
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=self.upstream_timeout_s + 30)
        self._server.server_close()
        if self._client is not None:
            self._client.close()
        if self.refusals_unledgered:
            self.ledger.append({"at": time.time(), "method": None, "path": None, "protocol": None, "kind": "other",
                                "source": "proxy", "mode": self.mode, "status": None, "refused": True,
                                "refused_reason": f"{self.refusals_unledgered} more refusals, not ledgered one by one",
                                "count": self.refusals_unledgered, "usage": None})
            self.refusals_unledgered = 0

    def __enter__(self) -> ModelProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ one request

    def handle(self, req: _Handler) -> None:
        with self._idle:
            self._in_flight += 1
        try:
            self._handle(req)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def refuse(self, req: _Handler | None, status: int, row: dict[str, Any], reason: str, protocol: str | None = None,
               message: str | None = None, t0: float | None = None) -> None:
        """Answer ``status`` and ledger the refusal, up to ``max_ledgered_refusals`` rows (later ones
        are counted). A small unread body is read and dropped (the client sees the answer, and may
        send its next request on the same connection); any other unread request closes the connection."""
        if req is not None:
            keep = req.drop_small_body() if status in (401, 403, 429) else False
            req.send_json(status, wire.error_body(protocol, status, f"{voice.PROXY}{message or reason}"),
                          close=not keep)
        with self._rate_lock:
            self._refusals += 1
            if self._refusals > self.max_ledgered_refusals:
                self.refusals_unledgered += 1
                return
        self.ledger.append({**row, "status": status, "refused": True, "refused_reason": reason, "usage": None,
                            "latency_s": round(time.monotonic() - t0, 4) if t0 is not None else None})

    def _admit(self) -> bool:
        """Within the rate cap? (Only admitted requests count: a client hammering on is refused
        until its own earlier requests leave the minute.)"""
        with self._rate_lock:
            now = time.monotonic()
            while self._recent and now - self._recent[0] >= 60.0:
                self._recent.popleft()
            if len(self._recent) >= self.max_requests_per_minute:
                return False
            self._recent.append(now)
            return True

    def _authorized(self, req: _Handler, call: wire.Call) -> bool:
        """Does every credential the request carries equal the session token (and is there one)?"""
        assert self.session_token is not None
        presented: list[str] = []
        for name in CREDENTIAL_HEADERS:
            for value in req.headers.get_all(name) or ():
                value = value.strip()
                if name == "authorization":
                    scheme, _, value = value.partition(" ")
                    value = value.strip() if scheme.lower() == "bearer" else "\0"
                presented.append(value)
        presented += [v for k, v in call.query if k == "key"]
        token = self.session_token.encode()
        return bool(presented) and all(hmac.compare_digest(v.encode("latin-1", "replace"), token) for v in presented)

    def _handle(self, req: _Handler) -> None:
        t0 = time.monotonic()
        method, target = req.command, req.target
        base = {"at": time.time(), "source": "proxy", "mode": self.mode}
        call = wire.match(method, target, self.families)
        if call is None:
            shown = f"{wire.shown(method, 16)} {wire.shown(target)}"
            self.refuse(req, 403, {**base, "method": wire.shown(method, 16), "path": wire.shown(target),
                                   "protocol": None, "kind": "other"}, f"not an allowed model call: {shown}", t0=t0)
            return
        row: dict[str, Any] = {"at": base["at"], "method": method, "path": call.path, "protocol": call.protocol,
                               "kind": call.kind, "source": "proxy", "mode": self.mode}
        if self.session_token is not None and not self._authorized(req, call):
            self.refuse(req, 401, row, "no session token", call.protocol,
                        "this request does not carry this session's token", t0=t0)
            return
        if not self._admit():
            self.refuse(req, 429, row, f"over {self.max_requests_per_minute} requests a minute", call.protocol, t0=t0)
            return
        try:
            body = req.read_body(self.max_body_bytes)
        except _BadRequest as exc:
            self.refuse(req, exc.status, row, exc.reason, call.protocol, t0=t0)
            return
        try:
            payload = json.loads(body) if body else {}
        except (ValueError, RecursionError):  # (not JSON, or nested too deep to parse)
            payload = {}
        if not isinstance(payload, dict):
            payload = {}
        if self.dump_dir is not None:
            self._dump(row, payload)
        if call.kind == "generate":  # the session's conversation as the model last saw it (a handoff may read it)
            self.last_request, self.last_request_at = payload, base["at"]
        if call.protocol is not None:
            row["model"] = wire.request_model(call.protocol, call.path, payload)[:200]  # (the client's text)
            row["stream"] = wire.wants_stream(call.protocol, call.path, payload)
        # The call is known to whoever ``refusal`` asks on this thread (the run's budget reserves its
        # worst case there), and is told how it ended: by its ledger row, or without one.
        with _in_flight(CallInFlight(self.mode, call.protocol, row.get("model"), payload, body)) as pending:
            reason = self.refusal() if call.kind == "generate" else None
            if reason is not None:
                status = 403
                why = ("this session was cleaved; no further model calls are allowed" if reason == "cleaved"
                       else f"this call cannot be answered: {reason}")
                req.send_json(status, wire.error_body(call.protocol, status, f"{voice.SPECSNAP}{why}"))
                pending.end(self.ledger.append({**row, "status": status, "refused": True, "refused_reason": reason,
                                                "usage": None, "latency_s": round(time.monotonic() - t0, 4)}))
                return
            if self.mode == "forward":
                status, usage, note = self._forward(req, call, body)
            else:
                status, usage, note = self._replay(req, call, payload, body)
            if getattr(req, "client_gone", False):
                note["client_gone"] = True  # the harness died mid-reply; the call still counts
            done = self.ledger.append({**row, "status": status, "refused": False,
                                       "usage": usage.to_dict() if usage else None,
                                       "latency_s": round(time.monotonic() - t0, 4), **note})
            pending.end(done)  # (before on_answered: a budget charging the row there finds it charged)
            if call.kind == "generate" and status == 200:
                self.on_answered(usage.total if usage else 0, done["seq"], row["at"])

    def _replay(self, req: _Handler, call: wire.Call, payload: dict, body: bytes) -> tuple[int, TokenUsage | None, dict]:
        if call.kind == "models":
            req.send_json(200, {"object": "list", "data": [{"id": self.model, "object": "model"}],
                                "models": [{"name": f"models/{self.model}"}]})
            return 200, None, {}
        if call.kind == "count_tokens":
            estimate = max(1, len(body) // 4)
            req.send_json(200, {"input_tokens": estimate, "totalTokens": estimate})
            return 200, None, {}
        assert self.script is not None and call.protocol is not None
        picked = self.script.take(body.decode("utf-8", errors="replace"))
        if picked is None:
            reply, note = wire.Reply(text="(replay script exhausted)"), {"replay_entry": None, "exhausted": True}
        else:
            index, entry = picked
            note = {"replay_entry": index + 1}
            if entry.delay_s:
                time.sleep(entry.delay_s)
            if entry.error is not None:
                status = int(entry.error["status"])
                req.send_json(status, wire.error_body(call.protocol, status, str(entry.error.get("message", "error"))))
                return status, None, note
            reply = entry.reply
        seq = len(self.ledger.rows) + 1
        ctype, chunks = wire.render(call.protocol, reply, self.model or "replay-model", bool(payload.get("stream")) or
                                    wire.wants_stream(call.protocol, call.path, payload), seq)
        sent = req.send_stream(200, ctype, chunks)
        return 200, wire.parse_usage(call.protocol, sent, ctype), note

    def _family(self, req: _Handler, call: wire.Call) -> str:
        """Which provider a call goes to (`GET /v1/models` is Anthropic's and OpenAI's)."""
        if len(call.families) == 1:
            return call.families[0]
        keys = {k.lower() for k in req.headers}
        return "anthropic" if "anthropic" in call.families and keys & {"anthropic-version", "x-api-key"} else \
            next(f for f in call.families if f != "anthropic")

    def _upstream_headers(self, req: _Handler) -> list[tuple[str, str]]:
        """The request's headers as relayed: hop-by-hop and client-naming ones dropped, the real
        credential in place of the stand-in, and no header carrying the stand-in otherwise."""
        out = []
        for name, value in req.headers.items():
            low = name.lower()
            if low in NOT_RELAYED:
                continue
            if self._credential is not None and low in CREDENTIAL_HEADERS:
                value = f"Bearer {self._credential}" if low == "authorization" else self._credential
            elif self.session_token is not None and self.session_token in value:
                continue
            out.append((name, value))
        return out

    def _forward(self, req: _Handler, call: wire.Call, body: bytes) -> tuple[int, TokenUsage | None, dict]:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(self.upstream_timeout_s, connect=30.0))
        family = self._family(req, call)
        upstream = self.upstreams[family].rstrip("/")
        query = call.query
        if self._credential is not None:
            query = tuple((k, quote(self._credential, safe="") if k == "key" else v) for k, v in query)
        url = httpx.URL(upstream + call.target(query))  # the configured base (its own path kept) + the canonical call
        base = httpx.URL(upstream)
        if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):  # (never another host)
            req.send_json(400, wire.error_body(call.protocol, 400, f"{voice.PROXY}the path leaves the upstream"))
            return 400, None, {"refused_path": True}
        try:
            with self._client.stream(call.method, url, headers=self._upstream_headers(req), content=body) as resp:
                ctype = resp.headers.get("content-type", "application/json")
                extra = {k: self._masked_text(v) for k, v in resp.headers.items()
                         if k.lower() not in HOP_BY_HOP | {"content-type"}}
                sent = req.send_stream(resp.status_code, ctype, self._masked(resp.iter_bytes()), extra=extra)
        except httpx.HTTPError as exc:
            status = 502
            req.send_json(status, wire.error_body(call.protocol, status,
                                                  f"{voice.PROXY}upstream unreachable ({type(exc).__name__})"))
            return status, None, {"upstream_error": type(exc).__name__}
        usage = wire.parse_usage(call.protocol, sent, ctype) if call.kind == "generate" and call.protocol else None
        return resp.status_code, usage, {"upstream": family}

    def _masked_text(self, value: str) -> str:
        return value.replace(self._credential, "[credential]") if self._credential else value

    def _masked(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """An upstream reply with every occurrence of the real credential masked, even one split
        across chunks (only a chunk's tail that could begin it is held back, for the next chunk)."""
        if not self._credential:
            yield from chunks
            return
        secret = self._credential.encode()
        pending = b""
        for chunk in chunks:
            data = (pending + chunk).replace(secret, b"[credential]")
            keep = next((n for n in range(min(len(secret) - 1, len(data)), 0, -1) if data.endswith(secret[:n])), 0)
            pending = data[len(data) - keep:] if keep else b""
            if len(data) > keep:
                yield data[:len(data) - keep]
        if pending:
            yield pending

    def _dump(self, row: dict, payload: dict) -> None:
        assert self.dump_dir is not None
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        n = len(list(self.dump_dir.glob("*.json"))) + 1
        (self.dump_dir / f"{n:04d}.json").write_text(json.dumps({**row, "body": payload}, indent=1, default=str))


# --------------------------------------------------------------------------- the HTTP server


class _BadRequest(Exception):
    """A request the proxy refuses once it has begun to read it (its status and why)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class _Server(ThreadingHTTPServer):
    """One thread per connection, at most ``max_connections`` at once: one more is answered 503
    and closed on the accepting thread, so no thread is kept for a connection waiting its turn."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, proxy: ModelProxy) -> None:
        self.proxy = proxy
        self._slots = threading.BoundedSemaphore(proxy.max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._turn_away(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _turn_away(self, request: socket.socket) -> None:
        cap = self.proxy.max_connections
        body = json.dumps({"error": {"message": f"{voice.PROXY}more than {cap} connections at once",
                                     "type": "specsnap_proxy", "code": "503"}}).encode()
        head = (f"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
                "\r\nretry-after: 1\r\nconnection: close\r\n\r\n").encode()
        try:
            request.setblocking(False)  # (never wait on this client)
            request.send(head + body)
        except OSError:
            pass
        self.proxy.refuse(None, 503, {"at": time.time(), "method": None, "path": None, "protocol": None,
                                      "kind": "other", "source": "proxy", "mode": self.proxy.mode},
                          f"more than {cap} connections at once")

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that went away or timed out: nothing to report
        super().handle_error(request, client_address)


class _TimedReader(io.RawIOBase):
    """A client socket read with two clocks: each wait at most ``socket_timeout_s``, and a whole
    request at most ``request_timeout_s`` from its first byte (so a client trickling a byte at a
    time cannot pin its thread)."""

    def __init__(self, handler: _Handler) -> None:
        self.handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        h, proxy = self.handler, self.handler.proxy
        wait = proxy.socket_timeout_s
        if h.read_deadline is not None:
            left = h.read_deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request was not sent in time")
            wait = min(wait, left)
        h.connection.settimeout(wait)
        n = h.connection.recv_into(buffer)
        if n and h.reading and h.read_deadline is None:
            h.read_deadline = time.monotonic() + proxy.request_timeout_s
        return n


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SpecSnapProxy/1"

    @property
    def proxy(self) -> ModelProxy:
        return self.server.proxy  # type: ignore[attr-defined]

    def setup(self) -> None:
        self.timeout = self.proxy.socket_timeout_s
        super().setup()
        self.rfile.close()  # (the socket stays open: read through the timed reader instead)
        self.rfile = io.BufferedReader(_TimedReader(self), 65536)
        self.read_deadline: float | None = None
        self.reading = self.responded = False

    def handle_one_request(self) -> None:
        self.read_deadline, self.reading = None, True  # (an idle keep-alive wait has no deadline)
        self.responded = False
        super().handle_one_request()

    def _done_reading(self) -> None:
        if self.reading:
            self.read_deadline, self.reading = None, False
            self.connection.settimeout(self.proxy.socket_timeout_s)

    def send_response(self, code: int, message: str | None = None) -> None:
        self._done_reading()  # (a reply is being written: the request's clock stops)
        self.responded = True
        super().send_response(code, message)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return  # requests are in the ledger; headers (keys) are never logged

    @property
    def target(self) -> str:
        """The request target exactly as sent (the base class rewrites a leading `//` in ``path``)."""
        words = self.requestline.split(" ")
        return words[1] if len(words) == 3 else self.requestline

    def _dispatch(self) -> None:
        try:
            self.proxy.handle(self)
        except OSError:  # the client went away, or was too slow
            self.close_connection = True
        except Exception as exc:  # never a thread that dies silently: answered (if not yet) and ledgered
            self.close_connection = True
            try:
                self.proxy.refuse(None if self.responded else self, 500, {"at": time.time(), "method": wire.shown(self.command, 16),
                                              "path": wire.shown(self.target), "protocol": None, "kind": "other",
                                              "source": "proxy", "mode": self.proxy.mode},
                                  f"proxy error ({type(exc).__name__})")
            except OSError:
                pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):  # every method, known or not, reaches the allowlist (and its ledger row)
            return self._dispatch
        raise AttributeError(name)

    def read_body(self, cap: int) -> bytes:
        """The request's body, decoded: at most ``cap`` bytes as sent and as decoded, else 413
        before the rest is read; a malformed length or chunk gives 400."""
        try:
            raw = self._read_raw(cap)
        except TimeoutError:
            raise _BadRequest(408, "the request body was not sent in time") from None
        finally:
            self._done_reading()
        encoding = self.headers.get("content-encoding", "")
        body = decoded(raw, encoding, cap)
        if encoding:
            del self.headers["content-encoding"]
        return body

    def drop_small_body(self, limit: int = 65536) -> bool:
        """Read and drop a body of at most ``limit`` bytes with a valid Content-Length (or none);
        False when the body is chunked, malformed or bigger (then never read)."""
        try:
            if self.headers.get_all("transfer-encoding"):
                return False
            self._read_raw(limit)
            return True
        except (_BadRequest, OSError):
            return False
        finally:
            self._done_reading()

    def _read_raw(self, cap: int) -> bytes:
        te = [v.strip().lower() for v in self.headers.get_all("transfer-encoding") or ()]
        lengths = [v.strip() for v in self.headers.get_all("content-length") or ()]
        if te and lengths:
            raise _BadRequest(400, "both Transfer-Encoding and Content-Length")
        if te:
            if te != ["chunked"]:
                raise _BadRequest(400, f"unsupported Transfer-Encoding {wire.shown(', '.join(te), 40)}")
            return self._read_chunked(cap)
        if len(lengths) > 1 or (lengths and not re.fullmatch(r"[0-9]{1,15}", lengths[0])):
            raise _BadRequest(400, f"malformed Content-Length {wire.shown(', '.join(lengths), 40)}")
        length = int(lengths[0]) if lengths else 0
        if length > cap:
            raise _BadRequest(413, f"a body of {length} bytes is over the cap of {cap}")
        raw = self.rfile.read(length) if length else b""
        if len(raw) != length:
            raise _BadRequest(400, "the body ended before its Content-Length")
        return raw

    def _read_chunked(self, cap: int) -> bytes:
        parts, total = [], 0
        while True:
            line = self.rfile.readline(1026)
            if not line.endswith(b"\n"):
                raise _BadRequest(400, "a malformed chunk size line")
            size_text = line.rstrip(b"\r\n").split(b";", 1)[0].strip()
            if not re.fullmatch(rb"[0-9A-Fa-f]{1,15}", size_text):
                raise _BadRequest(400, f"a malformed chunk size {wire.shown(size_text.decode('latin-1'), 40)}")
            size = int(size_text, 16)
            if size == 0:
                break
            total += size
            if total > cap:
                raise _BadRequest(413, f"a chunked body over the cap of {cap} bytes")
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise _BadRequest(400, "a chunk shorter than its size")
            parts.append(chunk)
        for _ in range(64):  # trailers, then the blank line
            line = self.rfile.readline(8194)
            if line in (b"\r\n", b"\n"):
                return b"".join(parts)
            if not line.endswith(b"\n"):
                break
        raise _BadRequest(400, "malformed chunked trailers")

    def send_json(self, status: int, data: Any, close: bool = False) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        if close:
            self.send_header("connection", "close")  # (what is left of the request is never read)
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)

    def send_stream(self, status: int, ctype: str, chunks: Iterator[bytes], extra: dict[str, str] | None = None) -> bytes:
        """Send chunks as they come (chunked transfer encoding); return the whole body. If the
        client goes away (a killed harness), the rest is still read: a forwarded call is billed
        whether or not its caller lived to read the answer, so its usage must reach the ledger."""
        sent = bytearray()
        alive = True
        try:
            self.send_response(status)
            self.send_header("content-type", ctype)
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            if "event-stream" in ctype:
                self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
        except OSError:
            alive = False
        for chunk in chunks:
            if not chunk:
                continue
            sent += chunk
            if alive:
                try:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                except OSError:
                    alive = False
        if alive:
            try:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                alive = False
        self.client_gone = not alive
        if not alive:
            self.close_connection = True
        return bytes(sent)


# --------------------------------------------------------------------------- request bodies, decoded


def decoded(raw: bytes, encoding: str, cap: int) -> bytes:
    """A body decoded per its Content-Encoding, incrementally, never past ``cap`` bytes of output
    (a decompression bomb is refused 413 having produced at most ``cap + 1`` bytes)."""
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return raw
    try:
        if enc in ("gzip", "x-gzip"):
            return _inflate(raw, 31, cap, members=True)
        if enc == "deflate":
            try:
                return _inflate(raw, 15, cap)  # zlib-wrapped, as HTTP says
            except zlib.error:
                return _inflate(raw, -15, cap)  # raw deflate, as some clients send
        if enc == "zstd":
            return _unzstd(raw, cap)
    except zlib.error:
        raise _BadRequest(400, f"a malformed {enc} body") from None
    raise _BadRequest(415, f"unsupported Content-Encoding {wire.shown(encoding, 40)}")


def _inflate(raw: bytes, wbits: int, cap: int, members: bool = False) -> bytes:
    out = bytearray()
    data = raw
    while True:
        d = zlib.decompressobj(wbits)
        while True:
            out += d.decompress(data, cap + 1 - len(out))
            if len(out) > cap:
                raise _BadRequest(413, f"a body decoding to more than the cap of {cap} bytes")
            if d.eof:
                data = d.unused_data
                break
            if not d.unconsumed_tail:  # all input read, output not capped, stream not ended
                raise _BadRequest(400, "a truncated compressed body")
            data = d.unconsumed_tail
        if not data:
            return bytes(out)
        if not members:
            raise _BadRequest(400, "data after the end of a compressed body")


def _unzstd(raw: bytes, cap: int) -> bytes:
    try:
        import zstandard  # (optional: without it, a zstd body is refused 415)
    except ImportError:
        raise _BadRequest(415, "unsupported Content-Encoding zstd") from None
    try:
        reader = zstandard.ZstdDecompressor(max_window_size=2**23).stream_reader(io.BytesIO(raw),
                                                                                 read_across_frames=True)
        out = bytearray()
        while len(out) <= cap:
            piece = reader.read(min(2**20, cap + 1 - len(out)))
            if not piece:
                return bytes(out)
            out += piece
    except zstandard.ZstdError:
        raise _BadRequest(400, "a malformed zstd body") from None
    raise _BadRequest(413, f"a body decoding to more than the cap of {cap} bytes")
