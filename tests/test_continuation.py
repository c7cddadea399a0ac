"""Continuation modes (docs/protocol.md#continuation-modes): how every session after a cut continues
(reset, a trace, a summary, the harness's own resume, its own compaction), what crosses from one
session to the next and nothing else, and the plan refusing a mode an agent cannot do."""

from __future__ import annotations

import json
import os
import tarfile
import uuid
from pathlib import Path

import pandas as pd
import pytest

from sdcs_bench.coherence.trace import SessionTrace, keep_from_end, render_lines, render_trace
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.tokens import count_tokens
from sdcs_bench.session.carry import pack_state, read_state, unpack_state
from sdcs_bench.trial.continuation import Continuation


# -- the axis ---------------------------------------------------------------------------------------
def test_a_continuation_is_parsed_and_a_bad_one_names_the_valid_choices():
    assert Continuation.parse("trace:4000") == Continuation("trace", 4000)
    assert str(Continuation.parse("trace:4000")) == "trace:4000" and Continuation.parse(None).is_reset
    assert Continuation.parse("reset").id_part == "" and Continuation.parse("trace:50").id_part == "trace-50"
    for bad in ("trace", "summarise", "resume:1"):
        with pytest.raises(SpecSnapError, match=r"unknown continuation .*valid choices: reset, trace:<budget>"):
            Continuation.parse(bad)
    for bad, got in (("trace:0", "0"), ("trace:-3", "-3"), ("trace:1.5", "1.5"), ("trace:lots", "lots"),
                     ("trace:", "nothing")):
        with pytest.raises(SpecSnapError) as info:
            Continuation.parse(bad)
        assert f"the trace budget must be a positive number of tokens (got {got})" in str(info.value)
        assert "unknown continuation" not in str(info.value)


@pytest.mark.parametrize(("overrides", "message"), [
    (["continuation=[trace]"], "unknown continuation 'trace'; valid choices: reset, trace:<budget>"),
    (["agent=[replay_aider]", "continuation=[resume]"],
     "continuation resume is refused for agent 'replay_aider' (harness aider): no headless resume"),
    (["agent=[replay_codex]", "continuation=[compact]"],
     "continuation compact is refused for agent 'replay_codex' (harness codex): its auto-compaction is reported never "
     "to fire under `codex exec` (openai/codex#16033)"),
    (["agent=[ref_oracle]", "successor=[replay_claude_code]", "continuation=[resume]"],
     "cannot: hand off with trace:<budget> or summary"),
    (["agent=[replay_claude_code]", "continuation=[summary]"],
     "continuation summary needs the model call of handoff_2, which the replay script of agent 'replay_claude_code'"),
    (["agent=[replay_claude_code_continue]", "workload=[motifs_s0]", "variant=[withhold_after_cleave_k2_stub]",
      "continuation=[summary]"], "continuation summary is refused with variant 'withhold_after_cleave_k2_stub': it "
                                 "withholds facts after the cut"),
    (["agent=[ref_follow_code]", "workload=[standards]", "variant=[standard_none]", "continuation=[trace:100]"],
     "continuation trace:100 is refused for reference policy 'ref_follow_code': it runs a whole trial"),
    # several values of the axis without brackets: Hydra's sweep escapes the colon (trace\:1000)
    (["continuation=reset,trace:1000"],
     "override 'continuation=reset,trace:1000': write several values as a list in brackets: "
     "'continuation=[reset,\"trace:1000\"]'"),
    (["continuation=[trace:0]"], "the trace budget must be a positive number of tokens (got 0)"),
    (["continuation=[reset,trace:-5]"], "the trace budget must be a positive number of tokens (got -5)"),
    # a compaction the replay script does not script: its first reply would be taken for the summary
    (["agent=[replay_claude_code]", "continuation=[compact]"],
     "continuation compact needs the compaction request of session 2 answered, which the replay script of agent "
     "'replay_claude_code' (conf/agent/replay/claude_code.yaml) does not script"),
])
def test_a_mode_an_agent_cannot_do_is_refused_at_plan_time_in_one_line(tmp_path, overrides, message):
    from sdcs_bench.pipeline.plan.planner import make_plan

    with pytest.raises(SpecSnapError) as info:
        make_plan("smoke", overrides, results=tmp_path / "results")
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "results").exists()  # nothing planned


