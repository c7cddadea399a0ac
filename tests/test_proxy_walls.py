"""The model proxy's walls, attacked as a hostile agent would (docs/agents.md#the-model-proxy):
only allowlisted model calls reach the upstream, and only at the canonical path under the
configured base; the harness holds a stand-in token, never the real key; and every client's
bytes, connections and time are bounded. Each attack is sent as raw bytes, and what an upstream
test server actually received is what is asserted."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from sdcs_bench.agents.credentials import SESSION_TOKEN_PREFIX, new_session_token
from sdcs_bench.proxy import ModelProxy, ReplayScript, read_ledger
from sdcs_bench.proxy import wire

REAL_KEY = "sk-real-provider-key-0123456789abcdef"
TOKEN = "specsnap-session-" + "0123456789abcdef" * 2
CREDENTIAL_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "api-key")


# --------------------------------------------------------------------------- an upstream that records


class _Recorder(BaseHTTPRequestHandler):
    """Records each request exactly as it arrived; answers a small JSON reply that echoes the
    credential it was sent (in a header and in the body, as a hostile gateway could)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002
        return

    def _any(self):
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.seen.append({"line": self.requestline, "target": self.requestline.split(" ")[1],
                                 "headers": [(k.lower(), v) for k, v in self.headers.items()], "body": body})
        echo = " ".join([v for k, v in self.headers.items() if k.lower() in CREDENTIAL_HEADERS]
                        + re.findall(r"[?&]key=([^&]*)", self.path))
        out = json.dumps({"echo": echo, "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("x-echo", echo)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _any


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


def _script(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"responses": [{"text": "ok", "usage": {"uncached_input": 3, "output": 1},
                                               "repeat": True}]}))
    return ReplayScript.load(path).for_session(1, {})


def _forward(tmp_path, upstream, **kw):
    ups = {f: upstream.url for f in ("anthropic", "openai", "gemini")}
    return ModelProxy(ledger=tmp_path / "fw.jsonl", mode="forward", upstreams=kw.pop("upstreams", ups), **kw)


def _replay(tmp_path, **kw):
    return ModelProxy(ledger=tmp_path / "rp.jsonl", script=_script(tmp_path), **kw)


# --------------------------------------------------------------------------- raw HTTP


def request_bytes(method: str, target: str, headers: dict[str, str] | list | None = None, body: bytes = b"",
                  host: str = "127.0.0.1") -> bytes:
    items = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    names = {k.lower() for k, _ in items}
    if "host" not in names:
        items.insert(0, ("Host", host))
    if "content-length" not in names and "transfer-encoding" not in names:
        items.append(("Content-Length", str(len(body))))
    if "connection" not in names:
        items.append(("Connection", "close"))
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in items) + "\r\n"
    return head.encode("latin-1") + body


def _connect(url: str, timeout: float = 10) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def _read_all(sock: socket.socket) -> bytes:
    buf = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        buf += chunk
    return buf


def raw(url: str, data: bytes, timeout: float = 10, done: bool = False) -> tuple[int, bytes]:
    """Send ``data`` as is (``done``: then end the sending side); (the status answered, the whole response)."""
    with _connect(url, timeout) as sock:
        sock.sendall(data)
        if done:
            sock.shutdown(socket.SHUT_WR)
        buf = _read_all(sock)
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", buf)
    return (int(m.group(1)) if m else 0), buf


def _call(url: str, method: str = "POST", target: str = "/v1/chat/completions", headers=None, body: bytes | None = None):
    body = json.dumps({"model": "m", "messages": "hi"}).encode() if body is None else body
    return raw(url, request_bytes(method, target, {"content-type": "application/json", **(headers or {})}, body))


# --------------------------------------------------------------------------- 1. the allowlist

