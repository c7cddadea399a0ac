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

from harness_support import served_usage

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


def transcript(run) -> str:
    return (run.stage_dir / "transcript.jsonl").read_text(errors="replace")


def requests(pair, index: int) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((pair.dump / f"session_{index}").glob("*.json"))]


def test_s1_edit_applied_whole_and_the_suggested_commit_never_ran(replay_pairs):
    run = replay_pairs(AGENT).s1
    assert AiderHarness.exact_stop is False
    assert run.record["exit_code"] == -9  # the process group's SIGKILL
    assert PROBE in (run.tree / EDITED).read_text()  # the SEARCH/REPLACE block, applied whole
    assert run.git("diff", "--numstat").split() == ["2", "0", EDITED]
    # Aider applied the edit; it runs a reply's suggested commands only after its linter, by which
    # time the watcher has killed it (observed every time). Were it ever slower, the git guard
    # refuses the commit: either way no commit.
    out = transcript(run)
    assert "git add -A && git commit -m wip" in out  # the reply, as aider printed it
    assert "Allow edits to file that has not been added to the chat?" not in out  # added by the reflection
    if "Running git add" in out:
        assert "this commit is refused" in out, out[-2000:]


def test_native_usage_is_aiders_inclusive_count(replay_pairs):
    pair = replay_pairs(AGENT)
    # Aider logs message_send before it applies the reply's edits, so even a killed session has it.
    assert pair.s1.record["tokens_native"] == aider_native(served_usage(AGENT, 1, 1, 2))
    assert pair.s1.record["tokens_native_minus_proxy"] == 0
    assert (pair.s1.stage_dir / "aider.analytics.jsonl").is_file()
    assert pair.s2.record["tokens_native"] == aider_native(served_usage(AGENT, 2, 1, 2))


def test_s1_reflection_context_and_private_home(replay_pairs):
    pair = replay_pairs(AGENT)
    run = pair.s1
    first, second = requests(pair, 1)[:2]
    assert first["path"] == "/v1/chat/completions" and first["body"]["model"] == "gpt-5"
    messages = "\n".join(str(m.get("content")) for m in first["body"]["messages"])
    assert "Here are some READ ONLY files" in messages and "AGENTS.md\n```\n# Working agreement" in messages
    assert "Commit as you go" in messages
    # The reflection: the second request carries the file the first reply named.
    body = "Debits minus credits per account code"  # a docstring: in the file, not in aider's repo map
    assert body in json.dumps(second["body"]["messages"]) and body not in messages
    # Aider's histories went to the private HOME, not the repository; the only repository writes are
    # its repo-map cache, recorded as repo memory.
    for name in IN_REPO_HISTORY:
        assert not (run.tree / name).exists(), name
    created = run.record["repo_memory_files"]["created"]
    assert created and all(p.startswith(TAGS_CACHE) for p in created), created
    status = run.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(status) == sorted([f" M {EDITED}", *(f"?? {p}" for p in created)]), status
    home = pair.home(1)
    assert "I'll add a probe to the balances module" in (home / ".aider-specsnap/chat.history.md").read_text()
    assert '"event": "message_send"' in (home / ".aider-specsnap/analytics.jsonl").read_text()
    assert (home / ".config/git/ignore").read_text() == ".aider*\n"
    assert ".aider/caches/model_prices_and_context_window.json" in pair.home_files(1)  # seeded: aider stays offline
    for path in home.rglob("*"):  # the key travels in the environment only
        if path.is_file() and path.stat().st_size < 500_000:
            assert "specsnap-replay-not-a-key" not in path.read_text(errors="replace"), path


def test_s2_sees_s1s_edit_and_commits_only_the_work(replay_pairs):
    pair = replay_pairs(AGENT)
    run = pair.s2
    # The commit holds the work and nothing of aider's (its cache is ignored through the private
    # HOME's global git ignore file).
    assert run.git("show", "--name-only", "--format=", "HEAD").split() == [EDITED]
    added = json.dumps(requests(pair, 2)[1]["body"]["messages"])
    assert "Debits minus credits per account code" in added and "PROBE = 1  # SpecSnap replay probe" in added
    assert 'Running git add -A && git commit -m "finish the sprint"' in transcript(run)
    for name in IN_REPO_HISTORY:
        assert not (run.tree / name).exists(), name
    assert "finish the sprint" in (pair.home(2) / ".aider-specsnap/chat.history.md").read_text()
