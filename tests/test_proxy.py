"""The model proxy: replay serves each protocol, forward relays and counts, the cleave refuses."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.proxy import ModelProxy, ReplayScript, read_ledger
from sdcs_bench.proxy.wire import parse_body

USAGE = {"uncached_input": 1000, "cache_read": 250, "cache_write": 0, "output": 40, "reasoning": 7}

# (protocol, path, request body): one request of each wire protocol, streamed and not.
CASES = [
    ("anthropic", "/v1/messages", {"model": "m", "stream": True}, {**USAGE, "reasoning": 0, "cache_write": 30}),
    ("anthropic", "/v1/messages", {"model": "m"}, {**USAGE, "reasoning": 0, "cache_write": 30}),
    ("chat", "/v1/chat/completions", {"model": "m", "stream": True}, USAGE),
    ("chat", "/v1/chat/completions", {"model": "m"}, USAGE),
    ("responses", "/v1/responses", {"model": "m", "stream": True}, USAGE),
    ("gemini", "/v1beta/models/gem:streamGenerateContent?alt=sse", {"contents": []}, USAGE),
    ("gemini", "/v1beta/models/gem:generateContent", {"contents": []}, USAGE),
]


def _script(tmp_path, entries):
    path = tmp_path / "script.yaml"
    path.write_text(json.dumps({"model": "replay-model", "responses": entries}))
    return ReplayScript.load(path)


def _components(row):
    return {k: row["usage"][k] for k in USAGE}


@pytest.mark.parametrize("family,path,body,usage", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_replay_serves_each_protocol_and_ledgers_exact_usage(tmp_path, family, path, body, usage):
    call = {"name": "write_file", "arguments": {"file_path": "{workdir}/a.py", "content": "X = 1\n"}}
    script = _script(tmp_path, [{"text": "hello", "tool_calls": [call], "usage": usage}])
    ledger = tmp_path / "ledger.jsonl"
    with ModelProxy(ledger=ledger, script=script.for_session(1, {"workdir": "/w"})) as proxy:
        resp = httpx.post(proxy.url + path, json=body)
    assert resp.status_code == 200
    objects = parse_body(resp.content, resp.headers["content-type"])
    text = json.dumps(objects)
    assert "hello" in text and "/w/a.py" in text and "write_file" in text  # the {workdir} placeholder was filled
    rows = read_ledger(ledger)
    assert len(rows) == 1 and rows[0]["source"] == "proxy" and rows[0]["status"] == 200
    assert _components(rows[0]) == usage


def test_unrepresentable_component_is_refused_not_lost(tmp_path):
    script = _script(tmp_path, [{"text": "x", "usage": {"uncached_input": 5, "reasoning": 3}}])
    with ModelProxy(ledger=tmp_path / "l.jsonl", script=script.for_session(1, {})) as proxy:
        resp = httpx.post(proxy.url + "/v1/messages", json={"model": "m"})
    assert resp.status_code == 500  # answered (never a thread that dies silently), and never with a wrong usage
    rows = read_ledger(tmp_path / "l.jsonl")
    assert [(r["status"], r["refused"], r["refused_reason"]) for r in rows] == [(500, True, "proxy error (ValueError)")]


def test_match_entries_serve_side_calls_and_repeat(tmp_path):
    script = _script(tmp_path, [
        {"text": "main-1", "usage": {"uncached_input": 1}},
        {"text": "a title", "match": "Generate a title", "repeat": True, "usage": {"uncached_input": 2}},
        {"text": "main-2", "usage": {"uncached_input": 3}},
    ])
    with ModelProxy(ledger=tmp_path / "l.jsonl", script=script.for_session(1, {})) as proxy:
        texts = []
        for prompt in ("Generate a title for this", "work", "Generate a title again", "work", "work"):
            resp = httpx.post(proxy.url + "/v1/chat/completions", json={"model": "m", "messages": prompt})
            texts.append(resp.json()["choices"][0]["message"]["content"])
    assert texts == ["a title", "main-1", "a title", "main-2", "(replay script exhausted)"]


def test_cleave_refuses_further_calls(tmp_path):
    fired = threading.Event()
    script = _script(tmp_path, [{"text": "one", "usage": {"uncached_input": 1}}, {"text": "two"}])
    ledger = tmp_path / "l.jsonl"
    refusal = lambda: "cleaved" if fired.is_set() else None  # noqa: E731
    with ModelProxy(ledger=ledger, script=script.for_session(1, {}), refusal=refusal) as proxy:
        assert httpx.post(proxy.url + "/v1/messages", json={"model": "m"}).status_code == 200
        fired.set()
        refused = httpx.post(proxy.url + "/v1/messages", json={"model": "m"})
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "permission_error"
    rows = read_ledger(ledger)
    assert [r["refused"] for r in rows] == [False, True] and rows[1]["usage"] is None
    assert rows[1]["refused_reason"] == "cleaved"


@pytest.mark.parametrize("path,body", [("/v1/messages", {"model": "m", "stream": True}),
                                       ("/v1/responses", {"model": "m", "stream": True}),
                                       ("/v1beta/models/g:streamGenerateContent?alt=sse", {})])
def test_forward_relays_stream_and_counts_from_the_reply(tmp_path, path, body):
    """Forward mode, with a replay server standing in for the real endpoint: the client receives
    the upstream's bytes unchanged, headers (the key) reach the upstream, and the ledger counts
    the usage the upstream reported."""
    usage = {"uncached_input": 10, "cache_read": 5, "cache_write": 0, "output": 3, "reasoning": 0}
    script = _script(tmp_path, [{"text": "relayed", "usage": usage}])
    upstream = ModelProxy(ledger=tmp_path / "up.jsonl", script=script.for_session(1, {}), dump_dir=tmp_path / "dump")
    with upstream:
        family = "anthropic" if "messages" in path else "openai" if "responses" in path else "gemini"
        with ModelProxy(ledger=tmp_path / "fw.jsonl", mode="forward", upstreams={family: upstream.url}) as proxy:
            resp = httpx.post(proxy.url + path, json=body, headers={"x-api-key": "sk-test-secret-123456"})
    assert resp.status_code == 200 and "relayed" in resp.text
    rows = read_ledger(tmp_path / "fw.jsonl")
    assert rows[0]["mode"] == "forward" and _components(rows[0]) == usage
    assert "sk-test-secret" not in (tmp_path / "fw.jsonl").read_text()


def test_forward_reports_unreachable_upstream_as_infra_status(tmp_path):
    with ModelProxy(ledger=tmp_path / "fw.jsonl", mode="forward", upstreams={"openai": "http://127.0.0.1:9"}) as proxy:
        resp = httpx.post(proxy.url + "/v1/chat/completions", json={"model": "m"})
    assert resp.status_code == 502
    assert read_ledger(tmp_path / "fw.jsonl")[0]["upstream_error"]


def test_bad_script_is_rejected_at_load(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("responses:\n  - {text: x, usage: {input: 3}}\n")
    with pytest.raises(SpecSnapError, match="unknown usage component"):
        ReplayScript.load(path)


def test_cli_proxy_for_hand_run_agents_and_evaluate_with_its_ledger(tmp_path, make_sandbox):
    """`specsnap proxy` serves (here: a replay script) until interrupted and prints the totals;
    `evaluate-sandbox --ledger` then scores with proxy-counted tokens."""
    import re
    import signal
    import subprocess
    import sys

    script = tmp_path / "s.yaml"
    script.write_text(json.dumps({"responses": [{"text": "ok", "usage": {"uncached_input": 70, "output": 7}}]}))
    ledger = tmp_path / "ledger.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "sdcs_bench.cli", "proxy", "--replay", str(script), "--ledger",
                             str(ledger)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"on (http://\S+);", proc.stderr.readline()).group(1)
        assert httpx.post(url + "/v1/chat/completions", json={"model": "m"}).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert json.loads(out)["total"] == 77
    sandbox = make_sandbox("Vanilla")
    card_path = tmp_path / "card.json"
    done = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "evaluate-sandbox", "--tier", "2", "--sandbox",
                           str(sandbox), "--ledger", str(ledger), "--json-out", str(card_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    card = json.loads(card_path.read_text())
    assert card["tokens"]["source"] == "proxy" and card["tokens"]["total"] == 77


def test_a_forwarded_call_counts_even_when_its_caller_died(tmp_path):
    """A harness killed while waiting for its answer was still billed: the proxy reads the reply
    to the end and ledgers its usage."""
    usage = {"uncached_input": 21, "cache_read": 0, "cache_write": 0, "output": 2, "reasoning": 0}
    script = _script(tmp_path, [{"text": "slow", "delay_s": 0.6, "usage": usage}])
    with ModelProxy(ledger=tmp_path / "up.jsonl", script=script.for_session(1, {})) as upstream:
        with ModelProxy(ledger=tmp_path / "fw.jsonl", mode="forward", upstreams={"openai": upstream.url}) as proxy:
            with pytest.raises(httpx.TimeoutException):
                httpx.post(proxy.url + "/v1/chat/completions", json={"model": "m", "stream": True}, timeout=0.2)
            deadline = time.monotonic() + 5
            while not (tmp_path / "fw.jsonl").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
    rows = read_ledger(tmp_path / "fw.jsonl")
    assert len(rows) == 1 and _components(rows[0]) == usage and rows[0]["client_gone"] is True


@pytest.mark.parametrize("target", ["@{host}/v1/messages", "{host}/v1/messages", ".{host}/v1/messages",
                                    "http://{host}/v1/messages"])
def test_a_request_path_cannot_redirect_a_forwarded_call_to_another_host(tmp_path, target):
    """Hostile: an agent writes its own request line so that `upstream + path` names a server it
    runs (`https://api.example.com@127.0.0.1:P/...`), to collect the API key and report a $0 call.
    The proxy refuses every request target that is not an allowed model call, before it forwards
    (tests/test_proxy_walls.py tries many more)."""
    import http.client

    usage = {"uncached_input": 0, "cache_read": 0, "cache_write": 0, "output": 0, "reasoning": 0}
    evil = ModelProxy(ledger=tmp_path / "evil.jsonl", script=_script(tmp_path, [{"text": "free", "usage": usage}])
                      .for_session(1, {}), dump_dir=tmp_path / "evil-dump")
    with evil, ModelProxy(ledger=tmp_path / "fw.jsonl", mode="forward",
                          upstreams={"anthropic": "https://api.example.invalid"}) as proxy:
        host = evil.url.removeprefix("http://")
        conn = http.client.HTTPConnection(proxy.url.removeprefix("http://"))
        conn.request("POST", target.format(host=host), body=json.dumps({"model": "m"}),
                     headers={"x-api-key": "sk-test-secret-123456", "content-type": "application/json"})
        resp = conn.getresponse()
        resp.read()
    assert resp.status == 403
    assert read_ledger(tmp_path / "evil.jsonl") == []  # nothing reached the agent's own server
    rows = read_ledger(tmp_path / "fw.jsonl")
    assert len(rows) == 1 and rows[0]["status"] == 403 and rows[0]["refused"] and not rows[0]["usage"]
    assert rows[0]["refused_reason"].startswith("not an allowed model call: POST ")