def _tricks(host: str) -> list[tuple[str, str]]:
    return [
        ("POST", "/v1/../h4-escaped/v1/chat/completions"),
        ("POST", "/h4-escaped/../v1/chat/completions"),
        ("POST", "/v1/chat/completions/../../h4-escaped"),
        ("POST", "/v1/./chat/completions"),
        ("POST", "/%2e%2e/h4-escaped/v1/chat/completions"),
        ("POST", "/v1/%2E%2E/h4-escaped/v1/chat/completions"),
        ("POST", "/v1/chat%2fcompletions"),
        ("POST", "/v1/chat/completions%00"),
        ("POST", "/..;/h4-escaped/v1/chat/completions"),
        ("POST", "/v1/chat/completions;/../../h4-escaped"),
        ("POST", "/v1/chat/completions;x=1"),
        ("POST", "/v1\\..\\h4-escaped\\v1\\chat\\completions"),
        ("POST", "\\v1\\chat\\completions"),
        ("POST", f"@{host}/h4-escaped/v1/chat/completions"),
        ("POST", "/v1/chat/completions@h4-escaped"),
        ("POST", "//h4-escaped/v1/chat/completions"),
        ("POST", "/v1//chat/completions"),
        ("POST", "//v1/chat/completions"),
        ("POST", f"http://{host}/h4-escaped/v1/chat/completions"),
        ("POST", "http://api.openai.com/v1/chat/completions"),  # an absolute URI, even of the right path
        ("POST", "*"),
        ("POST", "/v1/chat/completions/"),
        ("POST", "/V1/chat/completions"),
        ("POST", "/v1/chat/completions#frag"),
        ("POST", "/v1/chat/completions?x=1"),
        ("POST", "/v1/chat/completions?"),
        ("POST", "/v1/messages?beta=true&beta=false"),
        ("POST", "/v1/messages?beta=%2e%2e"),
        ("POST", "/v1/messages?beta"),
        ("POST", "/v1/messages?beta=true&x=1"),
        ("POST", "/v1/messages?beta=true;x=1"),
        ("POST", "/v1beta/models/g:streamGenerateContent?alt=sse&alt=json"),
        ("POST", "/v1beta/models/..:generateContent"),
        ("POST", "/v1beta/models/.:generateContent"),
        ("POST", "/v1beta/models/g:generateContent/../../../h4-escaped"),
        ("POST", "/v1beta/models/g/../../h4:generateContent"),
        ("POST", "/v1beta/models/g:deleteEverything"),
        ("POST", "/v1beta/tunedModels/g:generateContent"),
        ("POST", "/v1/messages/batches"),
        ("POST", "/v1/files"),
        ("POST", "/v1/fine_tuning/jobs"),
        ("POST", "/v1/embeddings"),
        ("GET", "/h4-escaped-get"),
        ("GET", "/v1/models/../../h4-escaped-get"),
        ("GET", "/v1/models/%2e%2e/h4-escaped-get"),
        ("GET", "/v1/files"),
        ("GET", "/v1/chat/completions"),
        ("GET", "/v1/models?limit=1000000000000000000000000000000000000000000000000000000000000000000000000000"
                "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
                "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"),
        ("DELETE", "/v1/models/gpt-5"),
        ("PUT", "/v1/chat/completions"),
        ("PATCH", "/v1/responses"),
        ("OPTIONS", "/v1/chat/completions"),
        ("HEAD", "/v1/models"),
        ("post", "/v1/chat/completions"),
        ("FOO", "/v1/chat/completions"),
        ("POST", "/v1/" + "a" * 3000),
    ]


