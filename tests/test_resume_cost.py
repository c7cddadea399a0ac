"""The cost of resuming (docs/scoring.md): what each continuation session spent before its first
useful edit, measured from the watcher's record of its writes, the proxy's (or the meter's) calls
and the normalised event stream, and decided from the final tree; for the reference policies equal
to their closed forms."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from sdcs_bench.coherence.events import Event
from sdcs_bench.coherence.resume import WrittenFile, line_set, resume_report, summary, write_costs
from sdcs_bench.session.cleave import CleaveController
from sdcs_bench.trial.workload_model import CleaveRule


def _event(n: int, type_: str, path: str | None, t: float, tool_event: int | None = None) -> Event:
    from sdcs_bench.coherence.events import iso_time

    return Event("t/session_2", n, iso_time(t), "agent", type_, tool_event, {"path": path} if path else {}, [], {})


def test_a_write_records_only_the_lines_it_added_to_what_the_file_held_before():
    written = WrittenFile({"a.py": b"x = 1\n\ny = 2\n", "big.py": None})
    written.wrote("a.py", b"x = 1\ny = 2\n  z = 3\n\n", 100.0)  # adds z (stripped), not blank lines
    written.wrote("a.py", b"x = 1\ny = 2\nz = 3\n", 101.0)  # adds nothing: not recorded
    written.wrote("b.py", b"def f():\n    return 1\n", 102.0)  # a new file: every line is added
    written.wrote("big.py", b"trimmed = 1\n", 103.0)  # what it held before is unknown: nothing is added
    written.wrote("b.py", None, 104.0)  # now unreadable (a link, too large)...
    written.wrote("b.py", b"def f():\n    return 2\n", 105.0)  # ...so the next write adds nothing known
    assert [(w["path"], w["added"]) for w in written.writes] == [
        ("a.py", sorted(line_set(b"z = 3"))), ("b.py", sorted(line_set(b"def f():\nreturn 1")))]
    assert line_set(b" a \n\n\tb\n") == line_set(b"a\nb") and len(line_set(b"a\nb")) == 2
    assert "z = 3" not in json.dumps(written.record())  # digests, never the agent's text


def test_each_write_is_put_on_the_session_s_clock():
    written = {"writes": [{"path": "a.py", "at": 10.0, "added": ["z"], "added_count": 1},
                          {"path": "b.py", "at": 20.0, "added": ["w"], "added_count": 1}]}
    calls = {"per_call": [100, 50, 7], "at": [5.0, 15.0, 25.0], "by": "proxy"}
    events = [_event(1, "file_read", "notes.md", 4.0, 1), _event(2, "file_read", "other.md", 12.0, 2),
              _event(3, "edit_intent", "a.py", 9.0, 3)]
    costs = write_costs(written, calls=calls, events=events, started=2.0, prior=["notes.md", "b.py", "c.py"],
                        tool_event_times=[e.timestamp for e in events])
    first, second = costs["writes"]
    assert (first["calls"], first["tokens"], first["tool_events"], first["reread"], first["wall_s"]) == \
        (1, 100, 2, ["notes.md"], 8.0)
    assert (second["calls"], second["tokens"], second["tool_events"]) == (2, 150, 3)
    assert costs["prior_files"] == 3 and costs["unplaced"] == {}


def test_what_the_records_cannot_place_in_time_is_left_empty_and_said():
    written = {"writes": [{"path": "a.py", "at": 10.0, "added": ["z"], "added_count": 1}]}
    costs = write_costs(written, calls={"per_call": [3], "at": [None], "by": "meter"}, events=[], started=0.0,
                        prior=[], tool_event_times=[None])
    row = costs["writes"][0]
    assert "calls" not in row and "tool_events" not in row
    assert set(costs["unplaced"]) == {"calls", "tool_events"}


def test_the_first_useful_edit_is_the_first_write_whose_added_lines_all_survive():
    session = {"session": "S2", "index": 2, "agent": "a", "resume": {
        "writes": [{"path": "a.py", "at": 1, "added": ["gone", "kept"], "calls": 1, "tokens": 10, "tool_events": 1,
                    "wall_s": 0.5, "reread": []},
                   {"path": "a.py", "at": 2, "added": ["kept"], "calls": 2, "tokens": 30, "tool_events": 2,
                    "wall_s": 0.9, "reread": ["notes.md"]},
                   {"path": "b.py", "at": 3, "added": ["b"], "calls": 3, "tokens": 60, "tool_events": 3, "wall_s": 1.0,
                    "reread": ["notes.md"]}],
        "prior_files": 2, "by": "proxy", "unplaced": {}, "dropped": 0, "failed": None}}
    final = {"a.py": {"kept", "other"}, "b.py": {"b"}}
    session["resume"]["writes"].reverse()  # recorded out of order (timer threads): the earliest is first
    report = resume_report([session], final.get)
    row = report["sessions"][0]
    assert (row["reached"], row["path"], row["calls"], row["tokens"], row["tool_events"]) == (True, "a.py", 2, 30, 2)
    assert row["reread_share"] == 0.5 and row["complete"] is True
    assert resume_report([session], {}.get)["sessions"][0]["reached"] is False  # every file gone at the end
    assert report["reached_share"] == 1.0 and report["tokens"] == 30
    assert summary([])["reached_share"] is None
    # a session whose record is incomplete (its watcher failed) is left out of the trial's figures
    assert summary([{**row, "complete": False}])["reached_share"] is None


def _repo(tmp_path: Path) -> Path:
    (tmp_path / ".git" / "specsnap").mkdir(parents=True)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    return tmp_path


def test_a_session_with_no_cut_rule_records_its_writes_and_fires_nothing(tmp_path):
    repo = _repo(tmp_path)
    controller = CleaveController(repo, CleaveRule.parse("none"), exempt=["state.md"], record_writes={
        "pkg/a.py": b"x = 1\n"})
    controller.start()
    try:
        (repo / "pkg" / "a.py").write_text("x = 1\ny = 2\n")
        (repo / "state.md").write_text("notes\n")  # a memory file: not a source file
        (repo / "pkg" / "b.py").write_text("z = 3\n")
        time.sleep(0.3)
    finally:
        controller.stop()
    assert not controller.fired.is_set() and controller.refusal() is None
    assert [(w["path"], w["added"]) for w in controller.written.writes] == [("pkg/a.py", sorted(line_set(b"y = 2"))),
                                                                            ("pkg/b.py", sorted(line_set(b"z = 3")))]


def test_a_watcher_that_fails_in_a_session_with_no_cut_marks_the_record_and_cleaves_nothing(tmp_path):
    repo = _repo(tmp_path)
    controller = CleaveController(repo, CleaveRule.parse("none"), exempt=[], record_writes={})
    controller.start()
    controller.fail("inotify's queue overflowed: events were lost")
    controller.stop()
    assert not controller.fired.is_set() and controller.written.record()["failed"].startswith("inotify")


def test_a_link_the_agent_plants_is_never_followed_when_its_write_is_recorded(tmp_path):
    """Attack: a continuation agent replaces a source file by a link to a host file, hoping the
    recorder reads (and the scorecard then carries) the host file's lines."""
    repo = _repo(tmp_path)
    secret = tmp_path.parent / f"{tmp_path.name}-host-secret.txt"
    secret.write_text("HOST SECRET LINE\n")
    controller = CleaveController(repo, CleaveRule.parse("none"), exempt=[], record_writes={})
    controller.start()
    try:
        os.symlink(secret, repo / "pkg" / "c.py")
        (repo / "pkg" / "d.py").write_text("ok = True\n")
        time.sleep(0.3)
    finally:
        controller.stop()
    record = json.dumps(controller.written.record())
    assert "HOST SECRET" not in record and '"pkg/d.py"' in record


