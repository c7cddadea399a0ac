"""Aider (the real, pinned ``aider`` binary) against the replay proxy, on tier_2.

S1: the first scripted reply names ``ledger/balances.py``; aider adds it to the chat and asks again
(its file-mention reflection). The second reply carries a SEARCH/REPLACE block editing that file
and a suggested ``git add -A && git commit -m wip`` shell command. Aider applies the edit first
and runs suggested commands after it; it has no exact stop, so the watcher kills it at the edit
(and the git guard would refuse the commit). S2 continues in the same sandbox the same way: a
reply naming the file, then one whose suggested commit runs and lands.
A missing binary fails these tests (no skip).

(The S1 edit is of an existing file on purpose: aider creates a NEW file by first touching it
empty, and the current watcher counts that empty write as the completed edit, so it kills aider
before the content is written. See the adapter's report.)
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
from sdcs_bench.agents.aider import AiderHarness
from sdcs_bench.core.tokens import TokenUsage

AGENT = "replay_aider"
EDITED = "ledger/balances.py"
PROBE = '__all__ = ["account_balances", "normal_balance", "trial_balance_ok"]\n\nPROBE = 1  # SpecSnap replay probe\n'
TAGS_CACHE = ".aider.tags.cache.v4/"
IN_REPO_HISTORY = (".aider.chat.history.md", ".aider.input.history", ".aider.llm.history")


def aider_native(usage: TokenUsage) -> dict:
    """What aider's analytics log reports for replies with this usage: ``prompt_tokens`` (cached
    tokens included, not split out) and ``completion_tokens`` (reasoning included)."""
    return TokenUsage(uncached_input=usage.uncached_input + usage.cache_read, output=usage.output + usage.reasoning,
                      source="native").to_dict()


@pytest.fixture(scope="module")
def env(tmp_path_factory, request):
    """One sandbox for both sessions; the private HOME's files are read before it is removed."""
    mp = pytest.MonkeyPatch()
    request.addfinalizer(mp.undo)
    base = tmp_path_factory.mktemp("aider")
    homes: dict[int, dict[str, str | None]] = {}
    original = AiderHarness.native_usage

    def spy(self, ctx, transcript):
        homes[ctx.index] = {p.relative_to(ctx.home).as_posix(): p.read_text(errors="replace")
                            if p.stat().st_size < 500_000 else None for p in ctx.home.rglob("*") if p.is_file()}
        return original(self, ctx, transcript)

    mp.setattr(AiderHarness, "native_usage", spy)
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


def transcript(run) -> str:
    return (run.stage_dir / "transcript.jsonl").read_text(errors="replace")


def test_s1_cleaved_at_the_edit_and_the_suggested_commit_never_lands(env, s1):
    run = s1
    assert_cleaved_and_uncommitted(run, EDITED)
    rec = run.record
    assert AiderHarness.exact_stop is False
    assert rec["cleave"]["stopped_by"] == "watcher kill"
    assert rec["exit_code"] == -9  # the process group's SIGKILL
    assert PROBE in (run.workdir / EDITED).read_text()  # the SEARCH/REPLACE block, applied whole
    assert run.git("diff", "--numstat").split() == ["2", "0", EDITED]

    # The reply naming the file, then the one with the edit and the suggested commit, were served;
    # entry 3 never was, and nothing had to be refused: aider was killed before it could ask again.
    assert [r["replay_entry"] for r in run.ledger] == [1, 2]
    assert rec["model_calls"] == 2 and rec["model_calls_refused"] == 0
    assert rec["turns"] == 2

    # Aider applied the edit; it runs a reply's suggested commands only after its linter, by which
    # time the watcher has killed it (observed every time). Were it ever slower, the git guard
    # refuses the commit: either way no commit.
    out = transcript(run)
    assert "git add -A && git commit -m wip" in out  # the reply, as aider printed it
    assert "Allow edits to file that has not been added to the chat?" not in out  # added by the reflection
    if "Running git add" in out:
        assert "this commit is refused" in out, out[-2000:]
    assert "wip" not in run.git("log", "--format=%s")
    assert run.git("rev-parse", "HEAD").strip() == run.start_head


