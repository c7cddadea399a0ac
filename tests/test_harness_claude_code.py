"""Claude Code (the real, pinned ``claude`` binary) against the replay proxy, on tier_2.

S1: one scripted reply writes ``ledger/specsnap_probe.py`` and, in parallel, runs
``git add -A && git commit -m wip``. The PostToolUse hook must end the session at the edit and
the PreToolUse hook must deny the commit. S2 continues in the same sandbox and commits.
A missing binary fails these tests (no skip).
"""

from __future__ import annotations

import json
import re
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
from sdcs_bench.agents.claude_code import ClaudeCodeHarness
from sdcs_bench.agents.harness_files.cleave_hook import REASON

AGENT = "replay_claude_code"
EDITED = "ledger/specsnap_probe.py"


def result_event(stage_dir: Path) -> dict:
    result = ClaudeCodeHarness.result(stage_dir / "transcript.jsonl")
    assert result is not None, (stage_dir / "transcript.jsonl").read_text()[-2000:]
    return result


@pytest.fixture(scope="module")
def env(tmp_path_factory, request):
    """One sandbox for both sessions; the private HOME's files are listed before it is removed."""
    mp = pytest.MonkeyPatch()
    request.addfinalizer(mp.undo)
    base = tmp_path_factory.mktemp("claude_code")
    homes: dict[int, list[str]] = {}
    histories: dict[int, list[dict]] = {}
    original = ClaudeCodeHarness.native_usage

    def spy(self, ctx, transcript):
        homes[ctx.index] = sorted(p.relative_to(ctx.home).as_posix() for p in ctx.home.rglob("*") if p.is_file())
        histories[ctx.index] = [json.loads(line) for f in sorted(ctx.home.glob(".claude/projects/*/*.jsonl"))
                                for line in f.read_text().splitlines() if line.strip()]
        return original(self, ctx, transcript)

    mp.setattr(ClaudeCodeHarness, "native_usage", spy)
    mp.setenv("SPECSNAP_PROXY_DUMP", str(base / "dump"))
    make_harness(agent_cfg(AGENT)).binary()  # a missing pinned binary is an error here, not a skip
    return {"base": base, "workdir": scaffold_tier2(base / "repo"), "homes": homes, "histories": histories,
            "dump": base / "dump"}


@pytest.fixture(scope="module")
def s1(env):
    return run_replay_session(AGENT, env["workdir"], env["base"] / "s1", 1, timeout_s=120)


@pytest.fixture(scope="module")
def s2(env, s1):
    """Session 2 continues from session 1's state (the S1 tests, above it in this file, ran first)."""
    return run_replay_session(AGENT, env["workdir"], env["base"] / "s2", 2, timeout_s=120)