def test_a_grid_with_several_refused_continuations_names_every_one_in_one_message(tmp_path):
    """Not only the first refused combination: one line per (agent, successor, mode) under a first
    line, and nothing planned."""
    from sdcs_bench.pipeline.plan.planner import make_plan

    with pytest.raises(SpecSnapError) as info:
        make_plan("smoke", ["agent=[replay_claude_code,replay_claude_code_continue]",
                            "successor=[replay_codex,replay_gemini_cli]", "continuation=[reset,trace:500,resume]",
                            "arm=[Vanilla]", "seed=[0]"], results=tmp_path / "results")
    first, *lines = str(info.value).splitlines()
    assert "4 combinations of agent, successor and continuation" in first, first
    assert sorted(line.split(":")[0].strip() for line in lines) == [
        "replay_claude_code then replay_codex, resume", "replay_claude_code then replay_gemini_cli, resume",
        "replay_claude_code_continue then replay_codex, resume",
        "replay_claude_code_continue then replay_gemini_cli, resume"], lines
    assert all("hand off with trace:<budget> or summary" in line for line in lines)
    assert not (tmp_path / "results").exists()


def test_reset_keeps_today_s_trial_ids_and_stages_and_other_modes_add_a_handoff_before_each_later_session(tmp_path):
    from sdcs_bench.pipeline.plan.planner import make_plan

    plan = make_plan("continuity", ["workload=[tier_3]", "arm=[Vanilla]", "agent=[ref_amnesiac]"],
                     results=tmp_path / "results")
    by_mode = {t.get("continuation", {}).get("name", "reset"): t for t in plan.trials}
    assert by_mode["reset"]["trial_id"] == "tier_3__Vanilla__ref_amnesiac__none__s0"
    assert "continuation" not in by_mode["reset"] and not any(s.startswith("handoff") for s in by_mode["reset"]["stages"])
    sessions = [s for s in by_mode["reset"]["stages"] if s.startswith("session_")]
    for name, trial in by_mode.items():
        if name == "reset":
            continue
        assert trial["trial_id"] == f"tier_3__Vanilla__ref_amnesiac__none__s0__{name.replace(':', '-')}"
        stages = trial["stages"]
        assert [s for s in stages if s.startswith("handoff_")] == [f"handoff_{k}" for k in range(2, len(sessions) + 1)]
        assert all(stages[stages.index(f"handoff_{k}") + 1] == f"session_{k}" for k in range(2, len(sessions) + 1))
    assert by_mode["summary"]["continuation"]["summary_prompt"]["version"].startswith("specsnap-summary/")


# -- the trace ----------------------------------------------------------------------------------------
def _events(*lines: tuple[str, dict]) -> list[dict]:
    return [{"type": kind, "payload": payload} for kind, payload in lines]


def test_a_trace_renders_each_event_without_times_and_keeps_the_end_within_its_budget():
    s1 = SessionTrace(1, "cleaved", _events(("file_read", {"path": "State.md"}),
                                            ("fact_extracted", {"fact": "R-1", "text": "Add  top_accounts(n)\nwith ties."}),
                                            ("edit_intent", {"path": "ledger/a.py", "result": "ok"})))
    s2 = SessionTrace(2, "ok", _events(("test_feedback", {"command": "pytest -q", "result": "fail",
                                                          "diagnostics": "x" * 5000 + " 1 failed"})), "All done.")
    text, record = render_trace([s1, s2], 10_000)
    assert text.splitlines() == ["### Session 1 (cleaved)", "read State.md", "learnt R-1: Add top_accounts(n) with ties.",
                                 "edit ledger/a.py", "### Session 2 (ok)",
                                 "test pytest -q -> fail | " + "x" * 291 + " 1 failed", "said: All done."]
    assert record == {"lines": 7, "kept": 7, "cut": 0, "tokens": sum(count_tokens(line + "\n") for line in text.splitlines())}
    small, cut = render_trace([s1, s2], 12)
    kept = small.splitlines()
    assert kept[0] == f"[{cut['cut']} earlier line(s) cut to fit 12 tokens]" and kept[-1] == "said: All done."
    assert cut["tokens"] <= 12 and cut["kept"] + cut["cut"] == 7
    assert keep_from_end(["a", "b"], 0) == ([], {"lines": 2, "kept": 0, "cut": 2, "tokens": 0})


