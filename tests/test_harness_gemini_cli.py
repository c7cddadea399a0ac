"""Gemini CLI's quirks, on the two replay sessions the contract suite runs
(`test_harness_contract.py` checks what every harness shares).

S1: one scripted reply calls ``write_file`` on ``ledger/specsnap_probe.py`` and, in parallel,
``run_shell_command`` with ``git add -A && git commit -m wip``. The AfterTool hook must end the
session at the edit and the BeforeTool hook must block the commit. S2 continues and commits.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness_support import served_usage

from sdcs_bench.agents.gemini_cli import GeminiCliHarness
from sdcs_bench.agents.harness_files.cleave_hook import REASON

AGENT = "replay_gemini_cli"


def report(stage_dir: Path) -> dict:
    data = GeminiCliHarness.report(stage_dir / "transcript.jsonl")
    assert data is not None, (stage_dir / "transcript.jsonl").read_text()[-2000:]
    return data


def chat(pair, index: int) -> list[dict]:
    """Gemini CLI's own chat history, from the session's private HOME."""
    return [json.loads(line) for f in sorted(pair.home(index).glob(".gemini/tmp/*/chats/*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]


def tool_calls(messages: list[dict]) -> list[dict]:
    """The function calls of the model's messages in the chat file (last update of each message)."""
    last: dict[str, dict] = {}
    for m in messages:
        if m.get("type") == "gemini":
            last[m["id"]] = m
    return [call for m in last.values() for call in m.get("toolCalls") or []]


def test_s1_the_beforetool_hook_blocks_the_commit_and_aftertool_stops_the_agent(replay_pairs):
    pair = replay_pairs(AGENT)
    assert pair.s1.record["model_calls_refused"] == 0  # it stopped itself before asking for another turn
    calls = {c["name"]: c for c in tool_calls(chat(pair, 1))}
    assert set(calls) == {"write_file", "run_shell_command"}
    assert calls["write_file"]["resultDisplay"] == f"Agent execution stopped by hook: {REASON}"
    shell = calls["run_shell_command"]
    assert shell["args"]["command"] == "git add -A && git commit -m wip"
    assert shell["status"] == "error"
    assert shell["resultDisplay"] == f"Tool execution blocked: {REASON}"
    stats = report(pair.s1.stage_dir)["stats"]["tools"]["byName"]
    assert stats["run_shell_command"]["success"] == 0 and stats["run_shell_command"]["fail"] == 1


def test_native_usage_from_stdout_and_from_the_chat_files_agree(replay_pairs):
    pair = replay_pairs(AGENT)
    expected = served_usage(AGENT, 1, 1)
    tokens = report(pair.s1.stage_dir)["stats"]["models"]["gemini-2.5-pro"]["tokens"]
    assert tokens["prompt"] == expected.uncached_input + expected.cache_read  # vendor "prompt" includes cache
    assert tokens["input"] == expected.uncached_input
    for index in (1, 2):  # the chat-file fallback (for a killed harness) reads the same numbers
        fallback = GeminiCliHarness.session_file_usage(pair.home(index))
        assert fallback is not None and fallback.to_dict() == pair.session(index).record["tokens_native"]


def test_s1_agents_md_reached_the_model_and_state_stayed_in_the_private_home(replay_pairs):
    pair = replay_pairs(AGENT)
    run = pair.s1
    first = json.loads(sorted((pair.dump / "session_1").glob("*.json"))[0].read_text())
    body = json.dumps(first["body"])
    assert f"--- Context from: {run.workdir}/AGENTS.md ---" in body
    assert "Commit as you go" in body
    tools = {d["name"] for t in first["body"]["tools"] for d in t.get("functionDeclarations", [])}
    assert {"write_file", "replace", "run_shell_command", "read_file"} <= tools
    assert not (run.tree / ".gemini").exists() and not (run.tree / "GEMINI.md").exists()
    home_files = pair.home_files(1)
    assert ".gemini/settings.json" in home_files
    assert any(f.startswith(".gemini/tmp/") and "/chats/session-" in f for f in home_files), home_files
    # The invoking user's own Gemini state knows nothing of this sandbox.
    projects = Path.home() / ".gemini" / "projects.json"
    assert not projects.exists() or str(run.workdir) not in projects.read_text()


def test_s2_tools_and_response(replay_pairs):
    pair = replay_pairs(AGENT)
    assert [(c["name"], c["status"]) for c in tool_calls(chat(pair, 2))] == [("read_file", "success"),
                                                                            ("run_shell_command", "success")]
    assert report(pair.s2.stage_dir)["response"] == "Committed the probe module. Done."
