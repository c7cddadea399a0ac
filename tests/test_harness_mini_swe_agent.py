"""mini-swe-agent's quirks, on the two replay sessions the contract suite runs
(`test_harness_contract.py` checks what every harness shares).

S1: one scripted reply makes two ``bash`` calls. The first writes ``ledger/specsnap_probe.py`` AND
commits in the same shell line: the watcher fires at the write and the git guard refuses the
commit. The exact-stop environment (``agents/harness_files/mswea_env.py``) then ends the run,
so the second call (another commit) never runs, and mini exits by itself. S2 continues in the
same sandbox, commits and submits.
"""

from __future__ import annotations

import json

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


def test_s1_the_environment_stops_the_batch_after_the_cleaving_command(replay_pairs):
    run = replay_pairs(AGENT).s1
    assert MiniSweAgentHarness.exact_stop is True
    assert (run.tree / EDITED).read_text() == PROBE
    assert run.record["model_calls_refused"] == 0
    # The edit-and-commit command ran: its commit was refused by the git guard. The second call of
    # the same reply never ran (no commit, no file), and mini's run ended with our exit status.
    assert not (run.tree / "after-cleave.txt").exists()
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
    # The command's `git add -A` ran; its commit was refused.
    assert run.git("status", "--porcelain", "--untracked-files=all").splitlines() == [f"A  {EDITED}"]


def test_s1_agents_md_at_the_top_of_the_task_and_config_in_the_private_home(replay_pairs):
    pair = replay_pairs(AGENT)
    run = pair.s1
    first = json.loads(sorted((pair.dump / "session_1").glob("*.json"))[0].read_text())
    body = first["body"]
    assert first["path"] == "/v1/chat/completions" and body["model"] == "gpt-5"
    assert [t["function"]["name"] for t in body["tools"]] == ["bash"]
    task = body["messages"][1]["content"]
    task = task if isinstance(task, str) else json.dumps(task)
    assert task.startswith(f"# AGENTS.md instructions for {run.workdir}\n\n<INSTRUCTIONS>\n# Working agreement")
    assert "Commit as you go" in task and "Please solve this issue: # Sprint 14" in task
    home = pair.home(1)
    assert {".config/mini-swe-agent/specsnap.yaml", ".config/mini-swe-agent/specsnap.traj.json"} <= set(pair.home_files(1))
    assert "api_base: http://127.0.0.1:" in (home / ".config/mini-swe-agent/specsnap.yaml").read_text()
    for path in home.rglob("*"):  # the key travels in the environment only
        if path.is_file():
            assert "specsnap-replay-not-a-key" not in path.read_text(errors="replace"), path


def test_s2_sees_s1s_staged_edit_and_submits(replay_pairs):
    run = replay_pairs(AGENT).s2
    assert run.git("show", "--name-only", "--format=", "HEAD").split() == [EDITED]
    traj = trajectory(run)
    assert traj["info"]["exit_status"] == "Submitted"
    outputs = [m["extra"].get("raw_output", "") for m in traj["messages"] if m["role"] == "tool"]
    assert outputs[0] == f"A  {EDITED}\n{PROBE}"  # S1's uncommitted (staged) edit, seen by S2
