"""Gemini CLI (the real, pinned ``gemini`` binary) against the replay proxy, on tier_2.

S1: one scripted reply calls ``write_file`` on ``ledger/specsnap_probe.py`` and, in parallel,
``run_shell_command`` with ``git add -A && git commit -m wip``. The AfterTool hook must end the
session at the edit and the BeforeTool hook must block the commit. S2 continues in the same
sandbox and commits. A missing binary fails these tests (no skip).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness_support import (
    agent_cfg,
    assert_cleaved_and_uncommitted,
    run_replay_session,
    scaffold_tier2,
    script_usage,
    served_usage,
)

from sdcs_bench.agents import make_harness
from sdcs_bench.agents.harness_files.cleave_hook import REASON
from sdcs_bench.agents.gemini_cli import GeminiCliHarness
from sdcs_bench.core.tokens import TokenUsage

AGENT = "replay_gemini_cli"
EDITED = "ledger/specsnap_probe.py"
NONE_CHANGED = {"created": [], "modified": [], "deleted": []}


def report(stage_dir: Path) -> dict:
    data = GeminiCliHarness.report(stage_dir / "transcript.jsonl")
    assert data is not None, (stage_dir / "transcript.jsonl").read_text()[-2000:]
    return data


def tool_calls(messages: list[dict]) -> list[dict]:
    """The function calls of the model's messages in the chat file (last update of each message)."""
    last: dict[str, dict] = {}
    for m in messages:
        if m.get("type") == "gemini":
            last[m["id"]] = m
    return [call for m in last.values() for call in m.get("toolCalls") or []]


@pytest.fixture(scope="module")
def env(tmp_path_factory, request):
    """One sandbox for both sessions; the private HOME's files (and chat history) are read before it
    is removed."""
    mp = pytest.MonkeyPatch()
    request.addfinalizer(mp.undo)
    base = tmp_path_factory.mktemp("gemini_cli")
    homes: dict[int, list[str]] = {}
    chats: dict[int, list[dict]] = {}
    fallback: dict[int, TokenUsage | None] = {}
    original = GeminiCliHarness.native_usage

    def spy(self, ctx, transcript):
        homes[ctx.index] = sorted(p.relative_to(ctx.home).as_posix() for p in ctx.home.rglob("*") if p.is_file())
        chats[ctx.index] = [json.loads(line) for f in sorted(ctx.home.glob(".gemini/tmp/*/chats/*.jsonl"))
                            for line in f.read_text().splitlines() if line.strip()]
        fallback[ctx.index] = GeminiCliHarness.session_file_usage(ctx.home)
        return original(self, ctx, transcript)

    mp.setattr(GeminiCliHarness, "native_usage", spy)
    mp.setenv("SPECSNAP_PROXY_DUMP", str(base / "dump"))
    make_harness(agent_cfg(AGENT)).binary()  # a missing pinned binary is an error here, not a skip
    return {"base": base, "workdir": scaffold_tier2(base / "repo"), "homes": homes, "chats": chats,
            "fallback": fallback, "dump": base / "dump"}


@pytest.fixture(scope="module")
def s1(env):
    return run_replay_session(AGENT, env["workdir"], env["base"] / "s1", 1, timeout_s=120)


@pytest.fixture(scope="module")
def s2(env, s1):
    """Session 2 continues from session 1's state (the S1 tests, above it in this file, ran first)."""
    return run_replay_session(AGENT, env["workdir"], env["base"] / "s2", 2, timeout_s=120)


def test_s1_exact_cleave_blocks_the_parallel_commit(env, s1):
    run = s1
    assert_cleaved_and_uncommitted(run, EDITED)
    rec = run.record
    assert rec["cleave"]["stopped_by"] == "harness (exact stop)"
    assert rec["exit_code"] == 0
    assert "wip" not in run.git("log", "--format=%s")

    # The reply with the edit and the commit was served; the harness stopped itself before asking
    # for the next turn (entry 2 was never served, nothing had to be refused).
    assert [r["replay_entry"] for r in run.ledger] == [1]
    assert rec["model_calls"] == 1 and rec["model_calls_refused"] == 0

    # Gemini CLI's own chat history: the write ran and then the AfterTool hook stopped the agent;
    # the shell call was blocked by the BeforeTool hook (our cleave_hook.py, exit 2).
    calls = {c["name"]: c for c in tool_calls(env["chats"][1])}
    assert set(calls) == {"write_file", "run_shell_command"}
    assert calls["write_file"]["resultDisplay"] == f"Agent execution stopped by hook: {REASON}"
    shell = calls["run_shell_command"]
    assert shell["args"]["command"] == "git add -A && git commit -m wip"
    assert shell["status"] == "error"
    assert shell["resultDisplay"] == f"Tool execution blocked: {REASON}"
    stats = report(run.stage_dir)["stats"]["tools"]["byName"]
    assert stats["run_shell_command"]["success"] == 0 and stats["run_shell_command"]["fail"] == 1


