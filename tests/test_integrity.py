"""The integrity check: a cleaved edit that was committed anyway (here by an agent that switches the
git guard off) is found after the session from the repository alone, and the trial is marked
invalid on its scorecard and on the leaderboard."""

from __future__ import annotations

import json
import warnings

import pandas as pd
from harness_support import agent_cfg, run_replay_session, scaffold_tier2

from sdcs_bench.pipeline.board import make_board
from sdcs_bench.pipeline.markdown import to_markdown
from sdcs_bench.scoring import score_sandbox
from sdcs_bench.sandbox import make_backend
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.trial.workload import load_workload

# Stage the module and commit it with every hook disabled, *then* write it to the working tree:
# the watcher cleaves at that write, too late to stop a commit that has already landed.
SNEAK = (
    "printf 'SNEAK = 1\\n' > /tmp/sneak.py && blob=$(git hash-object -w /tmp/sneak.py) && "
    "git update-index --add --cacheinfo 100644,$blob,ledger/sneak.py && "
    "git -c core.hooksPath=/dev/null commit -qm sneak && cp /tmp/sneak.py ledger/sneak.py && sleep 5"
)


def _hostile_session(tmp_path):
    script = tmp_path / "hostile.yaml"
    script.write_text(json.dumps({"responses": [
        {"text": "committing around the guard", "tool_calls": [{"name": "run_shell", "arguments": {"command": SNEAK}}],
         "usage": {"uncached_input": 10, "output": 2}},
    ]}))
    cfg = {**agent_cfg("replay_command"), "replay_script": str(script)}
    work = scaffold_tier2(tmp_path / "sb")
    return run_replay_session(cfg, work, tmp_path / "s1", index=1)


def test_a_committed_cleaved_edit_is_found_and_invalidates_the_trial(tmp_path):
    run = _hostile_session(tmp_path)
    cleave = run.record["cleave"]
    assert cleave["fired"] and cleave["path"] == "ledger/sneak.py"
    assert run.git("log", "-1", "--format=%s").strip() == "sneak"  # the attack worked...
    integrity = cleave["integrity"]
    assert not integrity["ok"] and integrity["edit_committed"] and not cleave["edit_uncommitted"]  # ...and is seen
    assert integrity["commits"] == [run.git("rev-parse", "HEAD").strip()]
    assert "ledger/sneak.py was committed" in integrity["problem"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        card = score_sandbox(load_workload("tier_2"), run.workdir, tokens=TokenUsage(source="none"),
                             backend=make_backend("bwrap"), sessions=[run.record])
    assert card["valid"] is False
    assert card["integrity"]["problems"] == [f"S1: {integrity['problem']}"]


def test_an_honest_cleave_passes_the_integrity_check(tmp_path):
    work = scaffold_tier2(tmp_path / "sb")
    run = run_replay_session("replay_command", work, tmp_path / "s1", index=1)
    assert run.record["cleave"]["integrity"] == {**run.record["cleave"]["integrity"], "ok": True,
                                                 "edit_committed": False, "commits": []}


def _row(trial: str, valid: bool, net: int, tampered: bool = False) -> dict:
    return {"tampered": tampered, "tamper_evidence": "sentinel x passed together with y | more" if tampered else "",
            "trial": trial, "workload": "tier_2", "arm": "Vanilla", "agent": "a", "agent_kind": "real agent",
            "variant": "none", "n_requirements": 8, "raw": net, "net": net, "tes": float(net), "tokens": 10,
            "s1_edit_survived": True, "expected_net": None, "matches_expected": None, "poison_survived": "",
            "valid": valid, "invalid_reasons": "" if valid else "S1: the cleaved edit was committed"}


def test_the_leaderboard_counts_invalid_trials_apart_and_says_so():
    board = make_board(pd.DataFrame([_row("t0", True, 2), _row("t1", False, 8), _row("t2", True, 4)]))
    (row,) = board.to_dict("records")
    assert row["trials"] == 3 and row["invalid"] == 1
    assert row["net"] == 3.0  # the mean of the valid trials only: the forged 8 does not count
    md = to_markdown(board, "s")
    assert "INVALID" in md and "1 trial" in md


def test_a_tampered_trial_scores_zero_in_every_mean_and_the_leaderboard_says_why():
    board = make_board(pd.DataFrame([_row("t0", True, 4), _row("t1", True, 0, tampered=True)]))
    (row,) = board.to_dict("records")
    assert (row["trials"], row["invalid"], row["tampered"], row["net"]) == (2, 0, 1, 2.0)
    assert row["tamper_evidence"] == "sentinel x passed together with y"
    md = to_markdown(board, "s")
    assert "TAMPERED: 1 trial" in md and "sentinel x passed together with y" in md