@pytest.mark.pipeline
def test_a_trace_tells_only_what_happened_and_never_what_specsnap_said():
    """An edit refused at the cut is marked failed, one whose result was never recorded says so; a closing
    message quoting SpecSnap's refusal, and output lines carrying SpecSnap's words, never cross."""
    refused = "Failed to authenticate. API Error: 403 specsnap: this session was cleaved; no further model calls are allowed"
    s1 = SessionTrace(1, "cleaved", _events(
        ("edit_intent", {"path": "ledger/a.py", "result": "ok"}),
        ("edit_intent", {"path": "ledger/specsnap_probe.py", "result": "error"}),
        ("edit_intent", {"path": "ledger/b.py", "result": None}),
        ("test_feedback", {"command": "git commit -m x", "result": "fail",
                           "diagnostics": "specsnap: this session was cleaved; this commit is refused\nreal output"})),
        refused)
    lines = render_lines([s1])
    assert lines == ["### Session 1 (cleaved)", "edit ledger/a.py", "edit ledger/specsnap_probe.py (failed: not applied)",
                     "edit ledger/b.py (outcome not recorded)", "test git commit -m x -> fail | real output"]
    assert not any("specsnap:" in line for line in render_trace([s1], 10_000)[0].splitlines())
    # the agent's own words still cross
    assert render_lines([SessionTrace(1, "ok", [], "All done; the specsnap probe passes.")])[-1].startswith("said: All done")


def test_every_message_specsnap_shows_an_agent_speaks_in_its_own_voice():
    """The proxy's refusals and errors, the git guard's and the tool hooks' refusals all begin with one of
    core.voice's prefixes, which the trace and the summary's transcript leave out."""
    import re

    from sdcs_bench.core import voice
    from sdcs_bench.sandbox import guard

    files = Path(voice.__file__).parents[1] / "agents" / "harness_files"
    for name in ("cleave_hook.py", "mswea_env.py"):  # (run inside the sandbox: read, not imported)
        reason = re.search(r'^REASON = "([^"]*)"', (files / name).read_text(), re.MULTILINE).group(1)
        assert reason.startswith(voice.SPECSNAP), name
    assert 'echo "specsnap: $1' in Path(guard.__file__).read_text() and voice.SPECSNAP == "specsnap: "
    source = Path(voice.__file__).parents[1].joinpath("proxy", "server.py").read_text()
    assert "specsnap proxy: " not in source and "specsnap: " not in source  # (built from voice's prefixes only)
    assert voice.said_by_specsnap("API Error: 403 specsnap proxy: upstream unreachable") and not voice.said_by_specsnap("ok")


# -- what crosses: the carried state ------------------------------------------------------------------
def test_only_the_files_the_harness_names_cross_and_a_planted_link_or_fifo_never_does(tmp_path):
    """Attack: the agent's HOME is its own; it replaces the conversation file by a link to a host file
    (hoping the host archives that file for the next session), plants a FIFO where another named file
    should be, and leaves other files beside them. Only the regular, named file crosses."""
    home = tmp_path / "home"
    (home / ".claude" / "projects" / "p").mkdir(parents=True)
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST SECRET\n")
    (home / ".claude" / "projects" / "p" / "conv.jsonl").write_text('{"ok": 1}\n')
    os.symlink(secret, home / ".claude" / "projects" / "p" / "linked.jsonl")
    os.mkfifo(home / ".claude" / "projects" / "p" / "fifo.jsonl")
    (home / ".claude" / "other.json").write_text("{}")
    dest = tmp_path / "carry.tar.gz"
    record = pack_state(home, [".claude/projects/p/conv.jsonl", ".claude/projects/p/linked.jsonl",
                               ".claude/projects/p/fifo.jsonl", "../outside", "/etc/passwd", ".claude/*"], dest)
    assert [f["path"] for f in record["files"]] == [".claude/projects/p/conv.jsonl"]
    assert {m["path"] for m in record["not_carried"]} == {".claude/projects/p/linked.jsonl", ".claude/projects/p/fifo.jsonl",
                                                          "../outside", "/etc/passwd", ".claude/*"}
    with tarfile.open(dest) as tar:
        assert tar.getnames() == [".claude/projects/p/conv.jsonl"]
    assert b"HOST SECRET" not in b"".join(read_state(dest).values())
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert unpack_state(dest, fresh) == [".claude/projects/p/conv.jsonl"]
    assert sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()) == [
        ".claude/projects/p/conv.jsonl"]


# -- the pipeline on the reference policies -----------------------------------------------------------
NET_BY_MODE = {"reset": 1, "trace:1000": 7, "summary": 3, "notes": 3, "resume": 8, "compact": 3}


@pytest.fixture(scope="module")
def continuity(tmp_path_factory):  # (the tests that use it are marked pipeline)
    from test_pipeline import run_grid

    work = tmp_path_factory.mktemp("continuity")
    return run_grid(work, "continuity", "continuity-t2", workload=["tier_2"], arm=["State_MD_Only"],
                    agent=["ref_amnesiac"])