def test_s1_tokens_proxy_and_native(env, s1):
    rec = s1.record
    expected = served_usage(AGENT, 1, 1)
    assert s1.proxy_totals == expected
    assert rec["tokens"]["source"] == "proxy"
    assert rec["tokens"] == expected.to_dict()
    # Gemini CLI exits cleanly at the hook and prints its per-model stats: equal to the proxy's.
    assert rec["tokens_native"] == {**expected.to_dict(), "source": "native"}
    assert rec["tokens_native_minus_proxy"] == 0
    tokens = report(s1.stage_dir)["stats"]["models"]["gemini-2.5-pro"]["tokens"]
    assert tokens["prompt"] == expected.uncached_input + expected.cache_read  # vendor "prompt" includes cache
    assert tokens["input"] == expected.uncached_input
    # The chat-file fallback (a killed harness) reads the same numbers.
    assert env["fallback"][1] is not None and env["fallback"][1].to_dict() == rec["tokens_native"]


def test_s1_context_and_private_home(env, s1):
    run = s1
    rec = run.record
    assert rec["context_exposure"] == "settings context.fileName = [GEMINI.md, AGENTS.md]"
    first = json.loads(sorted((env["dump"] / "session_1").glob("*.json"))[0].read_text())
    body = json.dumps(first["body"])
    assert f"--- Context from: {run.workdir}/AGENTS.md ---" in body
    assert "Commit as you go" in body
    tools = {d["name"] for t in first["body"]["tools"] for d in t.get("functionDeclarations", [])}
    assert {"write_file", "replace", "run_shell_command", "read_file"} <= tools

    # Nothing of the harness's own landed in the repository; settings and chats are in the private HOME.
    assert rec["repo_memory_files"] == NONE_CHANGED
    status = run.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert status == [f"?? {EDITED}"], status
    assert not (run.workdir / ".gemini").exists() and not (run.workdir / "GEMINI.md").exists()
    home_files = env["homes"][1]
    assert ".gemini/settings.json" in home_files
    assert any(f.startswith(".gemini/tmp/") and "/chats/session-" in f for f in home_files), home_files
    # The invoking user's own Gemini state knows nothing of this sandbox.
    projects = Path.home() / ".gemini" / "projects.json"
    assert not projects.exists() or str(run.workdir) not in projects.read_text()


def test_s2_continues_and_commits(env, s1, s2):
    run = s2
    rec = run.record
    stderr = (run.stage_dir / "agent.stderr.log").read_text()[-3000:]
    assert rec["status"] == "ok", (rec["status"], rec["exit_code"], stderr)
    assert rec["cleave"]["fired"] is False
    assert rec["end_head"] != rec["start_head"] == s1.start_head
    assert run.git("log", "-1", "--format=%s").strip() == "finish"
    assert EDITED in run.git("show", "--name-only", "--format=", "HEAD").split()
    assert run.git("status", "--porcelain").strip() == ""
    assert [(c["name"], c["status"]) for c in tool_calls(env["chats"][2])] == [("read_file", "success"),
                                                                              ("run_shell_command", "success")]

    assert [r["replay_entry"] for r in run.ledger] == [1, 2, 3]
    expected = script_usage(AGENT, 2)
    assert run.proxy_totals == expected == served_usage(AGENT, 2, 1, 2, 3)
    assert rec["tokens"] == expected.to_dict() and rec["tokens"]["source"] == "proxy"
    assert rec["tokens_native"] == {**expected.to_dict(), "source": "native"}
    assert rec["tokens_native_minus_proxy"] == 0
    assert env["fallback"][2] is not None and env["fallback"][2].to_dict() == rec["tokens_native"]
    assert report(run.stage_dir)["response"] == "Committed the probe module. Done."
    assert rec["repo_memory_files"] == NONE_CHANGED