@pytest.mark.parametrize("mode", ["forward", "replay"])
def test_no_trick_reaches_outside_the_allowlist(tmp_path, upstream, mode):
    """Dot segments (plain, %-encoded, `..;`, backslashes), `@`, double slashes, absolute URIs,
    odd methods, unlisted query keys: every one is refused 403 with one ledger row, in forward
    and in replay mode, and the upstream receives nothing at all."""
    proxy = _forward(tmp_path, upstream) if mode == "forward" else _replay(tmp_path)
    ledger = tmp_path / ("fw.jsonl" if mode == "forward" else "rp.jsonl")
    host = upstream.url.removeprefix("http://")
    tricks = _tricks(host)
    with proxy:
        answers = [_call(proxy.url, method, target)[0] for method, target in tricks]
    assert answers == [403] * len(tricks), [t for t, a in zip(tricks, answers) if a != 403]
    assert upstream.seen == []
    rows = read_ledger(ledger)
    assert len(rows) == len(tricks)
    assert all(r["refused"] and r["status"] == 403 and r["usage"] is None for r in rows)
    for (method, target), row in zip(tricks, rows):
        assert row["refused_reason"].startswith(f"not an allowed model call: {wire.shown(method, 16)} ")
        assert len(row["refused_reason"]) < 300 and "\\" not in row["refused_reason"].replace("\\x", "")


def test_another_host_header_changes_nothing(tmp_path, upstream):
    """The Host header (one, two, or a hostile one) never steers the call: the upstream receives the
    canonical request, at the configured base's own host."""
    with _forward(tmp_path, upstream) as proxy:
        for headers in ({"Host": "h4-escaped.example"}, [("Host", "127.0.0.1"), ("Host", "h4-escaped.example")],
                        {"Host": "h4-escaped.example/h4-escaped", "X-Forwarded-Host": "h4-escaped.example"}):
            data = request_bytes("POST", "/v1/chat/completions", headers, b'{"model": "m"}')
            assert raw(proxy.url, data)[0] == 200
    assert [s["line"] for s in upstream.seen] == ["POST /v1/chat/completions HTTP/1.1"] * 3
    for seen in upstream.seen:
        hosts = [v for k, v in seen["headers"] if k == "host"]
        assert hosts == [upstream.url.removeprefix("http://")]
        assert not any(k.startswith("x-forwarded") for k, _ in seen["headers"])


def test_the_upstream_gets_the_canonical_call_under_the_base_prefix(tmp_path, upstream):
    """A gateway base keeps its own path prefix; the call's path and query are rebuilt from the
    allowlist's match (never the client's bytes)."""
    ups = {"openai": upstream.url + "/gw/openai/", "anthropic": upstream.url + "/gw/anthropic",
           "gemini": upstream.url + "/gw/gemini"}
    with _forward(tmp_path, upstream, upstreams=ups) as proxy:
        calls = [("POST", "/v1/chat/completions"), ("POST", "/v1/responses"), ("POST", "/v1/messages?beta=true"),
                 ("POST", "/v1/messages/count_tokens?beta=true"),
                 ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
                 ("POST", "/v1beta/models/gemini-2.5-pro:countTokens"), ("GET", "/v1beta/models?pageSize=50"),
                 ("GET", "/v1/models"), ("GET", "/v1/models/gpt-5")]
        for method, target in calls:
            assert _call(proxy.url, method, target)[0] == 200
        assert _call(proxy.url, "GET", "/v1/models", {"anthropic-version": "2023-06-01"})[0] == 200
    assert [s["target"] for s in upstream.seen] == [
        "/gw/openai/v1/chat/completions", "/gw/openai/v1/responses", "/gw/anthropic/v1/messages?beta=true",
        "/gw/anthropic/v1/messages/count_tokens?beta=true",
        "/gw/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        "/gw/gemini/v1beta/models/gemini-2.5-pro:countTokens", "/gw/gemini/v1beta/models?pageSize=50",
        "/gw/openai/v1/models", "/gw/openai/v1/models/gpt-5", "/gw/anthropic/v1/models"]