@pytest.mark.pipeline
def test_every_mode_lands_on_its_closed_form_on_the_reference_policies(continuity):
    board, run = continuity
    assert board["matches_expected"].all(), board.to_string()
    assert dict(zip(board["continuation"], board["net"])) == NET_BY_MODE
    cards = pd.read_csv(run / "scorecards.csv")
    assert cards["valid"].all() and cards["resume_matches_expected"].all()
    summary = cards.set_index("continuation").loc["summary"]
    assert summary["handoff_calls"] == 1 and summary["handoff_tokens"] > 0  # the summariser's meter, separately
    assert pd.isna(cards.set_index("continuation").loc["reset", "handoff_calls"])
    md = (run / "leaderboard.md").read_text()
    assert "## Continuation modes" in md and "| continuation |" in md
    assert (run / "plots" / "continuation_modes.png").is_file()
    assert "continuation_modes" in (run / "report" / "index.html").read_text()
    page = (run / "report" / "trials" / "tier_2__State_MD_Only__ref_amnesiac__none__s0__summary.html").read_text()
    assert "Handoff before session 2: summary" in page and "- R-LED-1: " in page


@pytest.mark.pipeline
def test_each_handoff_records_exactly_what_crossed(continuity):
    _, run = continuity
    trial = "tier_2__State_MD_Only__ref_amnesiac__none__s0"
    handoff = {mode: run / "trials" / f"{trial}__{mode.replace(':', '-')}" / "handoff_2"
               for mode in NET_BY_MODE if mode != "reset"}
    trace = (handoff["trace:1000"] / "context.md").read_text()
    lines = trace.splitlines()
    assert lines[0].endswith("earlier line(s) cut to fit 1000 tokens]")  # cut from the start...
    assert lines[-1] == "edit ledger/balances.py" and "learnt R-LED-1:" not in trace  # ...the end kept
    assert sum(count_tokens(line + "\n") for line in lines[1:]) <= 1000
    assert (handoff["summary"] / "context.md").read_text().startswith("- R-LED-1: ")
    for mode in ("resume", "compact"):
        record = json.loads((handoff[mode] / "stage.json").read_text())["handoff"]
        assert [f["path"] for f in record["carried"]["files"]] == [f".specsnap-policy/{record['session_id']}.json"]
        turns = json.loads(next(iter(read_state(handoff[mode] / "carry.tar.gz").values())))["turns"]
        assert ("Sprint" in turns[0]) == (mode == "resume")  # compacted: summary lines only
        assert (handoff[mode] / "context.md").read_text() == ""
    assert json.loads((handoff["compact"] / "stage.json").read_text())["handoff"]["compaction"]["tokens_after"] < \
        json.loads((handoff["compact"] / "stage.json").read_text())["handoff"]["compaction"]["tokens_before"]
    reset = run / "trials" / trial
    assert not any(p.name.startswith("handoff") for p in reset.iterdir())
    session2 = json.loads((reset / "session_2" / "stage.json").read_text())["session"]
    assert "continuation" not in session2 and "handoff" not in session2  # reset: the session as it always was


# -- real harnesses on the replay server --------------------------------------------------------------
def _pair(tmp_path: Path, cfg: dict, mode: str, monkeypatch):
    """S1 (cut at its probe) and S2 continuing it by ``mode``, with every request body kept."""
    from harness_support import scaffold_tier2

    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.session.runner import run_session
    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm
    from sdcs_bench.trial.schedule import effective_schedule
    from sdcs_bench.trial.workload import load_workload

    monkeypatch.setenv("SPECSNAP_PROXY_DUMP", str(tmp_path / "dump"))
    workdir = scaffold_tier2(tmp_path / "work" / "sandbox")
    workload = load_workload("tier_2")
    schedule = effective_schedule(workload, config.entity("variant", "none"))
    arm = Arm.from_config(config.entity("arm", "AGENTS_MD_Only"))
    conv = str(uuid.uuid4())
    common = dict(trial_id="t", workload=workload, arm=arm, agent_cfg=cfg, workdir=workdir, backend=make_backend("bwrap"),
                  timeout_s=240)
    if mode == "reset":  # (the same two sessions, the second starting afresh)
        s1 = run_session(index=1, session=schedule[0], stage_dir=tmp_path / "s1", **common)
        s2 = run_session(index=2, session=schedule[1], stage_dir=tmp_path / "s2", **common)
        return s1, s2, []
    s1 = run_session(index=1, session=schedule[0], stage_dir=tmp_path / "s1", carry_out=tmp_path / "s1.tar.gz",
                     continuation={"mode": mode, "conversation": conv, "resume": False}, **common)
    sid = s1["continuation"]["carried_out"]["session_id"]
    s2 = run_session(index=2, session=schedule[1], stage_dir=tmp_path / "s2", carry_in=tmp_path / "s1.tar.gz",
                     continuation={"mode": mode, "conversation": conv, "resume": True, "session_id": sid}, **common)
    bodies = [json.loads(p.read_text())["body"] for p in sorted((tmp_path / "dump" / "session_2").glob("*.json"))]
    return s1, s2, bodies