# -- real harnesses on the replay server ---------------------------------------------------------------
RESUMING = {
    # S2: a reply that reads S1's probe, one that writes a new module (the first useful edit), one
    # that commits, and the closing one. (One tool call per reply: parallel calls may run in any order.)
    "replay_claude_code": [
        {"text": "Reading the probe.", "tool_calls": [
            {"name": "Read", "arguments": {"file_path": "{workdir}/ledger/specsnap_probe.py"}}],
         "usage": {"uncached_input": 4000, "cache_read": 0, "cache_write": 9000, "output": 120}},
        {"text": "Adding the module.", "tool_calls": [
            {"name": "Write", "arguments": {"file_path": "{workdir}/ledger/resumed.py",
                                            "content": "RESUMED = True\n\ndef resumed():\n    return RESUMED\n"}}],
         "usage": {"uncached_input": 500, "cache_read": 9000, "cache_write": 700, "output": 90}},
        {"text": "Committing.", "tool_calls": [
            {"name": "Bash", "arguments": {"command": "git add -A && git commit -m finish", "description": "Commit"}}],
         "usage": {"uncached_input": 300, "cache_read": 9700, "cache_write": 500, "output": 60}},
        {"text": "Done.", "usage": {"uncached_input": 200, "cache_read": 10200, "cache_write": 100, "output": 20}},
    ],
    "replay_codex": [
        {"text": "Reading the probe.", "tool_calls": [
            {"name": "exec_command", "arguments": {"cmd": "cat ledger/specsnap_probe.py"}}],
         "usage": {"uncached_input": 9000, "cache_read": 1024, "output": 150, "reasoning": 64}},
        {"text": "Adding the module.", "tool_calls": [
            {"name": "exec_command", "arguments": {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: "
                                                          "ledger/resumed.py\n+RESUMED = True\n+\n+def resumed():\n"
                                                          "+    return RESUMED\n*** End Patch\nEOF"}}],
         "usage": {"uncached_input": 800, "cache_read": 10024, "output": 110, "reasoning": 32}},
        {"text": "Committing.", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "git add -A && git commit -m finish"}}],
         "usage": {"uncached_input": 600, "cache_read": 10900, "output": 70, "reasoning": 16}},
        {"text": "Done.", "usage": {"uncached_input": 300, "cache_read": 11500, "output": 30, "reasoning": 8}},
    ],
}