def test_the_allowlist_is_exactly_the_harness_calls():
    """What the six pinned harnesses (and the summary handoff) were seen to call all match; the
    table holds nothing else than model calls, token counts and model reads."""
    seen = [("POST", "/v1/messages?beta=true"), ("POST", "/v1/messages"), ("POST", "/v1/chat/completions"),
            ("POST", "/v1/responses"), ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
            ("POST", "/v1beta/models/gemini-2.5-pro:generateContent"),
            ("POST", "/v1beta/models/gemini-2.5-flash:generateContent?key=AIzaSyA-0123_456789abcdef")]
    for method, target in seen:
        call = wire.match(method, target)
        assert call is not None and call.kind == "generate" and call.target() == target
    assert {(r.method, r.kind) for r in wire.ALLOWED} == {("POST", "generate"), ("POST", "count_tokens"),
                                                         ("GET", "models")}
    assert wire.match("POST", "/v1/chat/completions", families=("anthropic",)) is None
    assert wire.match("POST", "/v1/messages", families=("anthropic",)).families == ("anthropic",)
    assert wire.match("GET", "/v1/models").families == ("anthropic", "openai")


def test_a_proxy_for_one_provider_refuses_the_others_calls(tmp_path, upstream):
    """With ``provider``, another provider's call (and so the real key going to it) is refused."""
    with _forward(tmp_path, upstream, provider="anthropic") as proxy:
        assert _call(proxy.url, "POST", "/v1/chat/completions")[0] == 403
        assert _call(proxy.url, "POST", "/v1beta/models/g:generateContent")[0] == 403
        assert _call(proxy.url, "POST", "/v1/messages")[0] == 200
    assert [s["target"] for s in upstream.seen] == ["/v1/messages"]


# --------------------------------------------------------------------------- 2. the stand-in token


def test_session_tokens_are_fresh_and_fit_every_credential_slot():
    tokens = {new_session_token() for _ in range(50)}
    assert len(tokens) == 50
    for t in tokens:
        assert re.fullmatch(re.escape(SESSION_TOKEN_PREFIX) + r"[0-9a-f]{32}", t)
        assert wire.match("POST", f"/v1beta/models/g:generateContent?key={t}") is not None


@pytest.mark.parametrize("slot", ["x-api-key", "authorization", "x-goog-api-key", "api-key", "key"])
def test_forward_puts_the_real_key_in_place_of_the_stand_in(tmp_path, upstream, slot):
    """The upstream sees the real key, in the slot the harness used, and never the stand-in (nor a
    header that carries it); the client never sees the real key, even when the upstream echoes it."""
    target = "/v1beta/models/g:generateContent" if slot in ("x-goog-api-key", "key") else "/v1/chat/completions"
    headers = {"x-note": f"copy {TOKEN}"}
    if slot == "key":
        target += f"?alt=sse&key={TOKEN}"
    else:
        headers[slot] = f"Bearer {TOKEN}" if slot == "authorization" else TOKEN
    with _forward(tmp_path, upstream, session_token=TOKEN, credential=REAL_KEY) as proxy:
        status, reply = _call(proxy.url, "POST", target, headers)
    assert status == 200
    [seen] = upstream.seen
    sent = seen["line"] + json.dumps(seen["headers"]) + seen["body"].decode()
    assert TOKEN not in sent and not any(k == "x-note" for k, _ in seen["headers"])
    if slot == "key":
        assert seen["target"] == f"/v1beta/models/g:generateContent?alt=sse&key={REAL_KEY}"
    else:
        expected = f"Bearer {REAL_KEY}" if slot == "authorization" else REAL_KEY
        assert (slot, expected) in seen["headers"]
    assert REAL_KEY not in reply.decode("latin-1")  # (the echo header and body were masked)
    assert b"[credential]" in reply
    assert REAL_KEY not in (tmp_path / "fw.jsonl").read_text() and TOKEN not in (tmp_path / "fw.jsonl").read_text()