def _text(body: dict) -> str:
    return json.dumps(body)


@pytest.mark.parametrize("agent", ["replay_claude_code", "replay_codex", "replay_gemini_cli"])
def test_a_real_harness_resumes_its_own_killed_conversation(tmp_path, monkeypatch, agent):
    from harness_support import agent_cfg

    from sdcs_bench.proxy import read_ledger

    s1, s2, bodies = _pair(tmp_path, agent_cfg(agent), "resume", monkeypatch)
    assert s1["status"] == "cleaved" and s2["status"] == "ok", (s1["status"], s2["status"])
    carried = s1["continuation"]["carried_out"]
    assert carried["files"] and not carried["not_carried"] and s2["continuation"]["carried_in"] == sorted(
        f["path"] for f in carried["files"])
    first = _text(bodies[0])
    # the continuing session's first request carries the earlier conversation: S1's sprint prompt and
    # its cut tool call, then the neutral continuation prompt
    assert "Sprint 14" in first and "specsnap_probe.py" in first and "Continue from the current workspace" in first
    # the killed process made no call after the cleave (S1's proxy answered one reply; anything else
    # it was asked after the cut it refused)
    rows = read_ledger(tmp_path / "s1" / "ledger.jsonl")
    answered = [r for r in rows if r.get("kind") == "generate" and not r.get("refused")]
    assert len(answered) == 1 and all(r.get("refused") for r in rows if r["at"] > s1["cleave"]["wall_time"])
    assert s2["leak_check"]["ok"] and s2["cleave"].get("integrity", {"ok": True})["ok"]


@pytest.mark.parametrize("agent, mode", [("replay_claude_code", "resume"), ("replay_claude_code_continue", "compact")])
def test_a_resumed_session_counts_only_its_own_work_as_a_fresh_one_does(tmp_path, monkeypatch, agent, mode):
    """The resumed conversation's record also holds session 1's turns (its probe's edit among them); the
    session's events and tool events are its own, as many as the same scripted session 2 run afresh."""
    from harness_support import agent_cfg

    from sdcs_bench.coherence.normalise import normalise

    cfg = agent_cfg(agent)

    def stream(where, since):
        return normalise(cfg["harness"], where / "s2", run_id="t", workdir=(where / "work" / "sandbox").resolve(),
                         since=since)

    _, fresh, _ = _pair(tmp_path / "reset", cfg, "reset", monkeypatch)
    _, resumed, _ = _pair(tmp_path / mode, cfg, mode, monkeypatch)
    own, everything = stream(tmp_path / mode, resumed["started_at"]), stream(tmp_path / mode, None)
    alone = stream(tmp_path / "reset", None)
    assert everything.tool_events > own.tool_events  # the carried history is in the record ...
    assert own.summary()["carried"]["tool_events"] == everything.tool_events - own.tool_events  # ... and left out
    assert (own.tool_events, own.by_type()) == (alone.tool_events, alone.by_type()), (own.summary(), alone.summary())
    assert [(e.type, e.payload.get("path")) for e in own.events] == [(e.type, e.payload.get("path")) for e in alone.events]
    assert fresh["status"] == resumed["status"] == "ok"


def test_claude_code_compacts_the_resumed_conversation_before_the_continuation_prompt(tmp_path, monkeypatch):
    from harness_support import agent_cfg

    from sdcs_bench.proxy import read_ledger

    s1, s2, bodies = _pair(tmp_path, agent_cfg("replay_claude_code_continue"), "compact", monkeypatch)
    assert s1["status"] == "cleaved" and s2["status"] == "ok"
    compacting, continuing = _text(bodies[0]), _text(bodies[1])
    assert "Your task is to create a detailed summary" in compacting and "Sprint 14" in compacting
    # the continuing request carries the summary the harness produced, not the history
    assert "SPECSNAP-COMPACTED" in continuing and "Sprint 14" not in continuing
    assert "Continue from the current workspace" in continuing
    rows = [r for r in read_ledger(tmp_path / "s2" / "ledger.jsonl") if r.get("kind") == "generate"]
    assert rows[0]["replay_entry"] == 1 and rows[0]["usage"]["output"] == 350  # the compaction call, ledgered
    compaction = s2["continuation"]["compaction"]
    assert compaction["by"] == "harness" and compaction["trigger"] == "manual"
    assert compaction["tokens_before"] > compaction["tokens_after"] > 0 and "SPECSNAP-COMPACTED" in compaction["summary"]


