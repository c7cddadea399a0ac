"""The generic command adapter, the proxy and the session runner together, with SpecSnap's tiny
example agent: edit + commit in one reply is cleaved, tokens are the proxy's, keys never leak."""

from __future__ import annotations

import json

from harness_support import agent_cfg, assert_cleaved_and_uncommitted, run_replay_session, scaffold_tier2

from sdcs_bench.proxy import ModelProxy, ReplayScript
from sdcs_bench.tokens import TokenUsage

ROOT_SCRIPT = "conf/agent/replay/command.yaml"


def _usage(**kw) -> TokenUsage:
    return TokenUsage(**kw, source="proxy")


def test_edit_and_commit_in_one_reply_is_cleaved_and_only_served_turns_count(tmp_path):
    work = scaffold_tier2(tmp_path / "sb")
    run = run_replay_session("replay_command", work, tmp_path / "s1", index=1)
    assert_cleaved_and_uncommitted(run, "ledger/specsnap_probe.py")
    assert run.record["cleave"]["stopped_by"] == "watcher kill"
    served = [r["replay_entry"] for r in run.ledger if not r["refused"]]
    assert served == [1]  # the second scripted turn was never served (refused or never asked)
    assert run.proxy_totals == _usage(uncached_input=1500, cache_read=200, output=90, reasoning=10)
    assert run.record["tokens"] == run.proxy_totals.to_dict()
    assert run.record["tokens"]["source"] == "proxy" and run.record["tokens_native"] is None

    run2 = run_replay_session("replay_command", work, tmp_path / "s2", index=2)
    assert run2.record["status"] == "ok" and not run2.record["cleave"]["fired"]
    assert run2.git("rev-parse", "HEAD").strip() != run.start_head  # S2's commit landed
    assert "specsnap_probe.py" in run2.git("show", "--stat", "HEAD")  # carrying S1's uncommitted edit
    assert [r["replay_entry"] for r in run2.ledger] == [1, 2, 3]
    assert run2.proxy_totals == _usage(uncached_input=2500, cache_read=6800, output=125, reasoning=5)
    assert run2.record["model_calls"] == 3 and run2.record["infra_failure"] is None


def test_api_key_never_reaches_any_file(tmp_path, monkeypatch):
    """Forward mode against a stand-in upstream: the agent is handed a real-looking key through its
    environment; it prints it, writes it into the repository and sends it upstream. After the
    session no file of the stage or the sandbox holds the key's text."""
    secret = "sk-test-" + "Zq7" * 12
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    script_path = tmp_path / "leaky.yaml"
    script_path.write_text(json.dumps({"responses": [
        {"text": "debugging", "tool_calls": [{"name": "run_shell", "arguments": {
            "command": "echo key=$OPENAI_API_KEY; echo $OPENAI_API_KEY >&2; echo $OPENAI_API_KEY > notes.txt"}}],
         "usage": {"uncached_input": 10, "output": 2}},
        {"text": f"the key might be {secret}", "usage": {"uncached_input": 12, "output": 3}},
    ]}))
    upstream = ModelProxy(ledger=tmp_path / "upstream.jsonl", script=ReplayScript.load(script_path).for_session(1, {}))
    cfg = {**agent_cfg("replay_command"), "proxy": "forward", "endpoint": None}
    work = scaffold_tier2(tmp_path / "sb")
    with upstream:
        cfg["endpoint"] = upstream.url
        run = run_replay_session(cfg, work, tmp_path / "stage", index=2)
    assert run.record["status"] == "ok"
    assert run.proxy_totals == _usage(uncached_input=22, output=5)
    assert "notes.txt" in run.record["redacted_files"] and "transcript.jsonl" in run.record["redacted_files"]
    for root in (tmp_path / "stage", work):
        for path in root.rglob("*"):
            if path.is_file() and ".git" not in path.relative_to(root).parts:
                assert secret.encode() not in path.read_bytes(), path
    assert "[REDACTED" in (work / "notes.txt").read_text()


def test_missing_key_is_one_clear_error_before_the_session(tmp_path, monkeypatch):
    import pytest

    from sdcs_bench.errors import SpecSnapError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    work = scaffold_tier2(tmp_path / "sb")
    cfg = {**agent_cfg("replay_command"), "proxy": "forward"}
    with pytest.raises(SpecSnapError, match="OPENAI_API_KEY"):
        run_replay_session(cfg, work, tmp_path / "stage")
    assert not (tmp_path / "stage" / "transcript.jsonl").exists()


def test_provider_overload_is_classified_as_infrastructure(tmp_path):
    script_path = tmp_path / "overloaded.yaml"
    script_path.write_text(json.dumps({"responses": [{"error": {"status": 529, "message": "overloaded"}}]}))
    cfg = {**agent_cfg("replay_command"), "replay_script": str(script_path)}
    work = scaffold_tier2(tmp_path / "sb")
    run = run_replay_session(cfg, work, tmp_path / "stage", index=2)
    assert run.record["status"] == "crashed"
    assert run.record["infra_failure"] == "provider error 529 on the last model call"


def test_agent_behaviour_is_not_infrastructure(tmp_path):
    """A harness that exits non-zero after successful model calls failed on its own: data, not retried."""
    script_path = tmp_path / "quits.yaml"
    script_path.write_text(json.dumps({"responses": [
        {"text": "bye", "tool_calls": [{"name": "run_shell", "arguments": {"command": "kill -9 $PPID"}}],
         "usage": {"uncached_input": 5, "output": 1}}]}))
    cfg = {**agent_cfg("replay_command"), "replay_script": str(script_path)}
    work = scaffold_tier2(tmp_path / "sb")
    run = run_replay_session(cfg, work, tmp_path / "stage", index=2)
    assert run.record["status"] == "crashed" and run.record["infra_failure"] is None
