"""The model proxy (docs/agents.md): one local HTTP server per session, between a harness and its model.

- **forward** mode relays each call to the real endpoint, streaming the reply back unchanged,
  and appends the call's usage (read from the reply itself) to the session's ledger: the same
  count for every harness, and one that survives a killed harness.
- **replay** mode serves a script's turns instead (:mod:`.script`): no network, no key.
- In both, every model call first asks the session's cleave controller (``refusal``). Once the
  cleave has fired, or when the controller cannot judge in time whether it has, the call is
  refused (HTTP 403) and recorded as refused with the reason: a harness cannot think on after its
  stop, and an unanswered question never fails open.

Request headers (where the harness's API key travels) are relayed and never stored.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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
INFRA_STATUSES = (408, 409, 429, 500, 502, 503, 504, 529)  # the provider's trouble, not the agent's


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
        only_model_calls: bool = False,
        on_answered: Callable[..., object] = lambda tokens, seq, at: None,
        dump_dir: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        upstream_timeout_s: float = 600.0,
    ) -> None:
        if mode not in ("replay", "forward"):
            raise ValueError(f"proxy mode {mode!r} is not one of replay, forward")
        if mode == "replay" and script is None:
            raise ValueError("replay mode needs a script")
        self.mode = mode
        self.script = script
        self.model = model
        self.upstreams = {**DEFAULT_UPSTREAMS, **upstream_overrides(), **(upstreams or {})}
        self.refusal = refusal
        # Under a budget: a request to an endpoint that is not a model call, a model list or a token
        # count (a batch, a file upload) is refused, as the proxy could neither price nor stop it.
        self.only_model_calls = only_model_calls
        # Told of every answered model call (its tokens, ledger row, and when its request came): a
        # token or turn cut rule fires there, so the call that reaches the cut is the last one answered.
        self.on_answered = on_answered
        self.ledger = Ledger(ledger)
        self.dump_dir = dump_dir
        self.upstream_timeout_s = upstream_timeout_s
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
        # Calls being answered right now: stop() waits for them, so a call still being read to its
        # end (its caller killed mid-reply) is ledgered before anyone reads the ledger's totals.
        self._in_flight = 0
        self._idle = threading.Condition()
        self._server.proxy = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self._client = None

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

    def _handle(self, req: _Handler) -> None:
        t0 = time.monotonic()
        body = req.read_body()
        path = req.path
        r = wire.route(req.command, path)
        row: dict[str, Any] = {"at": time.time(), "method": req.command, "path": path.split("?", 1)[0],
                               "protocol": r.protocol, "kind": r.kind, "source": "proxy", "mode": self.mode}
        try:
            payload = json.loads(body) if body else {}
        except json.JSONDecodeError:
            payload = {}
        if not isinstance(payload, dict):
            payload = {}
        if not path.startswith("/"):
            # Hostile: a request line that is not an absolute path would make `upstream + path` name
            # another host (`https://api.example.com@127.0.0.1:P/...`): the key and a forged usage.
            req.send_json(400, {"error": {"message": "specsnap proxy: a request path must start with /"}})
            self.ledger.append({**row, "path": "(refused: not an absolute path)", "status": 400, "refused": True,
                                "refused_reason": "not an absolute path", "usage": None,
                                "latency_s": round(time.monotonic() - t0, 4)})
            return
        if self.dump_dir is not None:
            self._dump(row, payload)
        if r.protocol is not None:
            row["model"] = wire.request_model(r.protocol, path, payload)
            row["stream"] = wire.wants_stream(r.protocol, path, payload)
        reason = self.refusal() if r.kind == "generate" else None
        if reason is None and self.only_model_calls and r.kind == "other" and req.command not in ("GET", "HEAD"):
            reason = "not a model call: under a budget only model calls, model lists and token counts are relayed"
        if reason is not None:
            status = 403
            why = ("this session was cleaved; no further model calls are allowed" if reason == "cleaved"
                   else f"this call cannot be answered: {reason}")
            req.send_json(status, wire.error_body(r.protocol, status, f"specsnap: {why}"))
            self.ledger.append({**row, "status": status, "refused": True, "refused_reason": reason, "usage": None,
                                "latency_s": round(time.monotonic() - t0, 4)})
            return
        if self.mode == "forward":
            status, usage, note = self._forward(req, r, body)
        else:
            status, usage, note = self._replay(req, r, payload, body)
        if getattr(req, "client_gone", False):
            note["client_gone"] = True  # the harness died mid-reply; the call still counts
        done = self.ledger.append({**row, "status": status, "refused": False, "usage": usage.to_dict() if usage else None,
                                   "latency_s": round(time.monotonic() - t0, 4), **note})
        if r.kind == "generate" and status == 200:
            self.on_answered(usage.total if usage else 0, done["seq"], row["at"])

    def _replay(self, req: _Handler, r: wire.Route, payload: dict, body: bytes) -> tuple[int, TokenUsage | None, dict]:
        if r.kind == "models":
            req.send_json(200, {"object": "list", "data": [{"id": self.model, "object": "model"}],
                                "models": [{"name": f"models/{self.model}"}]})
            return 200, None, {}
        if r.kind == "count_tokens":
            estimate = max(1, len(body) // 4)
            req.send_json(200, {"input_tokens": estimate, "totalTokens": estimate})
            return 200, None, {}
        if r.protocol is None:
            req.send_json(404, {"error": {"message": f"specsnap replay: no route for {req.command} {req.path}"}})
            return 404, None, {}
        assert self.script is not None
        picked = self.script.take(body.decode("utf-8", errors="replace"))
        if picked is None:
            from sdcs_bench.proxy.wire import Reply

            reply, note = Reply(text="(replay script exhausted)"), {"replay_entry": None, "exhausted": True}
        else:
            index, entry = picked
            note = {"replay_entry": index + 1}
            if entry.delay_s:
                time.sleep(entry.delay_s)
            if entry.error is not None:
                status = int(entry.error["status"])
                req.send_json(status, wire.error_body(r.protocol, status, str(entry.error.get("message", "error"))))
                return status, None, note
            reply = entry.reply
        seq = len(self.ledger.rows) + 1
        ctype, chunks = wire.render(r.protocol, reply, self.model or "replay-model", bool(payload.get("stream")) or
                                    wire.wants_stream(r.protocol, req.path, payload), seq)
        sent = req.send_stream(200, ctype, chunks)
        return 200, wire.parse_usage(r.protocol, sent, ctype), note

    def _forward(self, req: _Handler, r: wire.Route, body: bytes) -> tuple[int, TokenUsage | None, dict]:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(self.upstream_timeout_s, connect=30.0))
        family = wire.FAMILY.get(r.protocol or "", None) or self._guess_family(req)
        upstream = self.upstreams[family].rstrip("/")
        headers = {k: v for k, v in req.headers.items() if k.lower() not in HOP_BY_HOP}
        url = httpx.URL(upstream + req.path)
        base = httpx.URL(upstream)
        if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):  # (never another host)
            req.send_json(400, wire.error_body(r.protocol, 400, "specsnap proxy: the path leaves the upstream"))
            return 400, None, {"refused_path": True}
        try:
            with self._client.stream(req.command, url, headers=headers, content=body) as resp:
                ctype = resp.headers.get("content-type", "application/json")
                sent = req.send_stream(resp.status_code, ctype, resp.iter_bytes(),
                                       extra={k: v for k, v in resp.headers.items()
                                              if k.lower() not in HOP_BY_HOP | {"content-type"}})
        except httpx.HTTPError as exc:
            status = 502
            req.send_json(status, wire.error_body(r.protocol, status, f"specsnap proxy: upstream unreachable ({type(exc).__name__})"))
            return status, None, {"upstream_error": type(exc).__name__}
        usage = wire.parse_usage(r.protocol, sent, ctype) if r.kind == "generate" and r.protocol else None
        return resp.status_code, usage, {"upstream": family}

    def _guess_family(self, req: _Handler) -> str:
        keys = {k.lower() for k in req.headers}
        if "x-api-key" in keys or "anthropic-version" in keys:
            return "anthropic"
        if "x-goog-api-key" in keys or "key=" in req.path:
            return "gemini"
        return "openai"

    def _dump(self, row: dict, payload: dict) -> None:
        assert self.dump_dir is not None
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        n = len(list(self.dump_dir.glob("*.json"))) + 1
        (self.dump_dir / f"{n:04d}.json").write_text(json.dumps({**row, "body": payload}, indent=1, default=str))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SpecSnapProxy/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return  # requests are in the ledger; headers (keys) are never logged

    def _dispatch(self) -> None:
        try:
            self.server.proxy.handle(self)  # type: ignore[attr-defined]
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(parts)
        else:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        encoding = self.headers.get("content-encoding", "").lower()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        elif encoding == "zstd":
            import zstandard

            raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        if encoding:
            del self.headers["content-encoding"]
        return raw

    def send_json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
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
