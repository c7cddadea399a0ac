"""Cross-harness pairs out of the box (issue 38, item 5): the real Claude Code, Codex and Gemini CLI
binaries on the replay server, every ordered pair of their "continue" replay agents handed on by a
reset, a trace, a summary and structured notes (study handoff_matrix), and each harness's two-edit script cut at its
second edit."""

from __future__ import annotations

import json
import tarfile

import pandas as pd
import pytest

pytestmark = pytest.mark.pipeline

CONTINUE = ["replay_claude_code_continue", "replay_codex_continue", "replay_gemini_cli_continue"]
HARNESS = {"replay_claude_code_continue": "claude_code", "replay_codex_continue": "codex",
           "replay_gemini_cli_continue": "gemini_cli"}


def _pair(agent: str) -> tuple[str, str]:
    first, _, second = agent.partition(".then.")
    return first, second or first


@pytest.mark.slow
def test_every_pair_of_the_three_harnesses_hands_on_with_its_costs_and_its_summary(tmp_path):
    """Every ordered pair of the three harnesses (a harness with itself: the trial without a handoff),
    under reset, trace, summary and notes: every trial valid, every cross-harness pair's cost of
    resuming filled (session 2 wrote a module that survives), one scripted writer's call per summary
    and notes trial (the notes valid, rendered), and the trace in session 2's prompt names session
    1's edit."""
    from test_pipeline import run_grid

    from sdcs_bench.pipeline.rows import RESUME_MEANS

    board, run = run_grid(tmp_path, "handoff_matrix", "handoff-matrix")
    cards = pd.read_csv(run / "scorecards.csv")
    assert len(cards) == 9 * 4, cards["trial"].tolist()
    assert cards["valid"].all(), cards.loc[~cards["valid"], "trial"].tolist()
    assert (cards["agent_kind"].str.contains("replay")).all()
    pairs = {_pair(a) for a in cards["agent"]}
    assert pairs == {(a, b) for a in CONTINUE for b in CONTINUE}
    assert set(cards["continuation"]) == {"reset", "trace:4000", "summary", "notes"}

    cross = cards[cards["agent"].str.contains(".then.", regex=False)]
    assert len(cross) == 6 * 4
    for row in cross.itertuples():
        for column in RESUME_MEANS:
            assert pd.notna(getattr(row, column)), (row.trial, column)
        assert row.resume_reached > 0 and row.resume_calls > 0 and row.resume_tokens > 0, row.trial
    # the same on the leaderboard: one row per pair and mode, none with an empty cost of resuming
    cross_board = board[board["agent"].str.contains(".then.", regex=False)]
    assert len(cross_board) == 6 * 4
    assert cross_board[list(RESUME_MEANS)].notna().all().all(), \
        cross_board[["agent", "continuation", *RESUME_MEANS]].to_string()
    assert (cross_board["resume_reached"] > 0).all()

    for mode in ("summary", "notes"):
        written = cards[cards["continuation"] == mode]
        assert len(written) == 9 and (written["handoff_calls"] == 1).all(), written[["trial", "handoff_calls"]]
        assert (written["handoff_tokens"] > 0).all()
        # written by the model of the session handed over (the first agent's), from its trace
        assert (written["handoff_writer"] == written["agent"].map(lambda a: _pair(a)[0])).all()
        assert (written["handoff_source"] == "trace").all()
    assert (cards.loc[cards["continuation"] == "notes", "invalid_notes"] == 0).all()

    trials = run / "trials"
    traced = sorted(p for p in trials.iterdir() if p.name.endswith("__trace-4000"))
    assert len(traced) == 9
    for trial in traced:
        context = (trial / "handoff_2" / "context.md").read_text()
        assert "edit ledger/specsnap_probe.py" in context, (trial.name, context)
    for trial in sorted(p for p in trials.iterdir() if p.name.endswith("__summary")):
        assert "SPECSNAP-SUMMARY" in (trial / "handoff_2" / "context.md").read_text(), trial.name
    for trial in sorted(p for p in trials.iterdir() if p.name.endswith("__notes")):
        notes = (trial / "handoff_2" / "context.md").read_text()
        first = HARNESS[_pair(cards.set_index("trial").loc[trial.name, "agent"])[0]]
        assert notes.startswith("Goal: SPECSNAP-NOTES") and "(files: ledger/specsnap_probe.py)" in notes, trial.name
        assert {"claude_code": "Claude Code", "codex": "Codex", "gemini_cli": "Gemini CLI"}[first] in notes, trial.name
    # every session 1 ran its agent's harness and every session 2 its successor's (ledger.csv, per session)
    ledger = pd.read_csv(run / "ledger.csv")
    for trial, rows in ledger.groupby("trial"):
        first, second = _pair(cards.set_index("trial").loc[trial, "agent"])
        by_session = rows.set_index("session")
        assert by_session.loc["S1", "agent"] == first and by_session.loc["S1", "harness"] == HARNESS[first], trial
        assert by_session.loc["S2", "agent"] == second and by_session.loc["S2", "harness"] == HARNESS[second], trial
        assert by_session.loc["S1", "status"] == "cleaved", trial


TWO_EDITS = {"replay_claude_code_two_edits": "claude_code", "replay_codex_continue": "codex",
             "replay_gemini_cli_continue": "gemini_cli"}


@pytest.mark.slow
def test_each_harness_s_two_edit_script_is_cut_at_its_second_edit(tmp_path):
    """cut_nth_2 on a script per harness whose session 1 makes two .py edits in two replies: session 1
    is cleaved at the second edit (never no_cleave), and the first edit is on disk."""
    from test_pipeline import run_grid

    _board, run = run_grid(tmp_path, "handoff_matrix", "nth-2", agent=list(TWO_EDITS), successor=["same"],
                           variant=["cut_nth_2"], continuation=["reset"])
    trials = sorted((run / "trials").iterdir())
    assert len(trials) == 3, [t.name for t in trials]
    cards = pd.read_csv(run / "scorecards.csv")
    assert cards["valid"].all(), cards.loc[~cards["valid"], "trial"].tolist()
    for trial in trials:
        session = json.loads((trial / "session_1" / "stage.json").read_text())["session"]
        cleave = session["cleave"]
        assert session["status"] == "cleaved", (trial.name, session["status"], cleave)
        assert cleave["fired"] and not cleave.get("no_cleave"), (trial.name, cleave)
        assert cleave["rule"] == "nth_py_edit:2" and cleave["path"] == "ledger/specsnap_probe_2.py", (trial.name, cleave)
        assert cleave["edit_uncommitted"], (trial.name, cleave)  # the cut edit's commit was refused
        with tarfile.open(trial / "session_1" / "snapshot.tar.gz") as tar:
            on_disk = {m.name.removeprefix("./") for m in tar.getmembers() if m.isfile()}
        assert {"ledger/specsnap_probe.py", "ledger/specsnap_probe_2.py"} <= on_disk, trial.name