def test_s1_tokens_proxy_and_native(s1):
    rec = s1.record
    expected = served_usage(AGENT, 1, 1, 2)
    assert s1.proxy_totals == expected
    assert expected != script_usage(AGENT, 1)  # the never-served entry is not counted
    assert rec["tokens"]["source"] == "proxy"
    assert rec["tokens"] == expected.to_dict()
    # Aider logs message_send before it applies the reply's edits, so even a killed session has it.
    assert rec["tokens_native"] == aider_native(expected)
    assert rec["tokens_native_minus_proxy"] == 0
    assert (s1.stage_dir / "aider.analytics.jsonl").is_file()


def test_s1_context_and_private_home(env, s1):
    run = s1
    rec = run.record
    assert rec["context_exposure"] == "AGENTS.md added read-only to the chat (--read AGENTS.md)"
    first = json.loads(sorted((env["dump"] / "session_1").glob("*.json"))[0].read_text())
    assert first["path"] == "/v1/chat/completions" and first["body"]["model"] == "gpt-5"
    messages = "\n".join(str(m.get("content")) for m in first["body"]["messages"])
    assert "Here are some READ ONLY files" in messages and "AGENTS.md\n```\n# Working agreement" in messages
    assert "Commit as you go" in messages
    # The reflection: the second request carries the file the first reply named.
    second = json.loads(sorted((env["dump"] / "session_1").glob("*.json"))[1].read_text())
    body = "Debits minus credits per account code"  # a docstring: in the file, not in aider's repo map
    assert body in json.dumps(second["body"]["messages"]) and body not in messages

    # Aider's histories went to the private HOME, not the repository; the only repository writes are
    # its repo-map cache, recorded as repo memory.
    for name in IN_REPO_HISTORY:
        assert not (run.workdir / name).exists(), name
    created = rec["repo_memory_files"]["created"]
    assert created and all(p.startswith(TAGS_CACHE) for p in created), created
    status = run.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(status) == sorted([f" M {EDITED}", *(f"?? {p}" for p in created)]), status
    home = env["homes"][1]
    assert "I'll add a probe to the balances module" in home[".aider-specsnap/chat.history.md"]
    assert '"event": "message_send"' in home[".aider-specsnap/analytics.jsonl"]
    assert home[".config/git/ignore"] == ".aider*\n"
    assert ".aider/caches/model_prices_and_context_window.json" in home  # seeded: aider stays offline
    assert not any("specsnap-replay-not-a-key" in (text or "") for text in home.values())  # the key: env only


def test_s2_continues_and_commits(env, s1, s2):
    run = s2
    rec = run.record
    assert rec["status"] == "ok", (rec["status"], rec["exit_code"], (run.stage_dir / "agent.stderr.log").read_text()[-3000:])
    assert rec["exit_code"] == 0
    assert rec["cleave"]["fired"] is False
    assert rec["end_head"] != rec["start_head"] == s1.start_head
    assert run.git("log", "-1", "--format=%s").strip() == "finish the sprint"
    # The commit holds the work and nothing of aider's (its cache is ignored through the private
    # HOME's global git ignore file).
    assert run.git("show", "--name-only", "--format=", "HEAD").split() == [EDITED]

    # Two model calls: the reply that named ledger/balances.py, then (the file added) the commit.
    assert [r["replay_entry"] for r in run.ledger] == [1, 2]
    assert rec["model_calls"] == 2 and rec["model_calls_refused"] == 0 and rec["turns"] == 2
    second = json.loads(sorted((env["dump"] / "session_2").glob("*.json"))[1].read_text())
    added = json.dumps(second["body"]["messages"])
    assert "Debits minus credits per account code" in added and "PROBE = 1  # SpecSnap replay probe" in added  # S1's edit, seen
    out = transcript(run)
    assert 'Running git add -A && git commit -m "finish the sprint"' in out

    expected = script_usage(AGENT, 2)
    assert run.proxy_totals == expected == served_usage(AGENT, 2, 1, 2)
    assert rec["tokens"] == expected.to_dict() and rec["tokens"]["source"] == "proxy"
    assert rec["tokens_native"] == aider_native(expected)
    assert rec["tokens_native_minus_proxy"] == 0
    assert all(p.startswith(TAGS_CACHE) for ps in rec["repo_memory_files"].values() for p in ps)
    for name in IN_REPO_HISTORY:
        assert not (run.workdir / name).exists(), name
    assert "finish the sprint" in env["homes"][2][".aider-specsnap/chat.history.md"]