@pytest.mark.parametrize("headers,target", [
    ({}, "/v1/chat/completions"),
    ({"authorization": "Bearer specsnap-session-ffffffffffffffffffffffffffffffff"}, "/v1/chat/completions"),
    ({"authorization": f"Basic {TOKEN}"}, "/v1/chat/completions"),
    ({"authorization": f"Bearer {TOKEN}x"}, "/v1/chat/completions"),
    ({"authorization": f"Bearer {TOKEN}", "x-api-key": REAL_KEY}, "/v1/chat/completions"),
    ({"x-api-key": TOKEN[:-1]}, "/v1/messages"),
    ({"x-other": TOKEN}, "/v1/messages"),
    ({}, f"/v1beta/models/g:generateContent?key={TOKEN}0"),
    ({"x-goog-api-key": TOKEN}, "/v1beta/models/g:generateContent?key=AIzaOther0123456789"),
])
def test_a_request_without_the_session_token_never_reaches_the_upstream(tmp_path, upstream, headers, target):
    """Another session's agent (or any other local process) reaching this proxy gets nothing: 401,
    one ledger row, and nothing upstream."""
    with _forward(tmp_path, upstream, session_token=TOKEN, credential=REAL_KEY) as proxy:
        status, reply = _call(proxy.url, "POST", target, headers)
    assert status == 401 and upstream.seen == []
    assert REAL_KEY not in reply.decode("latin-1")
    [row] = read_ledger(tmp_path / "fw.jsonl")
    assert row["refused"] and row["status"] == 401 and row["refused_reason"] == "no session token"


def test_replay_mode_checks_the_token_too(tmp_path):
    with _replay(tmp_path, session_token=TOKEN) as proxy:
        good = httpx.post(proxy.url + "/v1/messages?beta=true", json={"model": "m"}, headers={"x-api-key": TOKEN})
        bad = httpx.post(proxy.url + "/v1/messages?beta=true", json={"model": "m"}, headers={"x-api-key": "x" * 20})
    assert good.status_code == 200 and bad.status_code == 401
    assert bad.json()["error"]["type"] == "authentication_error"  # (the shape Anthropic's clients expect)


def test_a_credential_only_ever_replaces_a_session_token(tmp_path, upstream):
    with pytest.raises(ValueError):
        _forward(tmp_path, upstream, credential=REAL_KEY)  # (every local process could spend it)
    with pytest.raises(ValueError):
        _forward(tmp_path, upstream, session_token=TOKEN)  # (the stand-in would go upstream)
    with pytest.raises(ValueError):
        _replay(tmp_path, session_token=TOKEN, credential=REAL_KEY)
    with pytest.raises(ValueError):
        _replay(tmp_path, session_token="short")
    with ModelProxy(ledger=None, mode="forward", session_token=TOKEN, credential=REAL_KEY) as proxy:
        assert REAL_KEY not in repr(proxy)


# --------------------------------------------------------------------------- 3. bounds


def test_a_body_over_the_cap_is_refused_before_it_is_sent(tmp_path):
    """Content-Length over the cap: 413 at once, with the body never sent; a chunked body whose
    first chunk already passes the cap: 413 before that chunk's data."""
    with _replay(tmp_path, max_body_bytes=1024) as proxy:
        for head in (request_bytes("POST", "/v1/chat/completions", {"Content-Length": "1025"}),
                     request_bytes("POST", "/v1/chat/completions", {"Content-Length": str(10**14)}),
                     request_bytes("POST", "/v1/chat/completions", {"Transfer-Encoding": "chunked"}) + b"401\r\n",
                     request_bytes("POST", "/v1/chat/completions", {"Transfer-Encoding": "chunked"})
                     + b"200\r\n" + b"x" * 512 + b"\r\n" + b"200\r\n" + b"x" * 512 + b"\r\n" + b"1\r\n"):
            with _connect(proxy.url) as sock:
                sock.sendall(head)  # (the rest of the body is never sent: the answer must come anyway)
                assert _read_all(sock).startswith(b"HTTP/1.1 413 ")
        ok = _call(proxy.url, body=b"{" + b" " * 1000 + b"}")[0]
    assert ok == 200
    rows = read_ledger(tmp_path / "rp.jsonl")
    assert [r["status"] for r in rows] == [413, 413, 413, 413, 200]
    assert all("over the cap" in r["refused_reason"] for r in rows[:4])