@pytest.mark.pipeline
def test_trace_and_summary_reach_a_real_harness_s_prompt_through_the_pipeline(tmp_path):
    """Claude Code on the replay server under every mode, through Snakemake: the trace, the summary and
    the notes are in S2's prompt, the writer's model call is the trial's handoff cost, every trial is
    valid."""
    from test_pipeline import run_grid

    board, run = run_grid(tmp_path, "continuity", "continuity-cc", workload=["tier_2"], arm=["AGENTS_MD_Only"],
                          agent=["replay_claude_code_continue"],
                          continuation=["reset", "trace:4000", "summary", "notes", "resume", "compact"])
    cards = pd.read_csv(run / "scorecards.csv").set_index("continuation")
    assert cards["valid"].all() and (cards["agent_kind"] == "replay (scripted, no model)").all()
    trial = "tier_2__AGENTS_MD_Only__replay_claude_code_continue__none__s0"

    def first_prompt(mode: str) -> str:
        """S2's own transcript (Claude Code's record of its conversation, its prompt first)."""
        return "\n".join(p.read_text() for p in sorted((run / "trials" / f"{trial}__{mode}" / "session_2" / "native")
                                                       .rglob("*.jsonl")))

    assert "What the earlier sessions did" in first_prompt("trace-4000")
    assert "edit ledger/specsnap_probe.py" in first_prompt("trace-4000")
    assert "SPECSNAP-SUMMARY" in first_prompt("summary")
    assert "Notes the previous session handed over" in first_prompt("notes") and "SPECSNAP-NOTES" in first_prompt("notes")
    assert cards.loc["notes", "handoff_calls"] == 1 and cards.loc["notes", "invalid_notes"] == 0
    assert cards.loc["summary", "handoff_calls"] == 1 and cards.loc["summary", "handoff_tokens"] == 940
    card = json.loads((run / "trials" / f"{trial}__compact" / "score" / "scorecard.json").read_text())
    assert card["handoff"]["mode"] == "compact"
    session2 = json.loads((run / "trials" / f"{trial}__compact" / "session_2" / "stage.json").read_text())["session"]
    assert session2["continuation"]["compaction"]["trigger"] == "manual"


@pytest.mark.slow  # (real binaries through Snakemake: the default run has notes on Claude Code above)
@pytest.mark.pipeline
def test_a_named_writer_summarises_and_notes_the_session_s_own_conversation(tmp_path):
    """handoff.writer=replay_codex_continue, handoff.source=conversation on Claude Code's sessions: session
    1 keeps its last request; the handoff gives Codex's model exactly its turns (never the harness's
    prompt or SpecSnap's refusal); Codex's summary and notes reach session 2's prompt; the writer and
    source are on the record and the scorecards."""
    from test_pipeline import run_grid

    _board, run = run_grid(tmp_path, "continuity", "named-writer",
                           settings=("handoff.writer=replay_codex_continue", "handoff.source=conversation"),
                           workload=["tier_2"], arm=["AGENTS_MD_Only"], agent=["replay_claude_code_continue"],
                           continuation=["summary", "notes"])
    cards = pd.read_csv(run / "scorecards.csv").set_index("continuation")
    assert cards["valid"].all() and (cards["handoff_writer"] == "replay_codex_continue").all()
    assert (cards["handoff_source"] == "conversation").all() and cards.loc["notes", "invalid_notes"] == 0
    trial = run / "trials" / "tier_2__AGENTS_MD_Only__replay_claude_code_continue__none__s0"
    for mode, said in (("summary", "SPECSNAP-SUMMARY: the previous session (Codex)"), ("notes", "written by Codex")):
        handoff = Path(f"{trial}__{mode}") / "handoff_2"
        assert (Path(f"{trial}__{mode}") / "session_1" / "conversation.json").is_file()
        transcript = (handoff / "writer_input.md").read_text()
        assert transcript.startswith("user: ") and "Sprint" in transcript  # its prompt, as its model saw it
        assert "assistant then: edit ledger/specsnap_probe.py" in transcript  # what its last reply did
        assert "specsnap: " not in transcript and "You are Claude Code" not in transcript
        record = json.loads((handoff / "stage.json").read_text())["handoff"][mode]
        assert record["writer"]["agent"] == "replay_codex_continue" and record["source"] == "conversation"
        assert record["transcript"]["kept"] == len(transcript.splitlines())
        assert said in (handoff / "context.md").read_text()
        prompt = "\n".join(p.read_text() for p in sorted((Path(f"{trial}__{mode}") / "session_2" / "native").rglob("*.jsonl")))
        assert said in prompt


