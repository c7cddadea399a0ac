"""opencode's quirks, on the two replay sessions the contract suite runs
(`test_harness_contract.py` checks what every harness shares)."""

from __future__ import annotations

from harness_support import agent_cfg, served_usage, without_source

from sdcs_bench.agents import make_harness

AGENT = "replay_opencode"
EDITED = "ledger/specsnap_probe.py"
TITLE = 1  # entry 1 of each session: the title-generation side call (a `match:` entry)


def test_s1_native_usage_is_absent_or_only_the_edit_step(replay_pairs):
    s1 = replay_pairs(AGENT).s1
    rec = s1.record
    assert (s1.tree / EDITED).read_text().endswith("PROBE = 1\n")  # written by opencode's apply_patch
    # opencode records a step's tokens only when the step finishes (after all its tools ran); the
    # kill lands ~40 ms after the patch's write, mid-step, and the title call is never counted
    # natively: nothing native is left (absent, not zero). Were the kill ever slower than the
    # step, exactly entry 2 would be recorded, never anything else.
    if rec["tokens_native"] is None:
        assert rec["tokens_native_minus_proxy"] is None
    else:
        assert without_source(rec["tokens_native"]) == without_source(served_usage(AGENT, 1, 2).to_dict())
    assert not (s1.tree / ".opencode").exists() and not (s1.tree / "opencode.json").exists()


def test_s2_native_usage_omits_only_the_title_call(replay_pairs):
    s2 = replay_pairs(AGENT).s2
    rec = s2.record
    # A clean exit: native (opencode's database, sub-agent included) equals the proxy minus the
    # title call, which opencode never counts; the stdout alone misses the sub-agent's step too.
    title = served_usage(AGENT, 2, TITLE)
    subagent = served_usage(AGENT, 2, 4)
    assert rec["tokens_native"]["source"] == "native"
    assert without_source(rec["tokens_native"]) == without_source(served_usage(AGENT, 2, 2, 3, 4, 5, 6).to_dict())
    assert rec["tokens_native_minus_proxy"] == -title.total
    stdout_native = make_harness(agent_cfg(AGENT)).stdout_usage(s2.stage_dir / "transcript.jsonl")
    assert stdout_native is not None
    assert stdout_native.total == rec["tokens_native"]["total"] - subagent.total
    assert not (s2.tree / ".opencode").exists() and not (s2.tree / "opencode.json").exists()