@pytest.mark.parametrize("headers,body", [
    ({"Content-Length": "abc"}, b""), ({"Content-Length": "-1"}, b""), ({"Content-Length": "+5"}, b"{}   "),
    ({"Content-Length": "1, 1"}, b"{"), ([("Content-Length", "2"), ("Content-Length", "2")], b"{}"),
    ({"Content-Length": "0x10"}, b""), ({"Content-Length": "5"}, b"{}"),
    ({"Transfer-Encoding": "chunked", "Content-Length": "5"}, b"0\r\n\r\n"),
    ({"Transfer-Encoding": "gzip, chunked"}, b"0\r\n\r\n"), ({"Transfer-Encoding": "identity"}, b""),
    ({"Transfer-Encoding": "chunked"}, b"zz\r\n"), ({"Transfer-Encoding": "chunked"}, b"-1\r\n"),
    ({"Transfer-Encoding": "chunked"}, b"0x2\r\n{}\r\n0\r\n\r\n"),
    ({"Transfer-Encoding": "chunked"}, b"FFFFFFFFFFFFFFFFFFFFFFFF\r\n"),
    ({"Transfer-Encoding": "chunked"}, b"2\r\n{}XX0\r\n\r\n"), ({"Transfer-Encoding": "chunked"}, b"2\r\n{"),
    ({"Transfer-Encoding": "chunked"}, b"1" * 5000 + b"\r\n"), ({"Transfer-Encoding": "chunked"}, b""),
])
def test_malformed_lengths_and_chunks_are_a_400_and_the_proxy_lives_on(tmp_path, headers, body):
    """(A body cut short: the client sent all it had and closed its side.)"""
    with _replay(tmp_path, socket_timeout_s=5) as proxy:
        status, _ = raw(proxy.url, request_bytes("POST", "/v1/chat/completions", headers, body), done=True)
        after = _call(proxy.url)[0]
    assert status == 400 and after == 200
    rows = read_ledger(tmp_path / "rp.jsonl")
    assert [r["status"] for r in rows] == [400, 200] and rows[0]["refused"]


def test_a_well_formed_chunked_body_is_read(tmp_path, upstream):
    body = json.dumps({"model": "m", "messages": "hi"}).encode()
    chunked = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (body[:5], body[5:])) + b"0\r\nX-T: 1\r\n\r\n"
    with _forward(tmp_path, upstream) as proxy:
        status, _ = raw(proxy.url, request_bytes("POST", "/v1/chat/completions", {"Transfer-Encoding": "chunked"},
                                                 chunked))
    assert status == 200 and upstream.seen[0]["body"] == body