@pytest.mark.slow
@pytest.mark.pipeline
def test_notes_that_break_the_schema_carry_nothing_and_say_why(tmp_path):
    """A writer whose notes miss a required field (the two-edit script's, on purpose): nothing crosses,
    the answer is kept as it came, the record names the problem, the trial stays valid and
    ``invalid_notes`` counts it."""
    from test_pipeline import run_grid

    _board, run = run_grid(tmp_path, "continuity", "bad-notes", workload=["tier_2"], arm=["AGENTS_MD_Only"],
                           agent=["replay_claude_code_two_edits"], continuation=["notes"])
    cards = pd.read_csv(run / "scorecards.csv")
    assert cards["valid"].all() and cards["invalid_notes"].tolist() == [1]
    handoff = run / "trials" / "tier_2__AGENTS_MD_Only__replay_claude_code_two_edits__none__s0__notes" / "handoff_2"
    record = json.loads((handoff / "stage.json").read_text())["handoff"]
    assert record["notes"]["valid"] is False and record["notes"]["notes"] is None
    assert record["notes"]["problem"] == "the top level: 'open_questions' is a required property"
    assert (handoff / "context.md").read_text() == "" and record["context_tokens"] == 0
    assert "SPECSNAP-NOTES" in (handoff / "reply.txt").read_text()


@pytest.mark.slow
def test_under_every_cut_rule_the_successor_is_told_what_session_1_left_on_disk(tmp_path):
    """Claude Code on the replay server cut at its first edit, at its N-th, by turns and by tokens, handed on
    by a trace: every edit the successor's prompt says was made is in session 1's snapshot, every edit it
    says failed is not, and nothing SpecSnap said (the refusals at the cut) is in it."""
    import re
    import tarfile

    from test_pipeline import run_grid

    from sdcs_bench.core.voice import said_by_specsnap
    from sdcs_bench.trial.workload import load_workload

    _board, run = run_grid(tmp_path, "continuity", "cut-trace", workload=["tier_2"], arm=["AGENTS_MD_Only"],
                           agent=["replay_claude_code"], continuation=["trace:4000"],
                           variant=["none", "cut_nth_1", "cut_turns_1", "cut_tokens_1000"])
    trials = sorted(p for p in (run / "trials").iterdir() if (p / "handoff_2" / "context.md").is_file())
    assert len(trials) == 4
    baseline = load_workload("tier_2").baseline_dir
    failed = 0
    for trial in trials:
        context = (trial / "handoff_2" / "context.md").read_text()
        with tarfile.open(trial / "session_1" / "snapshot.tar.gz") as tar:
            on_disk = {m.name.removeprefix("./") for m in tar.getmembers() if m.isfile()}
        edits = [re.match(r"edit (\S+)(?: (\(.*\)))?$", line) for line in context.splitlines() if line.startswith("edit ")]
        assert edits, (trial.name, context)
        for m in edits:
            path, note = m.group(1), m.group(2)
            if note is None:
                assert path in on_disk, (trial.name, path)
            else:  # a failed edit of a file the baseline does not have left no file
                assert note == "(failed: not applied)", (trial.name, note)
                assert path not in on_disk or (baseline / path).is_file(), (trial.name, path)
        assert not said_by_specsnap(context), (trial.name, context)
        failed += "(failed: not applied)" in context
    assert failed == 2  # the turn and token cuts refuse the probe's write: the trace says it failed


