"""The generic command adapter, the proxy and the session runner together, with SpecSnap's tiny
example agent: keys never leak, infrastructure failures are told from agent behaviour and retried,
repository-written memory is listed (the harness contract suite covers the cleave and tokens)."""

from __future__ import annotations

import json

from harness_support import agent_cfg, run_replay_session, scaffold_tier2

from sdcs_bench.proxy import ModelProxy, ReplayScript
from sdcs_bench.core.tokens import TokenUsage



def _usage(**kw) -> TokenUsage:
    return TokenUsage(**kw, source="proxy")


def test_api_key_never_reaches_any_file(tmp_path, monkeypatch):
    """Forward mode against a stand-in upstream, with a real-looking key in the user's environment:
    the agent is handed only its session's stand-in token, prints it, writes it into the repository
    and sends it to its proxy, which puts the key in upstream; the upstream echoes the key back, and
    the proxy masks it. After the session no file of the stage or the sandbox holds the key's text,
    and nothing had to be redacted."""
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
    assert run.record["credential_leak"] == [] and not run.record.get("redacted_files")
    for root in (tmp_path / "stage", work):
        for path in root.rglob("*"):
            if path.is_file() and ".git" not in path.relative_to(root).parts:
                assert secret.encode() not in path.read_bytes(), path
    assert (work / "notes.txt").read_text().startswith("specsnap-session-")  # the stand-in, never the key


def test_missing_key_is_one_clear_error_before_the_session(tmp_path, monkeypatch):
    import pytest

    from sdcs_bench.core.errors import SpecSnapError

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


def test_stage_retries_infrastructure_failures_from_the_same_snapshot(tmp_path, monkeypatch):
    """The provider is overloaded on the first attempt and answers on the second: the stage keeps
    the failed attempt's records, reruns from its predecessor's snapshot and finishes."""
    from sdcs_bench.pipeline import stages
    from sdcs_bench.pipeline.plan.planner import make_plan

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-retry-key-000000")
    script_path = tmp_path / "flaky.yaml"
    script_path.write_text(json.dumps({"responses": [
        {"error": {"status": 529, "message": "overloaded"}},
        {"text": "writing", "tool_calls": [{"name": "write_file", "arguments": {"path": "ledger/x.py",
                                                                                 "content": "X = 1\n"}}],
         "usage": {"uncached_input": 40, "output": 4}},
    ]}))
    plan = make_plan("smoke", ["agent=[replay_command]", "workload=[tier_2]", "arm=[Vanilla]", "variant=[none]",
                               "session.infra_backoff_s=0"], tmp_path / "results")
    from sdcs_bench.trial.spec import TrialSpec

    raw = plan.trials[0]
    with ModelProxy(ledger=tmp_path / "up.jsonl", script=ReplayScript.load(script_path).for_session(1, {})) as up:
        trial = TrialSpec.from_dict({**raw, "agent": {**raw["agent"], "proxy": "forward", "endpoint": up.url}})
        stages.run_scaffold_stage(trial, tmp_path / "scaffold")
        done = stages.run_session_stage(trial, 1, tmp_path / "scaffold", tmp_path / "s1")
    rec = done["session"]
    assert rec["status"] == "cleaved" and rec["cleave"]["path"] == "ledger/x.py"
    assert rec["infra_attempts"] == [{"attempt": 1, "infra_failure": "provider error 529 on the last model call",
                                      "status": "crashed"}]
    assert (tmp_path / "s1" / "attempts" / "1" / "ledger.jsonl").is_file()
    assert rec["tokens"]["total"] == 44


def test_memory_files_a_harness_writes_into_the_repository_are_listed(tmp_path):
    script_path = tmp_path / "memory.yaml"
    script_path.write_text(json.dumps({"responses": [
        {"text": "remembering", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "CLAUDE.md", "content": "# what I learned\n"}},
            {"name": "write_file", "arguments": {"path": ".aider.chat.history.md", "content": "chat\n"}},
            {"name": "write_file", "arguments": {"path": "docs_notes.txt", "content": "not a memory file\n"}},
            {"name": "run_shell", "arguments": {"command": "echo '# edited' >> AGENTS.md"}}],
         "usage": {"uncached_input": 5, "output": 1}}]}))
    cfg = {**agent_cfg("replay_command"), "replay_script": str(script_path)}
    work = scaffold_tier2(tmp_path / "sb", arm_name="State_MD_Only")
    run = run_replay_session(cfg, work, tmp_path / "stage", index=2, arm_name="State_MD_Only")
    mem = run.record["repo_memory_files"]
    assert mem["created"] == [".aider.chat.history.md", "CLAUDE.md"]
    assert mem["modified"] == []  # AGENTS.md is this arm's own memory file: reported as notes, not here
    assert "docs_notes.txt" not in mem["created"] + mem["modified"]