def _bomb(size: int) -> dict[str, bytes]:
    """``size`` zero bytes, compressed as raw deflate once, framed as gzip and as zlib."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts, crc, adler, block = [], 0, 1, bytes(2**20)
    for _ in range(size // len(block)):
        parts.append(comp.compress(block))
        crc, adler = zlib.crc32(block, crc), zlib.adler32(block, adler)
    parts.append(comp.flush())
    deflated = b"".join(parts)
    return {
        "gzip": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + deflated + crc.to_bytes(4, "little")
        + (size % 2**32).to_bytes(4, "little"),
        "deflate": b"\x78\xda" + deflated + adler.to_bytes(4, "big"),
        "deflate-raw": deflated,
    }


def test_a_decompression_bomb_is_refused_and_the_proxy_stays_small(tmp_path):
    """1 GiB of zeros as ~1 MiB of gzip, deflate (zlib and raw) and zstd bodies: each is refused 413
    (zstd without its optional decoder: 415), and the proxy's process grew by far less than one
    decoded body (it decodes incrementally and stops at the cap)."""
    bombs = _bomb(2**30)
    assert all(len(b) < 2 * 2**20 for b in bombs.values())
    bombs["zstd"] = _zstd_bomb(2**30)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path / "child.jsonl")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        url, base = child.stdout.readline().split()
        answers = {}
        for name, data in bombs.items():
            encoding = "deflate" if name.startswith("deflate") else name
            answers[name] = raw(url, request_bytes("POST", "/v1/chat/completions", {"Content-Encoding": encoding},
                                                   data), timeout=60)[0]
        child.stdin.write("done\n")
        child.stdin.flush()
        peak = int(child.stdout.readline())
    finally:
        child.kill()
        child.wait()
    zstd_expected = 413 if _has_zstandard() else 415
    assert answers == {"gzip": 413, "deflate": 413, "deflate-raw": 413, "zstd": zstd_expected}
    assert (peak - int(base)) < 200 * 1024  # KiB: the 32 MiB cap and the compressed bodies, never 1 GiB
    rows = read_ledger(tmp_path / "child.jsonl")
    assert [r["status"] for r in rows] == [413, 413, 413, zstd_expected] and all(r["refused"] for r in rows)


_CHILD = """
import json, resource, sys
from pathlib import Path
from sdcs_bench.proxy import ModelProxy, ReplayScript
p = Path(sys.argv[1]).with_suffix(".script.json")
p.write_text(json.dumps({"responses": [{"text": "ok", "repeat": True}]}))
with ModelProxy(ledger=Path(sys.argv[1]), script=ReplayScript.load(p).for_session(1, {})) as proxy:
    print(proxy.url, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
    sys.stdin.readline()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
"""


def _zstd_bomb(size: int) -> bytes:
    """``size`` zero bytes as zstd (without the optional decoder, a frame header is enough: the
    body is refused 415 before any decoding)."""
    if not _has_zstandard():
        return b"\x28\xb5\x2f\xfd" + b"\x00" * 64
    import io

    import zstandard

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as writer:
        block = bytes(2**20)
        for _ in range(size // len(block)):
            writer.write(block)
    return out.getvalue()


def _has_zstandard() -> bool:
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return False
    return True


def test_decoding_is_capped_across_gzip_members_and_checked(tmp_path):
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = member.compress(bytes(600 * 1024)) + member.flush()
    good = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = json.dumps({"model": "m", "messages": "hi"}).encode()
    small = good.compress(body) + good.flush()
    with _replay(tmp_path, max_body_bytes=2**20) as proxy:
        answers = [raw(proxy.url, request_bytes("POST", "/v1/chat/completions", {"Content-Encoding": enc}, data))[0]
                   for enc, data in [("gzip", one + one), ("gzip", one[:-20]), ("gzip", small + b"junk"),
                                     ("br", small), ("gzip, gzip", small), ("zstd-ish", small), ("gzip", small),
                                     ("deflate", zlib.compress(body)), ("identity", body)]]
    assert answers == [413, 400, 400, 415, 415, 415, 200, 200, 200]


def test_a_deeply_nested_body_is_answered_not_crashed(tmp_path):
    with _replay(tmp_path) as proxy:
        status, _ = _call(proxy.url, body=b"[" * 200_000)
    assert status == 200


def test_connections_beyond_the_cap_are_turned_away_without_a_thread(tmp_path):
    """With every slot held by an idle connection, new ones are answered 503 and closed on the
    accepting thread: no thread is kept per waiting connection. Freed slots serve again."""
    with _replay(tmp_path, max_connections=2, socket_timeout_s=30) as proxy:
        held = [_connect(proxy.url) for _ in range(2)]
        time.sleep(0.3)
        threads = threading.active_count()
        extra = []
        for _ in range(20):
            sock = _connect(proxy.url)
            extra.append(_read_all(sock))
            sock.close()
        assert threading.active_count() <= threads  # (no thread was started for any of the 20)
        for sock in held:
            sock.close()
        time.sleep(0.5)
        after = _call(proxy.url)[0]
    assert all(r.startswith(b"HTTP/1.1 503 ") for r in extra) and after == 200
    assert proxy.refusals_unledgered == 0
    rows = read_ledger(tmp_path / "rp.jsonl")
    assert [r["status"] for r in rows] == [503] * 20 + [200]
    assert rows[0]["refused_reason"] == "more than 2 connections at once"


def _trickle(sock: socket.socket, data: bytes, gap: float = 0.1, limit_s: float = 20) -> tuple[float, int, bytes]:
    """Send ``data`` a byte every ``gap`` seconds until the peer answers or closes: (seconds from the
    first byte, bytes sent, what the peer sent back)."""
    import select

    began = time.monotonic()
    for n, byte in enumerate(data):
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return time.monotonic() - began, n, b""
        if select.select([sock], [], [], gap)[0]:
            sock.settimeout(5)
            return time.monotonic() - began, n + 1, _read_all(sock)
        if time.monotonic() - began > limit_s:
            break
    return time.monotonic() - began, len(data), b""


def test_a_silent_or_trickling_client_cannot_pin_a_thread(tmp_path):
    """Silent: closed after ``socket_timeout_s``. Trickling a byte at a time, each well within the
    socket timeout: cut once ``request_timeout_s`` has passed since its first byte, in its headers
    (closed) or in its body (408, ledgered)."""
    with _replay(tmp_path, socket_timeout_s=0.5, request_timeout_s=1.5) as proxy:
        with _connect(proxy.url) as silent:
            assert _read_all(silent) == b""  # the proxy closed it (the client never spoke)
        head = request_bytes("POST", "/v1/chat/completions", {"X-Long": "a" * 400})
        with _connect(proxy.url) as slow:
            took, sent, answer = _trickle(slow, head)
        assert sent < len(head) and 1.5 <= took < 6 and answer == b""
        head = request_bytes("POST", "/v1/chat/completions", {"Content-Length": "400"})
        with _connect(proxy.url) as slow:
            slow.sendall(head)
            took, sent, answer = _trickle(slow, b"{" + b" " * 399)
        assert sent < 400 and took < 6 and answer.startswith(b"HTTP/1.1 408 ")
    rows = read_ledger(tmp_path / "rp.jsonl")
    assert [r["status"] for r in rows] == [408] and rows[0]["refused_reason"] == "the request body was not sent in time"


def test_requests_over_the_rate_cap_get_429(tmp_path):
    with _replay(tmp_path, max_requests_per_minute=3) as proxy:
        answers = [_call(proxy.url)[0] for _ in range(5)]
    assert answers == [200, 200, 200, 429, 429]
    rows = read_ledger(tmp_path / "rp.jsonl")
    assert [r["refused_reason"] for r in rows[3:]] == ["over 3 requests a minute"] * 2


def test_refusals_beyond_the_ledger_cap_are_counted_not_ledgered(tmp_path):
    with _replay(tmp_path, max_ledgered_refusals=2) as proxy:
        for _ in range(5):
            assert _call(proxy.url, target="/v1/files")[0] == 403
        assert _call(proxy.url)[0] == 200
    rows = read_ledger(tmp_path / "rp.jsonl")
    assert [r["status"] for r in rows] == [403, 403, 200, None]
    assert rows[-1]["refused"] and rows[-1]["count"] == 3


def test_a_refused_request_with_a_small_body_keeps_its_connection(tmp_path):
    """A 401, 403 or 429 after which the client's small body was read and dropped: its next request
    on the same connection is served (a harness's pool is not broken by one refusal)."""
    with _replay(tmp_path, session_token=TOKEN) as proxy:
        with httpx.Client() as client:
            first = client.post(proxy.url + "/v1/messages", json={"model": "m"})
            second = client.post(proxy.url + "/v1/messages", json={"model": "m"}, headers={"x-api-key": TOKEN})
    assert (first.status_code, second.status_code) == (401, 200)