def test_a_carried_state_holding_hidden_content_fails_the_leak_check_before_the_harness_starts(tmp_path):
    """Attack (or a bug upstream): the state carried into the next HOME holds the workload's canary
    (the mark of its hidden tests). The leak check scans what was carried, as it scans the sandbox,
    and the session never starts."""
    from harness_support import agent_cfg, scaffold_tier2

    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.base import SandboxLeak
    from sdcs_bench.session.carry import write_state
    from sdcs_bench.session.runner import run_session
    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm
    from sdcs_bench.trial.workload import load_workload

    workload = load_workload("tier_2")
    carry = tmp_path / "carry.tar.gz"
    write_state({".specsnap-policy/c.json": json.dumps({"id": "c", "turns": [workload.canary]}).encode()}, carry)
    workdir = scaffold_tier2(tmp_path / "work" / "sandbox")
    with pytest.raises(SandboxLeak, match="carried HOME file .specsnap-policy/c.json"):
        run_session(trial_id="t", index=2, session=workload.schedule[1], workload=workload,
                    arm=Arm.from_config(config.entity("arm", "AGENTS_MD_Only")), agent_cfg=agent_cfg("ref_oracle"),
                    workdir=workdir, stage_dir=tmp_path / "s2", backend=make_backend("bwrap"), timeout_s=60,
                    continuation={"mode": "resume", "conversation": "c", "resume": True}, carry_in=carry)
    assert not (tmp_path / "s2" / "transcript.jsonl").exists()  # the policy never ran


def test_a_session_whose_predecessor_left_no_state_starts_its_own_conversation(tmp_path):
    """The session before a resume crashed or was stopped before its harness saved anything: there
    is nothing to resume, so the session is not told to resume (a harness asked to resume a missing
    conversation would fail before its first call, again on every retry), and its record says why."""
    from sdcs_bench.pipeline.plan.planner import make_plan
    from sdcs_bench.pipeline.stages import _continuation
    from sdcs_bench.trial.spec import TrialSpec

    plan = make_plan("continuity", ["workload=[tier_2]", "arm=[Vanilla]", "agent=[ref_amnesiac]", "continuation=[resume]"],
                     results=tmp_path / "results")
    trial = TrialSpec.from_dict(plan.trials[0])
    assert trial.session_continuation(1) == {"mode": "resume", "conversation": trial.conversation, "resume": False}
    nothing = _continuation(trial, 2, {"carried": False, "session_id": None})
    assert nothing["resume"] is False and nothing["not_resumed"].startswith("the previous session left no state")
    resumed = _continuation(trial, 2, {"carried": True, "session_id": "0193-abc"})
    assert resumed["resume"] is True and resumed["session_id"] == "0193-abc"


def test_a_mode_per_pair_parses_and_a_bad_one_says_why():
    choice = Continuation.parse("native_or_trace:4000")
    assert (choice.mode, str(choice.fallback), str(choice), choice.id_part) == ("resume", "trace:4000",
                                                                               "native_or_trace:4000",
                                                                               "native_or_trace-4000")
    assert str(choice.resolved(True)) == "resume" and str(choice.resolved(False)) == "trace:4000"
    assert str(Continuation.parse("compact_or_summary").resolved(False)) == "summary"
    for text, message in [("resume_or_resume", "the fallback is the mode itself"),
                          ("native_or_reset", "reset is a grid value of its own"),
                          ("resume_or_trace_or_summary", "one fallback at most"),
                          ("native_or_trace:0", "the trace budget must be a positive number")]:
        with pytest.raises(SpecSnapError, match=message):
            Continuation.parse(text)


def test_a_mode_per_pair_is_resolved_per_trial_and_each_trial_records_what_it_got(tmp_path):
    """native_or_trace:4000 over a grid with a same-harness and a cross-harness pair: the first resumes its
    own conversation, the second (which cannot) gets the trace; each trial file says what it asked for."""
    from sdcs_bench.pipeline.plan.planner import make_plan
    from sdcs_bench.trial.spec import TrialSpec

    plan = make_plan("continuity", ["agent=[replay_claude_code_continue]", "successor=[same,replay_codex]",
                                    "continuation=[native_or_trace:4000]", "workload=[tier_2]", "arm=[Vanilla]",
                                    "seed=[0]"], results=tmp_path, keys=False)
    got = {t["trial_id"]: t["continuation"] for t in plan.trials}
    assert {tid.rsplit("__", 1)[1] for tid in got} == {"native_or_trace-4000"}
    same = next(b for tid, b in got.items() if ".then." not in tid)
    cross = next(b for tid, b in got.items() if ".then." in tid)
    assert (same["name"], same["asked"]) == ("resume", "native_or_trace:4000")
    assert (cross["name"], cross["asked"]) == ("trace:4000", "native_or_trace:4000")
    trial = TrialSpec.from_dict(next(t for t in plan.trials if ".then." in t["trial_id"]), run_dir=tmp_path / plan.run)
    assert str(trial.continuation) == "trace:4000" and not trial.continuation.carries_state
    assert trial.labels()["continuation"] == "trace:4000" and trial.labels()["continuation_asked"] == "native_or_trace:4000"