@pytest.mark.parametrize("agent", sorted(RESUMING))
def test_a_real_harness_s_cost_of_resuming_is_read_from_its_own_records(tmp_path, agent):
    """S1 (the harness's replay script) is cut at its probe; S2 reads the probe, then writes a new
    module: that write is the first useful edit, after two answered calls (their tokens), two tool
    events, and a re-read of S1's file."""
    from harness_support import agent_cfg, run_replay_session, scaffold_tier2

    from sdcs_bench.coherence.session import analyse_session, workspace_state
    from sdcs_bench.core.tokens import TokenUsage
    from sdcs_bench.proxy import ReplayScript
    from sdcs_bench.trial.workload import load_workload
    from conftest import ROOT

    workdir = scaffold_tier2(tmp_path / "repo")
    start = workspace_state(workdir)
    s1 = run_replay_session(agent, workdir, tmp_path / "s1", 1)
    assert s1.record["status"] == "cleaved"
    first = analyse_session(harness=s1.record["harness"], stage_dir=tmp_path / "s1", run_id="t/session_1",
                            workdir=workdir.resolve(), before=start, after=workspace_state(workdir),
                            facts=_no_facts(), status="cleaved")
    assert "ledger/specsnap_probe.py" in first["files_seen"]
    script = ReplayScript.load(ROOT / agent_cfg(agent)["replay_script"])
    cfg = {**agent_cfg(agent), "replay_script_data": {"model": script.model, "sessions": {2: RESUMING[agent]}}}
    before = workspace_state(workdir)
    s2 = run_replay_session(cfg, workdir, tmp_path / "s2", 2, timeout_s=180)
    assert s2.record["status"] == "ok", s2.record
    out = analyse_session(harness=s2.record["harness"], stage_dir=tmp_path / "s2", run_id="t/session_2",
                          workdir=workdir.resolve(), before=before, after=workspace_state(workdir), facts=_no_facts(),
                          status="ok", import_roots=(load_workload("tier_2").import_root,),
                          files_seen=first["files_seen"],
                          resume={"written": s2.record["written"], "calls": s2.record["cleave"]["counted"],
                                  "started": s2.record["started_at"]})
    session = {"session": "S2", "index": 2, "agent": agent, "resume": out["resume"]}
    row = resume_report([session], lambda rel: line_set((workdir / rel).read_bytes())
                        if (workdir / rel).is_file() else None)["sessions"][0]
    usage = sum((TokenUsage.from_dict({**r["usage"], "source": "proxy"}) for r in RESUMING[agent][:2]),
                TokenUsage(source="proxy"))
    assert (row["reached"], row["path"], row["calls"], row["tokens"]) == (True, "ledger/resumed.py", 2, usage.total), row
    assert row["tool_events"] == 2 and row["reread"] == ["ledger/specsnap_probe.py"], (row, out["resume"])
    assert 0 < row["wall_s"] < s2.record["wall_s"] and row["complete"] is True


