"""mini-swe-agent (the real, pinned ``mini`` binary) against the replay proxy, on tier_2.

S1: one scripted reply makes two ``bash`` calls. The first writes ``ledger/specsnap_probe.py`` AND
commits in the same shell line: the watcher fires at the write and the git guard refuses the
commit. The exact-stop environment (``agents/harness_files/mswea_env.py``) then ends the run,
so the second call (another commit) never runs, and mini exits by itself. S2 continues in the
same sandbox, commits and submits. A missing binary fails these tests (no skip).
"""

from __future__ import annotations

import json

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
from sdcs_bench.agents.mini_swe_agent import MiniSweAgentHarness

AGENT = "replay_mini_swe_agent"
EDITED = "ledger/specsnap_probe.py"
PROBE = '"""SpecSnap replay probe."""\n\nPROBE = 1\n'
EDIT_AND_COMMIT = ("printf '\"\"\"SpecSnap replay probe.\"\"\"\\n\\nPROBE = 1\\n' > ledger/specsnap_probe.py "
                   "&& git add -A && git commit -m wip")
NOT_EXECUTED = "action was not executed"


def trajectory(run) -> dict:
    path = run.stage_dir / "mini.traj.json"
    assert path.is_file(), (run.stage_dir / "agent.stderr.log").read_text()[-3000:]
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def env(tmp_path_factory, request):
    """One sandbox for both sessions; the private HOME's files are read before it is removed."""
    mp = pytest.MonkeyPatch()
    request.addfinalizer(mp.undo)
    base = tmp_path_factory.mktemp("mini_swe_agent")
    homes: dict[int, dict[str, str]] = {}
    original = MiniSweAgentHarness.native_usage

    def spy(self, ctx, transcript):
        homes[ctx.index] = {p.relative_to(ctx.home).as_posix(): p.read_text(errors="replace")
                            for p in ctx.home.rglob("*") if p.is_file()}
        return original(self, ctx, transcript)

    mp.setattr(MiniSweAgentHarness, "native_usage", spy)
    mp.setenv("SPECSNAP_PROXY_DUMP", str(base / "dump"))
    assert make_harness(agent_cfg(AGENT)).binary().is_file()  # a missing pinned binary is an error, not a skip
    return {"base": base, "workdir": scaffold_tier2(base / "repo"), "homes": homes, "dump": base / "dump"}


@pytest.fixture(scope="module")
def s1(env):
    return run_replay_session(AGENT, env["workdir"], env["base"] / "s1", 1, timeout_s=120)


@pytest.fixture(scope="module")
def s2(env, s1):
    """Session 2 continues from session 1's state."""
    return run_replay_session(AGENT, env["workdir"], env["base"] / "s2", 2, timeout_s=120)


