"""The event stream (docs/coherence.md, "Event stream"): every harness's own record, read into one
schema, on transcripts recorded from each real CLI's replay runs (tests/fixtures/transcripts), and
hostile records that must neither crash the normaliser nor put a path outside the workspace into
the stream."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from sdcs_bench.coherence import normalise as norm
from sdcs_bench.coherence import shell
from sdcs_bench.coherence.events import EVENT_TYPES, read_events

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
SANDBOX = "/specsnap/sandbox"
HARNESSES = ["claude_code", "codex", "gemini_cli", "opencode", "mini_swe_agent", "aider"]
TOOL_HARNESSES = ["claude_code", "codex", "gemini_cli", "opencode", "mini_swe_agent"]
SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "event.schema.yaml").read_text())


def stream_of(harness: str, session: str, **kw):
    meta = json.loads((FIXTURES / harness / session / "meta.json").read_text())
    return norm.normalise(harness, FIXTURES / harness / session, run_id=f"fixture/{session}", workdir=meta["workdir"],
                          **kw)


def valid(stream) -> None:
    for event in stream.events:
        jsonschema.validate(event.to_dict(), SCHEMA)
    assert [e.event_id for e in stream.events] == list(range(1, len(stream.events) + 1))
    tools = [e.tool_event for e in stream.events]
    assert all(t is not None for t in tools) and tools == sorted(tools)


def edits(stream) -> list[dict]:
    return [e.payload for e in stream.events if e.type == "edit_intent"]


def test_every_real_harness_has_recorded_fixtures_and_a_normaliser():
    for harness in HARNESSES:
        assert harness in norm.NORMALISERS
        for session in ("s1", "s2", "events"):
            assert (FIXTURES / harness / session / "meta.json").is_file(), (harness, session)


@pytest.mark.parametrize("harness", HARNESSES)
def test_the_events_session_of_every_harness_yields_the_same_actions(harness):
    """One scripted scenario, six harness records, one stream: reads, an edit-tool create, a script
    the agent wrote and ran, an in-place sed, the test run, a revert and the closing message."""
    stream = stream_of(harness, "events")
    valid(stream)
    assert stream.skipped == 0 and stream.escaped_count == 0
    reads = {(e.payload["path"], json.dumps(e.payload["lines"])) for e in stream.events if e.type == "file_read"}
    assert ("ledger/journal.py", '"all"') in reads
    ranged = "ledger/journal.py" if harness == "aider" else "ledger/accounts.py"  # aider adds tracked files it sees named
    assert (ranged, "[1, 20]") in reads
    by_path = {}
    for p in edits(stream):
        by_path.setdefault(p["path"], []).append(p)
    periods = by_path["ledger/periods.py"][0]
    assert periods["kind"] == "create"
    # mini-swe-agent has only bash: its create is a heredoc, a script write; the others used their edit tool
    assert periods["via_script"] is (harness == "mini_swe_agent")
    generator = by_path["gen_consts.py"][0]
    assert generator["via_script"] and generator["script"]["kind"] == ("redirect" if harness == "aider" else "heredoc")
    ran = [p for p in edits(stream) if p["script"] and p["script"]["kind"] == "agent_file"]
    assert len(ran) == 1 and ran[0]["script"]["file"] == "gen_consts.py"
    if harness == "aider":  # printf wrote the script: its text is not in the record, so neither is its target
        assert ran[0]["path"] is None and ran[0]["kind"] == "unknown"
    else:  # the heredoc carried the script, which names what it writes
        assert ran[0]["path"] == "ledger/consts.py"
    sed = [p for p in edits(stream) if p["script"] and p["script"]["kind"] == "sed_in_place"]
    assert [p["path"] for p in sed] == ["ledger/consts.py"]
    assert all(p["required_facts"] is None and p["relied_on"] is None for p in edits(stream))
    tests = [e for e in stream.events if e.type == "test_feedback"]
    assert len(tests) == 1 and tests[0].payload["command"].startswith("python -m pytest -q tests")
    assert tests[0].payload["result"] == (None if harness == "aider" else "pass")
    assert "contradicted_intents" in tests[0].unrecoverable
    reverts = [e for e in stream.events if e.type == "revert"]
    assert len(reverts) == 1 and reverts[0].payload["paths"] == ["ledger/balances.py"]
    balances_edit = next(e for e in stream.events if e.type == "edit_intent" and e.payload["path"] == "ledger/balances.py")
    assert reverts[0].payload["reverted_intents"] == [balances_edit.event_id]
    assert reverts[0].payload["new_versions"] == {"ledger/balances.py": 2}  # the restoring write is a version too
    assert "cannot proceed" in stream.final_message and "Please provide the value" in stream.final_message
    assert stream.not_recorded["fact_extracted"]
    assert set(stream.by_type()) == set(EVENT_TYPES)


@pytest.mark.parametrize("harness", HARNESSES)
def test_timestamps_come_from_the_record_or_are_named_unrecoverable(harness):
    stream = stream_of(harness, "events")
    for event in stream.events:
        if harness == "aider":  # the chat history has one time, the session's start
            assert event.timestamp is None and "timestamp" in event.unrecoverable
        else:
            assert event.timestamp and event.timestamp.startswith("20") and "timestamp" not in event.unrecoverable


@pytest.mark.parametrize("harness", HARNESSES)
def test_the_cleaved_first_session_shows_its_edit(harness):
    stream = stream_of(harness, "s1")
    valid(stream)
    written = [p for p in edits(stream)]
    assert written, harness
    if harness == "opencode":
        # killed mid-call: opencode's store holds the apply_patch call but never got its input
        assert written[0]["path"] is None and written[0]["tool"] == "apply_patch"
    elif harness == "aider":
        assert written[0]["path"] == "ledger/balances.py"
    else:
        assert written[0]["path"] == "ledger/specsnap_probe.py" and written[0]["kind"] == "create"
    if harness == "mini_swe_agent":
        # the edit ran in the same shell line as the refused commit: mini marks it "not executed",
        # SpecSnap's environment records that it ran
        assert written[0]["via_script"] and written[0]["script"]["kind"] == "redirect"


@pytest.mark.parametrize("harness", HARNESSES)
def test_the_continuation_reads_what_the_first_session_left(harness):
    stream = stream_of(harness, "s2", agent_written=["ledger/specsnap_probe.py", "ledger/balances.py"])
    valid(stream)
    reads = [e.payload for e in stream.events if e.type == "file_read"]
    target = "ledger/balances.py" if harness in ("codex", "aider") else "ledger/specsnap_probe.py"
    read = next(r for r in reads if r["path"] == target)
    assert read["agent_written"] is True  # written by the trial's earlier session
    assert stream.final_message


def test_opencode_sub_agent_is_its_own_actor():
    stream = stream_of("opencode", "s2")
    store = [json.loads(line) for line in (FIXTURES / "opencode" / "s2" / "native" / "opencode" / "store.jsonl")
             .read_text().splitlines()]
    assert any(row.get("kind") == "session" and row.get("parent_id") for row in store)
    assert all(e.actor == "agent" for e in stream.events)  # the sub-agent only answered; it called no tool


# ------------------------------------------------------------------------------------ hostile records

def _claude_dir(tmp_path: Path, lines: list) -> Path:
    stage = tmp_path / "stage"
    d = stage / "native" / "claude_code" / "proj"
    d.mkdir(parents=True)
    (d / "s.jsonl").write_bytes(b"\n".join(x if isinstance(x, bytes) else json.dumps(x).encode() for x in lines))
    return stage


def _call(i: int, name: str, args: dict, ts: str = "2026-01-01T00:00:00Z") -> list:
    return [
        {"type": "assistant", "timestamp": ts, "message": {"content": [
            {"type": "tool_use", "id": f"t{i}", "name": name, "input": args}]}},
        {"type": "user", "timestamp": ts, "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok", "is_error": False}]}},
    ]


def test_a_forged_and_malformed_transcript_is_read_without_crashing_or_counting_escaped_paths(tmp_path, monkeypatch):
    monkeypatch.setattr(norm, "MAX_LINE", 4096)
    lines = [
        b"{not json at all",
        b"\xff\xfe garbage bytes \x00",
        b"[1, 2, 3]",
        json.dumps({"type": "assistant", "message": "not a mapping"}).encode(),
        b'{"type": "assistant", "message": {"content": [{"type": "text", "text": "' + b"A" * 10000 + b'"}]}}',
        b"[" * 100000,  # nesting that would blow a recursive parser
        *[json.dumps(x).encode() for x in _call(1, "Read", {"file_path": "../../etc/passwd"})],
        *[json.dumps(x).encode() for x in _call(2, "Read", {"file_path": "/etc/shadow"})],
        *[json.dumps(x).encode() for x in _call(3, "Write", {"file_path": f"{SANDBOX}/../outside.py", "content": "x"})],
        *[json.dumps(x).encode() for x in _call(4, "Bash", {"command": "cat ../../etc/passwd ~/.ssh/id_rsa > "
                                                                      "/tmp/loot.py; cat ledger/a.py"})],
        *[json.dumps(x).encode() for x in _call(5, "Write", {"file_path": f"{SANDBOX}/ledger/ok.py", "content": "x"})],
        *[json.dumps(x).encode() for x in _call(6, "Bash", {"command": "$(" * 3000 + "x"})],
        *[json.dumps(x).encode() for x in _call(7, "Read", {"file_path": "ledger/\x00nul.py"})],
        *[json.dumps(x).encode() for x in _call(8, "Read", {"file_path": 12345})],
    ]
    stream = norm.normalise("claude_code", _claude_dir(tmp_path, lines), run_id="t/session_1", workdir=SANDBOX)
    valid(stream)
    paths = [e.payload.get("path") for e in stream.events]
    assert paths == ["ledger/a.py", "ledger/ok.py"], paths
    assert stream.escaped_count == 7  # passwd twice, shadow, outside.py, the ssh key, /tmp/loot.py, the NUL path
    assert stream.skipped >= 5
    assert all(not p.startswith(("/", "..")) for p in paths)


def test_a_record_reached_through_a_link_is_never_read(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text("\n".join(json.dumps(x) for x in _call(1, "Read", {"file_path": f"{SANDBOX}/secret.py"})))
    stage = tmp_path / "stage"
    (stage / "native" / "claude_code").mkdir(parents=True)
    os.symlink(outside, stage / "native" / "claude_code" / "linked.jsonl")
    os.symlink(tmp_path, stage / "native" / "claude_code" / "dir")
    stream = norm.normalise("claude_code", stage, run_id="t", workdir=SANDBOX)
    assert stream.events == [] and stream.records == []


def test_a_link_in_the_private_home_is_never_copied_out(tmp_path):
    """The adapter copies its harness's records out of the HOME the agent could write: a planted
    link to a file of the machine stays behind."""
    from sdcs_bench.agents.helpers import copy_records

    home, dest = tmp_path / "home", tmp_path / "dest"
    (home / ".claude" / "projects" / "p").mkdir(parents=True)
    (home / ".claude" / "projects" / "p" / "real.jsonl").write_text("{}\n")
    secret = tmp_path / "host-secret.txt"
    secret.write_text("do not copy")
    os.symlink(secret, home / ".claude" / "projects" / "p" / "planted.jsonl")
    os.symlink(tmp_path, home / ".claude" / "projects" / "linkdir")
    kept = copy_records(home, ".claude/projects", "**/*.jsonl", dest)
    assert [p.relative_to(dest).as_posix() for p in kept] == ["p/real.jsonl"]
    linked_home = tmp_path / "home2"
    (linked_home / ".claude").mkdir(parents=True)
    os.symlink(home / ".claude" / "projects", linked_home / ".claude" / "projects")
    assert copy_records(linked_home, ".claude/projects", "**/*.jsonl", tmp_path / "dest2") == []


def test_an_unknown_harness_record_names_every_type_unrecoverable(tmp_path):
    stream = norm.normalise("command", tmp_path, run_id="t", workdir=SANDBOX)
    assert stream.events == [] and set(stream.not_recorded) == set(EVENT_TYPES)


# ------------------------------------------------------------------------------------ shell lines

@pytest.mark.parametrize("line, expected", [
    ("cat > a.py <<'EOF'\nX = 1\nEOF", [("write", "a.py", "heredoc")]),
    ("echo x >> notes.md && tee -a b.py < in.txt", [("write", "notes.md", "redirect"), ("write", "b.py", "tee"),
                                                   ("read", "in.txt", None)]),
    ("sed -i.bak -e 's/a/b/' x.py y.py", [("write", "x.py", "sed_in_place"), ("write", "y.py", "sed_in_place")]),
    ("cd pkg && cp a.py b.py", [("read", "pkg/a.py", None), ("write", "pkg/b.py", "copy")]),
    ("git restore --staged a.py", []),
    ("git restore a.py && git stash", [("revert", ("a.py",), "index"), ("revert", None, "HEAD")]),
    ("ls | grep -n foo src/m.py", [("read", "src/m.py", None)]),
    ("python3 -m pytest -q 2>&1 | tail -5", [("test",)]),
    ("python - <<'EOF'\nopen('gen.py', 'w').write('1')\nEOF", [("inline",)]),
])
def test_shell_lines(line, expected):
    got = []
    for act in shell.analyse(line, "."):
        if isinstance(act, shell.Write):
            got.append(("write", act.path, act.script))
        elif isinstance(act, shell.Read):
            got.append(("read", act.path, None))
        elif isinstance(act, shell.Revert):
            got.append(("revert", act.paths, act.restored))
        elif isinstance(act, shell.Test):
            got.append(("test",))
        elif isinstance(act, shell.Inline):
            got.append(("inline",))
    assert got == expected


def test_test_verdicts_come_from_the_summary_before_the_exit_status():
    assert shell.test_verdict("=== 3 passed in 0.1s ===", 1) == "pass"  # piped through tail: the exit is tail's
    assert shell.test_verdict("1 failed, 2 passed", 0) == "fail"
    assert shell.test_verdict("", 2) == "fail" and shell.test_verdict(None, None) is None


def test_written_events_read_back(tmp_path):
    stream = stream_of("codex", "events")
    (tmp_path / "events.jsonl").write_text(stream.jsonl())
    assert [e.to_dict() for e in read_events(tmp_path / "events.jsonl")] == [e.to_dict() for e in stream.events]


GARBAGE = [b"{broken", b"\x00\xff\xfe", b'"a string"', b"[" * 50000]
ESCAPING = {
    "codex": ("native/codex/rollout-x.jsonl", [{"type": "event_msg", "payload": {"type": "item_completed", "item": {
        "type": "CommandExecution", "command": ["/bin/bash", "-lc", "cat ../../etc/passwd ledger/a.py"],
        "exit_code": 0}}}]),
    "gemini_cli": ("native/gemini_cli/p/chats/c.jsonl", [{"id": "m1", "type": "gemini", "content": "x", "toolCalls": [
        {"name": "read_file", "args": {"file_path": "/etc/passwd"}},
        {"name": "read_file", "args": {"file_path": f"{SANDBOX}/ledger/a.py"}}]}]),
    "opencode": ("native/opencode/store.jsonl", [
        {"kind": "part", "session_id": "s", "role": "assistant", "time": t, "data": {
            "type": "tool", "tool": "read", "state": {"status": "completed", "input": {"filePath": p}}}}
        for t, p in ((1, "../../etc/passwd"), (2, f"{SANDBOX}/ledger/a.py"))]),
    "reference": ("transcript.jsonl", [{"action": "read", "files": ["../../etc/passwd", "ledger/a.py"], "known": {}}]),
}


@pytest.mark.parametrize("harness", sorted(ESCAPING))
def test_every_normaliser_survives_garbage_and_drops_escaping_paths(tmp_path, harness):
    rel, entries = ESCAPING[harness]
    record = tmp_path / rel
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_bytes(b"\n".join([*GARBAGE, *(json.dumps(e).encode() for e in entries), *GARBAGE]))
    stream = norm.normalise(harness, tmp_path, run_id="t", workdir=SANDBOX)
    valid(stream)
    assert [e.payload["path"] for e in stream.events] == ["ledger/a.py"]
    assert stream.escaped_count == 1 and stream.skipped >= len(GARBAGE)


def test_mini_and_aider_records_survive_garbage(tmp_path):
    (tmp_path / "mini.traj.json").write_bytes(b'{"messages": [' + b"[" * 100000)
    assert norm.normalise("mini_swe_agent", tmp_path, run_id="t", workdir=SANDBOX).skipped == 1
    traj = {"messages": [
        {"role": "assistant", "content": "x", "tool_calls": [
            {"id": "c1", "function": {"arguments": json.dumps({"command": "cat ../../etc/passwd ledger/a.py"})}},
            {"id": "c2", "function": {"arguments": "{not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "extra": {"returncode": 0, "raw_output": "x"}}, "not a message"]}
    (tmp_path / "mini.traj.json").write_text(json.dumps(traj))
    stream = norm.normalise("mini_swe_agent", tmp_path, run_id="t", workdir=SANDBOX)
    assert [e.payload["path"] for e in stream.events] == ["ledger/a.py"] and stream.escaped_count == 1
    history = tmp_path / "native" / "aider" / "chat.history.md"
    history.parent.mkdir(parents=True)
    history.write_bytes(b"\xff\xfe\x00garbage\n> Added ../../etc/passwd to the chat.\n> Added ledger/a.py to the chat.\n"
                        b"> Applied edit to /etc/cron.d/x\n" + b"A" * 100000 + b"\n")
    stream = norm.normalise("aider", tmp_path, run_id="t", workdir=SANDBOX)
    assert [e.payload["path"] for e in stream.events] == ["ledger/a.py"] and stream.escaped_count == 2
