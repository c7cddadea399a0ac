"""The real opencode binary against the replay proxy (no network, no key): session 1 is cleaved by
the watcher's kill with the parallel commit refused, session 2 continues in the same sandbox.

A missing binary is a failure (``specsnap install-harnesses`` installs it), never a skip."""

from __future__ import annotations

from pathlib import Path

from harness_support import (
    agent_cfg,
    assert_cleaved_and_uncommitted,
    run_replay_session,
    scaffold_tier2,
    script_usage,
    served_entries,
    served_usage,
    without_source,
)

from sdcs_bench.agents import make_harness

AGENT = "replay_opencode"
EDITED = "ledger/specsnap_probe.py"
TITLE = 1  # entry 1 of each session: the title-generation side call (a `match:` entry)


def test_opencode_binary_is_installed():
    binary = make_harness(agent_cfg(AGENT)).binary()
    assert binary.is_file(), f"{binary} missing: run `specsnap install-harnesses`"


def test_opencode_replay_cleave_then_continue(tmp_path: Path):
    workdir = scaffold_tier2(tmp_path / "repo")

    # ---------------------------------------------------------------- session 1: cleaved by the kill
    s1 = run_replay_session(AGENT, workdir, tmp_path / "s1", 1, timeout_s=100)
    assert_cleaved_and_uncommitted(s1, EDITED)
    rec = s1.record
    assert rec["cleave"]["stopped_by"] == "watcher kill"  # no exact stop for opencode
    assert rec["exit_code"] != 0  # killed, not a clean exit
    assert (workdir / EDITED).read_text().endswith("PROBE = 1\n")  # written by opencode's apply_patch
    # Served: the title call and entry 2 (the edit + parallel commit); entry 3 never was, and any
    # call made after the cleave was refused with no usage.
    assert sorted(served_entries(s1.ledger)) == [TITLE, 2], s1.ledger
    assert all(r.get("usage") is None for r in s1.ledger if r.get("refused"))
    assert rec["tokens"]["source"] == "proxy"
    assert s1.proxy_totals == served_usage(AGENT, 1, TITLE, 2)
    assert without_source(rec["tokens"]) == without_source(served_usage(AGENT, 1, TITLE, 2).to_dict())
    assert rec["model_calls"] == 2
    # opencode records a step's tokens only when the step finishes (after all its tools ran); the
    # kill lands ~40 ms after the patch's write, mid-step, and the title call is never counted
    # natively: nothing native is left (absent, not zero). Were the kill ever slower than the
    # step, exactly entry 2 would be recorded, never anything else.
    if rec["tokens_native"] is None:
        assert rec["tokens_native_minus_proxy"] is None
    else:
        assert without_source(rec["tokens_native"]) == without_source(served_usage(AGENT, 1, 2).to_dict())
    assert rec["context_exposure"] == "AGENTS.md read natively (opencode project rules)"
    # Private HOME: opencode wrote nothing of its own into the repository.
    assert rec["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
    assert not (workdir / ".opencode").exists() and not (workdir / "opencode.json").exists()
    log = s1.git("log", "--format=%s").split("\n")
    assert "wip" not in log and "after-cleave" not in log

    # ---------------------------------------------------------------- session 2: runs to the end
    s2 = run_replay_session(AGENT, workdir, tmp_path / "s2", 2, timeout_s=100)
    rec2 = s2.record
    stderr = (s2.stage_dir / "agent.stderr.log").read_text()[-3000:]
    assert rec2["status"] == "ok", (rec2["status"], rec2["exit_code"], stderr)
    assert rec2["exit_code"] == 0
    assert rec2["cleave"]["fired"] is False
    assert s2.git("rev-parse", "HEAD").strip() != s2.start_head, "session 2's commit did not land"
    assert s2.git("log", "-1", "--format=%s").strip() == "finish"
    assert EDITED in s2.git("show", "--name-only", "--format=", "HEAD").split()
    assert s2.git("status", "--porcelain").strip() == ""
    assert sorted(served_entries(s2.ledger)) == [1, 2, 3, 4, 5, 6]  # title, read+status, task, sub-agent, commit, final
    assert not any(r.get("refused") for r in s2.ledger)
    assert s2.proxy_totals == script_usage(AGENT, 2)
    assert rec2["tokens"]["source"] == "proxy"
    assert rec2["model_calls"] == 6
    # A clean exit: native (opencode's database, sub-agent included) equals the proxy minus the
    # title call, which opencode never counts; the stdout alone misses the sub-agent's step too.
    title = served_usage(AGENT, 2, TITLE)
    subagent = served_usage(AGENT, 2, 4)
    assert rec2["tokens_native"]["source"] == "native"
    assert without_source(rec2["tokens_native"]) == without_source((served_usage(AGENT, 2, 2, 3, 4, 5, 6)).to_dict())
    assert rec2["tokens_native_minus_proxy"] == -title.total
    harness = make_harness(agent_cfg(AGENT))
    stdout_native = harness.stdout_usage(s2.stage_dir / "transcript.jsonl")
    assert stdout_native is not None
    assert stdout_native.total == rec2["tokens_native"]["total"] - subagent.total
    assert rec2["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
    assert not (workdir / ".opencode").exists() and not (workdir / "opencode.json").exists()