def test_s1_exact_cleave_refuses_the_commit_and_stops_the_batch(s1):
    run = s1
    assert_cleaved_and_uncommitted(run, EDITED)
    rec = run.record
    assert MiniSweAgentHarness.exact_stop is True
    assert rec["cleave"]["stopped_by"] == "harness (exact stop)"
    assert rec["exit_code"] == 0
    assert (run.workdir / EDITED).read_text() == PROBE

    # The one reply was served; mini stopped itself before asking again (entry 2 never served,
    # nothing had to be refused).
    assert [r["replay_entry"] for r in run.ledger] == [1]
    assert rec["model_calls"] == 1 and rec["model_calls_refused"] == 0
    assert rec["turns"] == 1

    # The edit-and-commit command ran: its commit was refused by the git guard. The second call of
    # the same reply never ran (no commit, no file), and mini's run ended with our exit status.
    assert "wip" not in run.git("log", "--format=%s")
    assert not (run.workdir / "after-cleave.txt").exists()
    traj = trajectory(run)
    assert traj["info"]["exit_status"] == "Cleaved"
    assert traj["info"]["config"]["environment_type"] == "mswea_env.SpecSnapEnvironment"
    messages = traj["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "exit"]
    commands = [a["command"] for a in messages[2]["extra"]["actions"]]
    assert commands == [EDIT_AND_COMMIT, "git add -A && git commit -m wip-again && touch after-cleave.txt"]
    # mini marks the action that raised, and every later one, "not executed" (as it does for its own
    # submit command); the command that cleaved did run, and its output is kept in the exit message.
    assert all(m["extra"]["exception_info"] == NOT_EXECUTED for m in messages[3:5])
    cleaved = messages[5]["extra"]["cleaved_command"]
    assert cleaved["command"] == EDIT_AND_COMMIT and cleaved["returncode"] != 0
    assert "this commit is refused" in cleaved["output"]


def test_s1_tokens_proxy_and_native(s1):
    rec = s1.record
    expected = served_usage(AGENT, 1, 1)
    assert s1.proxy_totals == expected
    assert expected != script_usage(AGENT, 1)  # the never-served entry is not counted
    assert rec["tokens"]["source"] == "proxy"
    assert rec["tokens"] == expected.to_dict()
    # mini exits cleanly and its trajectory keeps litellm's usage per call: cached and reasoning
    # tokens are reported separately, so every component matches the proxy.
    assert rec["tokens_native"] == {**expected.to_dict(), "source": "native"}
    assert rec["tokens_native_minus_proxy"] == 0


def test_s1_context_and_private_home(env, s1):
    run = s1
    rec = run.record
    assert rec["context_exposure"] == "AGENTS.md prepended to the task message (instance_template of the private config)"
    first = json.loads(sorted((env["dump"] / "session_1").glob("*.json"))[0].read_text())
    body = first["body"]
    assert first["path"] == "/v1/chat/completions" and body["model"] == "gpt-5"
    assert [t["function"]["name"] for t in body["tools"]] == ["bash"]
    task = body["messages"][1]["content"]
    task = task if isinstance(task, str) else json.dumps(task)
    assert task.startswith(f"# AGENTS.md instructions for {run.workdir}\n\n<INSTRUCTIONS>\n# Working agreement")
    assert "Commit as you go" in task and "Please solve this issue: # Sprint 14" in task

    # Nothing of mini's in the repository; its config, .env and trajectory live in the private HOME.
    assert rec["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
    status = run.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert status == [f"A  {EDITED}"], status  # the command's `git add -A` ran; its commit was refused
    home = env["homes"][1]
    assert {".config/mini-swe-agent/specsnap.yaml", ".config/mini-swe-agent/specsnap.traj.json"} <= set(home)
    assert "api_base: http://127.0.0.1:" in home[".config/mini-swe-agent/specsnap.yaml"]
    assert not any("specsnap-replay-not-a-key" in text for text in home.values())  # the key: env only


def test_s2_continues_and_commits(env, s1, s2):
    run = s2
    rec = run.record
    assert rec["status"] == "ok", (rec["status"], rec["exit_code"], (run.stage_dir / "agent.stderr.log").read_text()[-3000:])
    assert rec["exit_code"] == 0
    assert rec["cleave"]["fired"] is False
    assert rec["end_head"] != rec["start_head"] == s1.start_head
    assert run.git("log", "-1", "--format=%s").strip() == "finish the sprint"
    assert run.git("show", "--name-only", "--format=", "HEAD").split() == [EDITED]
    assert run.git("status", "--porcelain", "--untracked-files=all").strip() == ""

    assert [r["replay_entry"] for r in run.ledger] == [1, 2, 3]
    assert rec["model_calls"] == 3 and rec["model_calls_refused"] == 0 and rec["turns"] == 3
    traj = trajectory(run)
    assert traj["info"]["exit_status"] == "Submitted"
    outputs = [m["extra"].get("raw_output", "") for m in traj["messages"] if m["role"] == "tool"]
    assert outputs[0] == f"A  {EDITED}\n{PROBE}"  # S1's uncommitted (staged) edit, seen by S2

    expected = script_usage(AGENT, 2)
    assert run.proxy_totals == expected == served_usage(AGENT, 2, 1, 2, 3)
    assert rec["tokens"] == expected.to_dict() and rec["tokens"]["source"] == "proxy"
    assert rec["tokens_native"] == {**expected.to_dict(), "source": "native"}
    assert rec["tokens_native_minus_proxy"] == 0
    assert rec["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
