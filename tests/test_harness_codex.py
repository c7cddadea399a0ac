"""The real Codex CLI binary against the replay proxy (no network, no key): session 1 is cleaved by
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

AGENT = "replay_codex"
EDITED = "ledger/specsnap_probe.py"


def test_codex_binary_is_installed():
    binary = make_harness(agent_cfg(AGENT)).binary()
    assert binary.is_file(), f"{binary} missing: run `specsnap install-harnesses`"


def test_codex_replay_cleave_then_continue(tmp_path: Path):
    workdir = scaffold_tier2(tmp_path / "repo")

    # ---------------------------------------------------------------- session 1: cleaved by the kill
    s1 = run_replay_session(AGENT, workdir, tmp_path / "s1", 1, timeout_s=100)
    assert_cleaved_and_uncommitted(s1, EDITED)
    rec = s1.record
    assert rec["cleave"]["stopped_by"] == "watcher kill"  # no exact stop for Codex
    assert rec["exit_code"] != 0  # killed, not a clean exit
    # The edit came through Codex's own apply_patch path (the intercepted shell call).
    assert '"file_change"' in (s1.stage_dir / "transcript.jsonl").read_text()
    assert (workdir / EDITED).read_text().endswith("PROBE = 1\n")
    # Only entry 1 (the edit + parallel commit) was served; entry 2 never was, and any call made
    # after the cleave was refused with no usage.
    assert served_entries(s1.ledger) == [1], s1.ledger
    assert all(r.get("usage") is None for r in s1.ledger if r.get("refused"))
    assert rec["tokens"]["source"] == "proxy"
    assert s1.proxy_totals == served_usage(AGENT, 1, 1)
    assert without_source(rec["tokens"]) == without_source(served_usage(AGENT, 1, 1).to_dict())
    assert rec["model_calls"] == 1
    # Native usage survives the kill (the rollout file's per-response record) and, as Codex's
    # counts are inclusive, normalises to exactly the proxy's components.
    assert rec["tokens_native"] is not None, "no token_usage_record in the rollout"
    assert rec["tokens_native"]["source"] == "native"
    assert without_source(rec["tokens_native"]) == without_source(rec["tokens"])
    assert rec["tokens_native_minus_proxy"] == 0
    assert rec["context_exposure"] == "AGENTS.md read natively (Codex project doc)"
    # Private HOME: Codex wrote nothing of its own into the repository.
    assert rec["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
    assert not (workdir / ".codex").exists()
    log = s1.git("log", "--format=%s")
    assert "wip" not in log.split("\n") and "after-cleave" not in log

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
    assert served_entries(s2.ledger) == [1, 2, 3]
    assert not any(r.get("refused") for r in s2.ledger)
    assert s2.proxy_totals == script_usage(AGENT, 2)
    assert rec2["tokens"]["source"] == "proxy"
    assert rec2["model_calls"] == 3
    # A clean exit: native (rollout, and turn.completed in the stdout) equals the proxy exactly.
    assert without_source(rec2["tokens_native"]) == without_source(rec2["tokens"])
    assert rec2["tokens_native_minus_proxy"] == 0
    harness = make_harness(agent_cfg(AGENT))
    stdout_native = harness.stdout_usage(s2.stage_dir / "transcript.jsonl")
    assert stdout_native is not None
    assert without_source(stdout_native.to_dict()) == without_source(rec2["tokens"])
    assert rec2["repo_memory_files"] == {"created": [], "modified": [], "deleted": []}