def tool_results(history: list[dict]) -> dict[str, dict]:
    """tool_use_id -> its tool_result block, from Claude Code's own session history."""
    out = {}
    for event in history:
        content = (event.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out[block["tool_use_id"]] = block
    return out


def test_s1_exact_cleave_denies_the_parallel_commit(env, s1):
    run = s1
    assert_cleaved_and_uncommitted(run, EDITED)
    rec = run.record
    assert rec["cleave"]["stopped_by"] == "harness (exact stop)"
    assert rec["exit_code"] == 0

    # The reply with the edit and the commit was served; the harness stopped itself before asking
    # for the next turn (entry 2 was never served, nothing had to be refused).
    assert [r["replay_entry"] for r in run.ledger] == [1]
    assert rec["model_calls"] == 1 and rec["model_calls_refused"] == 0

    # The commit issued in the same reply was denied by the PreToolUse hook, and the session ended
    # on the PostToolUse hook's {"continue": false}.
    result = result_event(run.stage_dir)
    assert result["terminal_reason"] == "hook_stopped", result.get("terminal_reason")
    denied = [d for d in result["permission_denials"] if d["tool_name"] == "Bash"]
    assert [d["tool_input"]["command"] for d in denied] == ["git add -A && git commit -m wip"]
    assert "wip" not in run.git("log", "--format=%s")
    # Claude Code's own history: the Write ran, the Bash call got the PreToolUse hook's refusal
    # (our cleave_hook.py, exit 2), and the stop came from the PostToolUse hook on the Write.
    results = tool_results(env["histories"][1])
    assert set(results) == {"toolu_replay_1_0", "toolu_replay_1_1"}
    assert not results["toolu_replay_1_0"].get("is_error")
    bash = results["toolu_replay_1_1"]
    assert bash["is_error"] is True
    assert bash["content"].startswith("PreToolUse:Bash hook error") and REASON in bash["content"]
    stops = [e["attachment"] for e in env["histories"][1]
             if (e.get("attachment") or {}).get("type") == "hook_stopped_continuation"]
    assert [(a["hookName"], a["message"]) for a in stops] == [("PostToolUse:Write", REASON)]


def test_s1_tokens_proxy_and_native(s1):
    run = s1
    rec = run.record
    expected = served_usage(AGENT, 1, 1)
    assert run.proxy_totals == expected
    assert rec["tokens"]["source"] == "proxy"
    assert rec["tokens"] == expected.to_dict()
    # Claude Code exits cleanly at the hook and reports its own modelUsage: equal to the proxy's.
    assert rec["tokens_native"] == {**expected.to_dict(), "source": "native"}
    assert rec["tokens_native_minus_proxy"] == 0


def test_s1_context_and_private_home(env, s1):
    run = s1
    rec = run.record
    assert rec["context_exposure"] == "AGENTS.md read natively (project instructions)"
    # The arm's AGENTS.md reached the model as project instructions in the first request.
    first = json.loads(sorted((env["dump"] / "session_1").glob("*.json"))[0].read_text())
    body = json.dumps(first["body"])
    assert f"Contents of {run.workdir}/AGENTS.md (project instructions" in body
    assert "Commit as you go" in body
    tools = {t["name"] for t in first["body"]["tools"]}
    assert {"Write", "Bash", "Read", "Edit"} <= tools

    # Nothing of the harness's own landed in the repository; its history went to the private HOME.
    assert rec["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
    status = run.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert status == [f"?? {EDITED}"], status
    assert not (run.workdir / ".claude").exists() and not (run.workdir / "CLAUDE.md").exists()
    home_files = env["homes"][1]
    assert any(re.match(r"\.claude/projects/[^/]+/[0-9a-f-]+\.jsonl$", f) for f in home_files), home_files
    # The invoking user's own Claude history holds nothing of this sandbox.
    mangled = re.sub(r"[^A-Za-z0-9]", "-", str(run.workdir))
    assert not (Path.home() / ".claude" / "projects" / mangled).exists()


def test_s2_continues_and_commits(s1, s2):
    run = s2
    rec = run.record
    stderr = (run.stage_dir / "agent.stderr.log").read_text()[-3000:]
    assert rec["status"] == "ok", (rec["status"], rec["exit_code"], stderr)
    assert rec["cleave"]["fired"] is False
    assert rec["end_head"] != rec["start_head"] == s1.start_head
    assert run.git("log", "-1", "--format=%s").strip() == "finish"
    assert EDITED in run.git("show", "--name-only", "--format=", "HEAD").split()
    assert run.git("status", "--porcelain").strip() == ""

    assert [r["replay_entry"] for r in run.ledger] == [1, 2, 3]
    expected = script_usage(AGENT, 2)
    assert run.proxy_totals == expected == served_usage(AGENT, 2, 1, 2, 3)
    assert rec["tokens"] == expected.to_dict() and rec["tokens"]["source"] == "proxy"
    assert rec["tokens_native"] == {**expected.to_dict(), "source": "native"}
    assert rec["tokens_native_minus_proxy"] == 0
    assert rec["turns"] == result_event(run.stage_dir)["num_turns"] > 0
    assert result_event(run.stage_dir)["result"] == "Committed the probe module. Done."
    assert rec["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