def _no_facts():
    from sdcs_bench.coherence.session import WorkloadFacts

    return WorkloadFacts()


def test_a_fifo_or_a_huge_file_named_like_a_source_file_neither_blocks_nor_bloats_the_record(tmp_path):
    """Attack: a continuation agent plants a FIFO named ``x.py`` (a reader that opens it blocks) and
    writes a file larger than anything is read; the recorder reads neither and records nothing of
    them, and the session's end is not held up."""
    repo = _repo(tmp_path)
    controller = CleaveController(repo, CleaveRule.parse("none"), exempt=[], record_writes={})
    controller.start()
    try:
        os.mkfifo(repo / "pkg" / "pipe.py")
        (repo / "pkg" / "huge.py").write_bytes(b"x = 1\n" * ((5 << 20) // 6))  # past the 4 MiB it reads
        (repo / "pkg" / "small.py").write_text("y = 2\n")
        time.sleep(0.5)
    finally:
        t0 = time.monotonic()
        controller.stop()
    assert time.monotonic() - t0 < 15
    assert [w["path"] for w in controller.written.writes] == ["pkg/small.py"]


def test_a_write_is_timed_when_it_was_made_and_an_mtime_set_far_back_is_not_believed(tmp_path):
    """A write is placed when it was made (the watcher's first event, or the file's mtime plus a
    clock tick when that is earlier); an agent that sets the mtime an hour back, to make its edit
    look earlier than its calls, gains nothing."""
    repo = _repo(tmp_path)
    controller = CleaveController(repo, CleaveRule.parse("none"), exempt=[], record_writes={})
    controller.start()
    try:
        t0 = time.time()
        forged = repo / "pkg" / "forged.py"
        with forged.open("w") as fh:
            fh.write("b = 2\n")
            fh.flush()
            os.utime(fh.fileno(), (t0 - 3600, t0 - 3600))  # set before the close the watcher counts
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        controller.stop()
    (write,) = controller.written.writes
    assert t0 <= write["at"] < t0 + 0.05  # its first event (not its close), and not its forged mtime


def test_meter_files_an_earlier_session_left_or_garbled_ones_never_crash_or_count(tmp_path):
    """Attack: an earlier session (or a process that escaped it) leaves ``meter.*`` entries in the
    control directory: a directory, a file with an absurd time, one too large to read. A reference
    policy's continuation must neither crash at its end nor count them as its own steps."""
    repo = _repo(tmp_path)
    control = repo / ".git" / "specsnap"
    (control / "meter.1.1").mkdir()
    (control / "meter.1.2").write_text(json.dumps({"step": "read", "texts": ["x"]}))
    controller = CleaveController(repo, CleaveRule.parse("none"), exempt=[], meter_files=True, record_writes={})
    controller.start()
    try:
        (control / "meter.2.1").write_text('{"step": "read", "texts": ["hello"], "t": 1e400}')  # this session's
        (control / "meter.2.2").mkdir()  # garbled: a directory under a meter's name
        time.sleep(0.2)
    finally:
        controller.stop()
    assert controller.calls == 1 and controller.call_times == [None]  # its own step; an infinite time is no time
    assert len(controller.unreadable_meters) == 1 and not controller.fired.is_set() and not controller.errors
