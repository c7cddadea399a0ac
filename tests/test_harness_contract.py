"""What every real harness must do, checked the same way for each: its real binary against the
replay proxy (no network, no key). Session 1 edits a `.py` file and, in the same model reply,
runs `git commit`: the cleave fires on the edit, the edit stays uncommitted, the commit never
lands, no further reply is served, and the tokens are the proxy's count of the served replies
(the harness's own report beside them). Session 2 continues in the same sandbox, finishes and
commits. Each harness's own test file keeps only its quirks.

A missing binary is a failure (``specsnap install-harnesses`` installs it), never a skip."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from harness_support import assert_cleaved_and_uncommitted, script_usage, served_entries, served_usage, without_source

PROBE = "ledger/specsnap_probe.py"
EXACT, KILL = "harness (exact stop)", "watcher kill"


@dataclass(frozen=True)
class Expect:
    edited: str
    stopped_by: str
    s1_served: tuple[int, ...]  # replay entries answered in session 1 (sorted)
    s2_served: tuple[int, ...]
    s2_subject: str  # the message of session 2's commit
    context: str  # how AGENTS.md reached the harness
    native: str  # "equal": its own report equals the proxy's; "none": it reports nothing; "own": see its file
    repo_memory: tuple[str, ...] = ()  # what the harness itself may write into the repository (listed)


EXPECT = {
    "replay_claude_code": Expect(PROBE, EXACT, (1,), (1, 2, 3), "finish",
                                 "AGENTS.md read natively (project instructions)", "equal"),
    "replay_gemini_cli": Expect(PROBE, EXACT, (1,), (1, 2, 3), "finish",
                                "settings context.fileName = [GEMINI.md, AGENTS.md]", "equal"),
    "replay_mini_swe_agent": Expect(PROBE, EXACT, (1,), (1, 2, 3), "finish the sprint",
                                    "AGENTS.md prepended to the task message (instance_template of the private config)",
                                    "equal"),
    "replay_codex": Expect(PROBE, KILL, (1,), (1, 2, 3), "finish", "AGENTS.md read natively (Codex project doc)",
                           "equal"),
    "replay_opencode": Expect(PROBE, KILL, (1, 2), (1, 2, 3, 4, 5, 6), "finish",
                              "AGENTS.md read natively (opencode project rules)", "own"),
    "replay_aider": Expect("ledger/balances.py", KILL, (1, 2), (1, 2), "finish the sprint",
                           "AGENTS.md added read-only to the chat (--read AGENTS.md)", "own",
                           repo_memory=(".aider.tags.cache.v4/",)),  # its repo-map cache
    "replay_command": Expect(PROBE, KILL, (1,), (1, 2, 3), "finish the sprint",
                             "AGENTS.md read by tiny_agent.py as a second system message", "none"),
}
AGENTS = sorted(EXPECT)


def test_every_harness_has_a_replay_agent_in_the_table():
    from sdcs_bench import agents
    from sdcs_bench.trial import config

    replay = {config.entity("agent", a)["harness"] for a in config.options("agent") if a.startswith("replay_")}
    assert replay == set(agents.ADAPTERS) - {"reference"} == {config.entity("agent", a)["harness"] for a in AGENTS}


@pytest.mark.parametrize("agent", AGENTS)
def test_s1_cleave_fires_on_the_edit_and_the_same_reply_commit_never_lands(replay_pairs, agent):
    want, run = EXPECT[agent], replay_pairs(agent).s1
    assert_cleaved_and_uncommitted(run, want.edited)
    rec = run.record
    assert rec["cleave"]["stopped_by"] == want.stopped_by
    assert rec["cleave"]["integrity"]["ok"] and rec["cleave"]["integrity"]["commits"] == []
    assert (rec["exit_code"] == 0) == (want.stopped_by == EXACT)  # an exact stop is a clean exit
    log = run.git("log", "--format=%s").split("\n")
    assert "wip" not in log and "after-cleave" not in log
    assert tuple(sorted(served_entries(run.ledger))) == want.s1_served, run.ledger
    assert all(r.get("usage") is None for r in run.ledger if r.get("refused"))


@pytest.mark.parametrize("agent", AGENTS)
def test_s1_tokens_are_the_proxys_count_of_the_served_replies(replay_pairs, agent):
    want, run = EXPECT[agent], replay_pairs(agent).s1
    rec = run.record
    served = served_usage(agent, 1, *want.s1_served)
    assert rec["tokens"]["source"] == "proxy"
    assert run.proxy_totals == served and without_source(rec["tokens"]) == without_source(served.to_dict())
    assert rec["model_calls"] == rec["turns"] == len(want.s1_served)
    if want.native == "equal":
        assert rec["tokens_native"]["source"] == "native"
        assert without_source(rec["tokens_native"]) == without_source(rec["tokens"])
        assert rec["tokens_native_minus_proxy"] == 0
    elif want.native == "none":
        assert rec["tokens_native"] is None and rec["tokens_native_minus_proxy"] is None


def _only_own_memory(record: dict, want: Expect) -> None:
    """The harness wrote nothing of its own into the repository beyond what it is known to (its
    history went to the private HOME), and every such file is listed on the session record."""
    memory = record["repo_memory_files"]
    listed = memory["created"] + memory["modified"] + memory["deleted"]
    assert all(want.repo_memory and p.startswith(want.repo_memory) for p in listed), memory


@pytest.mark.parametrize("agent", AGENTS)
def test_s1_context_exposure_and_nothing_of_the_harness_in_the_repository(replay_pairs, agent):
    want, run = EXPECT[agent], replay_pairs(agent).s1
    assert run.record["context_exposure"] == want.context
    _only_own_memory(run.record, want)
    if not want.repo_memory:
        status = run.git("status", "--porcelain", "--untracked-files=all").splitlines()
        assert [line[3:] for line in status] == [want.edited], status
    assert run.record["leak_check"]["ok"] and run.record["escaped_processes_killed"] == []


@pytest.mark.parametrize("agent", AGENTS)
def test_s2_finishes_and_commits_the_work(replay_pairs, agent):
    want, pair = EXPECT[agent], replay_pairs(agent)
    run, rec = pair.s2, pair.s2.record
    stderr = (run.stage_dir / "agent.stderr.log").read_text()[-3000:]
    assert rec["status"] == "ok" and rec["exit_code"] == 0, (rec["status"], rec["exit_code"], stderr)
    assert rec["cleave"]["fired"] is False
    assert rec["start_head"] == pair.s1.start_head != rec["end_head"], "session 2's commit did not land"
    assert run.git("log", "-1", "--format=%s").strip() == want.s2_subject
    assert want.edited in run.git("show", "--name-only", "--format=", "HEAD").split()
    leftover = [line for line in run.git("status", "--porcelain").splitlines()
                if not want.repo_memory or not line[3:].startswith(want.repo_memory)]
    assert leftover == [], leftover  # everything committed (but the harness's own listed files)
    assert tuple(sorted(served_entries(run.ledger))) == want.s2_served
    assert not any(r.get("refused") for r in run.ledger)
    assert run.proxy_totals == script_usage(agent, 2) and rec["tokens"]["source"] == "proxy"
    assert rec["model_calls"] == len(want.s2_served)
    if want.native == "equal":
        assert without_source(rec["tokens_native"]) == without_source(rec["tokens"])
        assert rec["tokens_native_minus_proxy"] == 0
    elif want.native == "none":
        assert rec["tokens_native"] is None
    _only_own_memory(rec, want)
