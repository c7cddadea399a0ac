"""Codex CLI's quirks, on the two replay sessions the contract suite runs
(`test_harness_contract.py` checks what every harness shares)."""

from __future__ import annotations

from harness_support import agent_cfg, without_source

from sdcs_bench.agents import make_harness

AGENT = "replay_codex"
EDITED = "ledger/specsnap_probe.py"


def test_s1_edit_came_through_codex_apply_patch(replay_pairs):
    s1 = replay_pairs(AGENT).s1
    # The edit came through Codex's own apply_patch path (the intercepted shell call).
    assert '"file_change"' in (s1.stage_dir / "transcript.jsonl").read_text()
    assert (s1.tree / EDITED).read_text().endswith("PROBE = 1\n")
    assert not (s1.tree / ".codex").exists()


def test_native_usage_survives_the_kill_and_matches_the_stdout_report(replay_pairs):
    pair = replay_pairs(AGENT)
    # Codex's counts include cached tokens in input: after normalisation the rollout file's record,
    # which survives the kill, is exactly the proxy's count.
    assert pair.s1.record["tokens_native"] is not None, "no token_usage_record in the rollout"
    # A clean exit also reports turn.completed on stdout: the same numbers.
    stdout_native = make_harness(agent_cfg(AGENT)).stdout_usage(pair.s2.stage_dir / "transcript.jsonl")
    assert stdout_native is not None
    assert without_source(stdout_native.to_dict()) == without_source(pair.s2.record["tokens"])
