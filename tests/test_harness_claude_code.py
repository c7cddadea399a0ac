"""Claude Code's quirks, on the two replay sessions the contract suite runs
(`test_harness_contract.py` checks what every harness shares).

S1: one scripted reply writes ``ledger/specsnap_probe.py`` and, in parallel, runs
``git add -A && git commit -m wip``. The PostToolUse hook must end the session at the edit and
the PreToolUse hook must deny the commit. S2 continues in the same sandbox and commits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sdcs_bench.agents.claude_code import ClaudeCodeHarness
from sdcs_bench.agents.harness_files.cleave_hook import REASON

AGENT = "replay_claude_code"


def result_event(stage_dir: Path) -> dict:
    result = ClaudeCodeHarness.result(stage_dir / "transcript.jsonl")
    assert result is not None, (stage_dir / "transcript.jsonl").read_text()[-2000:]
    return result


def history(pair, index: int) -> list[dict]:
    """Claude Code's own session history, from the session's private HOME."""
    return [json.loads(line) for f in sorted(pair.home(index).glob(".claude/projects/*/*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]


def tool_results(events: list[dict]) -> dict[str, dict]:
    """tool_use_id -> its tool_result block."""
    out = {}
    for event in events:
        content = (event.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out[block["tool_use_id"]] = block
    return out


def test_s1_the_pretooluse_hook_denies_the_commit_and_posttooluse_ends_the_session(replay_pairs):
    pair = replay_pairs(AGENT)
    run = pair.s1
    assert run.record["model_calls_refused"] == 0  # it stopped itself before asking for another turn
    result = result_event(run.stage_dir)
    assert result["terminal_reason"] == "hook_stopped", result.get("terminal_reason")
    denied = [d for d in result["permission_denials"] if d["tool_name"] == "Bash"]
    assert [d["tool_input"]["command"] for d in denied] == ["git add -A && git commit -m wip"]
    # Claude Code's own history: the Write ran, the Bash call got the PreToolUse hook's refusal
    # (our cleave_hook.py, exit 2), and the stop came from the PostToolUse hook on the Write.
    events = history(pair, 1)
    results = tool_results(events)
    assert set(results) == {"toolu_replay_1_0", "toolu_replay_1_1"}
    assert not results["toolu_replay_1_0"].get("is_error")
    bash = results["toolu_replay_1_1"]
    assert bash["is_error"] is True
    assert bash["content"].startswith("PreToolUse:Bash hook error") and REASON in bash["content"]
    stops = [e["attachment"] for e in events if (e.get("attachment") or {}).get("type") == "hook_stopped_continuation"]
    assert [(a["hookName"], a["message"]) for a in stops] == [("PostToolUse:Write", REASON)]


def test_s1_agents_md_reached_the_model_and_history_stayed_in_the_private_home(replay_pairs):
    pair = replay_pairs(AGENT)
    run = pair.s1
    first = json.loads(sorted((pair.dump / "session_1").glob("*.json"))[0].read_text())
    body = json.dumps(first["body"])
    assert f"Contents of {run.workdir}/AGENTS.md (project instructions" in body
    assert "Commit as you go" in body
    assert {"Write", "Bash", "Read", "Edit"} <= {t["name"] for t in first["body"]["tools"]}
    assert not (run.tree / ".claude").exists() and not (run.tree / "CLAUDE.md").exists()
    assert any(re.match(r"\.claude/projects/[^/]+/[0-9a-f-]+\.jsonl$", f) for f in pair.home_files(1))
    # The invoking user's own Claude history holds nothing of this sandbox.
    mangled = re.sub(r"[^A-Za-z0-9]", "-", str(run.workdir))
    assert not (Path.home() / ".claude" / "projects" / mangled).exists()


def test_s2_turns_and_result_from_claude_codes_report(replay_pairs):
    run = replay_pairs(AGENT).s2
    assert run.record["turns"] == result_event(run.stage_dir)["num_turns"] > 0
    assert result_event(run.stage_dir)["result"] == "Committed the probe module. Done."
