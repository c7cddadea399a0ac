"""Normalisers: each harness's own record of a session, read into the one event schema (:mod:`.events`).

Every normaliser reads only files in the session's stage directory, where the adapter left them
(``transcript.jsonl``, the harness's stdout, and ``native/<harness>/...``, its own records copied
out of the private HOME before that was deleted):

| harness | record read | fallback |
|---|---|---|
| claude_code | ``native/claude_code/**/*.jsonl`` (the session transcript; sub-agents' files too) | stdout result (final message only) |
| codex | ``native/codex/**/rollout-*.jsonl`` (one per thread) | the ``--json`` stdout items |
| gemini_cli | ``native/gemini_cli/**/*.jsonl`` (the chat files) | stdout report (final message only) |
| opencode | ``native/opencode/store.jsonl`` (its database's sessions, messages and parts, exported) | the ``--format json`` stdout |
| mini_swe_agent | ``mini.traj.json`` (the trajectory) | none |
| aider | ``native/aider/chat.history.md`` (the chat history) | none |
| reference | ``transcript.jsonl`` (the policy's own action log) | none |

Every byte of these files was written by the agent or by a harness the agent drives, so a record
is read as hostile: a line that is not JSON, is not the expected shape or is longer than
``MAX_LINE`` is skipped and counted; nothing in it is executed or followed.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from sdcs_bench.coherence import shell
from sdcs_bench.coherence.events import Stream, StreamBuilder

MAX_LINE = 16 * 1024 * 1024
MAX_RECORD_BYTES = 256 * 1024 * 1024
NATIVE = "native"

NO_FACTS = "a harness transcript records actions and observations, never which facts an action extracted"
COMMON_NOT_RECORDED = {"fact_extracted": NO_FACTS}


def _src(stage_dir: Path, path: Path, line: int | None) -> dict[str, Any]:
    try:
        rel = path.relative_to(stage_dir).as_posix()
    except ValueError:
        rel = path.name
    return {"record": rel, "line": line}


def _files(stage_dir: Path, pattern: str) -> list[Path]:
    """Regular files (never symlinks) under the stage directory matching ``pattern``, in order."""
    out = []
    for p in sorted(stage_dir.glob(pattern)):
        if p.is_symlink() or not p.is_file() or any(q.is_symlink() for q in p.relative_to(stage_dir).parents
                                                    if str(q) != "."):
            continue
        if p.stat().st_size > MAX_RECORD_BYTES:
            continue
        out.append(p)
    return out


def json_lines(path: Path, b: StreamBuilder) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON object line; anything else is skipped and counted."""
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE:
                b.skip()
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                b.skip()
                continue
            if not isinstance(obj, dict):
                b.skip()
                continue
            yield n, obj


def _json_file(path: Path, b: StreamBuilder) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (ValueError, RecursionError, OSError):
        b.skip()
        return None


def _text(content: Any) -> str:
    """The text of a message's content (a string, or a list of blocks with ``text``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text")) for c in content if isinstance(c, dict) and isinstance(c.get("text"), str))
    return ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _lines_range(offset: Any, limit: Any) -> tuple[int, int] | str:
    off, lim = _int(offset), _int(limit)
    if off is None and lim is None:
        return "all"
    start = max(1, off or 1)
    return (start, start + lim - 1) if lim else (start, start)


# ------------------------------------------------------------------------------------------ Claude Code

CLAUDE_EDIT = {"Write": "create", "Edit": "modify", "MultiEdit": "modify", "NotebookEdit": "modify"}


def claude_code(stage_dir: Path, b: StreamBuilder) -> None:
    files = _files(stage_dir, f"{NATIVE}/claude_code/**/*.jsonl")
    entries = []
    for fi, path in enumerate(files):
        b.stream.records.append(_src(stage_dir, path, None)["record"])
        for n, obj in json_lines(path, b):
            if obj.get("type") in ("assistant", "user"):
                ts = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else ""
                entries.append((ts, fi, n, path, obj))
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    pending: dict[str, tuple] = {}
    order: list[str] = []
    main_text = None
    for ts, _, n, path, obj in entries:
        message = obj.get("message")
        if not isinstance(message, dict):
            b.skip()
            continue
        side = obj.get("isSidechain") is True
        actor = f"subagent:{obj.get('agentId') or path.stem}" if side else "agent"
        content = message.get("content")
        if obj["type"] == "assistant":
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and not side:
                    main_text = block.get("text")
                    b.message(main_text, ts)
                elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    pending[block["id"]] = (block.get("name"), block.get("input"), ts, actor, _src(stage_dir, path, n),
                                            obj.get("cwd"))
                    order.append(block["id"])
        else:
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") in pending:
                    call = pending.pop(block["tool_use_id"])
                    _claude_call(b, *call, result=block, extra=obj.get("toolUseResult"))
    for call_id in order:  # calls that never got a result (the session was stopped)
        if call_id in pending:
            _claude_call(b, *pending.pop(call_id), result=None, extra=None)
    if b.stream.final_message is None:
        result = _stdout_result(stage_dir / "transcript.jsonl", b)
        if result:
            b.message(result)


def _stdout_result(transcript: Path, b: StreamBuilder) -> str | None:
    if not transcript.is_file():
        return None
    for _, obj in json_lines(transcript, b):
        if obj.get("type") == "result" and isinstance(obj.get("result"), str):
            return obj["result"]
    text = transcript.read_text(errors="replace").strip()
    try:
        obj = json.loads(text) if text.startswith("{") and len(text) < MAX_LINE else None
    except ValueError:
        return None
    return obj.get("result") if isinstance(obj, dict) and isinstance(obj.get("result"), str) else None


def _claude_call(b: StreamBuilder, name: Any, args: Any, ts: Any, actor: str, source: dict, cwd: Any, *,
                 result: dict | None, extra: Any) -> None:
    b.step(ts)
    if not isinstance(args, dict):
        b.skip()
        return
    failed = None if result is None else result.get("is_error") is True
    status = None if failed is None else ("error" if failed else "ok")
    output = _text(result.get("content")) if result else None
    if name == "Read":
        b.read(args.get("file_path"), lines=_lines_range(args.get("offset"), args.get("limit")), via="tool", ts=ts,
               actor=actor, source=source)
    elif name in CLAUDE_EDIT:
        path = args.get("file_path") or args.get("notebook_path")
        kind = CLAUDE_EDIT[name]
        if isinstance(extra, dict) and extra.get("type") in ("create", "update"):
            kind = "create" if extra["type"] == "create" else "modify"
        content = args.get("content") if name == "Write" and isinstance(args.get("content"), str) else None
        b.write(path, kind=kind, tool=name, ts=ts, actor=actor, source=source, result=status, content=content)
    elif name == "Bash":
        b.shell(args.get("command"), cwd=b.cwd(cwd), output=output, exit_code=None, ts=ts, actor=actor, source=source,
                tool="Bash", failed=failed)
    elif name == "Grep" and isinstance(args.get("path"), str) and "." in args["path"].rsplit("/", 1)[-1]:
        b.read(args["path"], lines=None, via="tool", ts=ts, actor=actor, source=source)


# ------------------------------------------------------------------------------------------------ Codex

def _codex_command(command: Any) -> str | None:
    """The shell line of a Codex command (``["/bin/bash", "-lc", LINE]`` or ``/bin/bash -lc 'LINE'``)."""
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return command[-1] if len(command) >= 3 and command[-2] in ("-lc", "-c") else " ".join(command)
    if isinstance(command, str):
        try:
            parts = shlex.split(command)
        except ValueError:
            return command
        return parts[-1] if len(parts) >= 3 and parts[-2] in ("-lc", "-c") else command
    return None


def codex(stage_dir: Path, b: StreamBuilder) -> None:
    files = _files(stage_dir, f"{NATIVE}/codex/**/rollout-*.jsonl")
    if not files:
        _codex_stdout(stage_dir, b)
        return
    main_seen = False
    for path in files:
        b.stream.records.append(_src(stage_dir, path, None)["record"])
        actor = "agent"
        called: dict[str, Any] = {}  # call id -> when the model's call was recorded (the tool event's start)
        for n, obj in json_lines(path, b):
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                continue
            if obj.get("type") == "response_item" and isinstance(payload.get("call_id"), str):
                called.setdefault(payload["call_id"], obj.get("timestamp"))
                continue
            if obj.get("type") == "session_meta":
                sub = payload.get("thread_source") not in (None, "user") or main_seen
                actor = f"subagent:{payload.get('id')}" if sub else "agent"
                main_seen = True
                continue
            if obj.get("type") != "event_msg" or payload.get("type") != "item_completed":
                continue
            item = payload.get("item")
            if not isinstance(item, dict):
                b.skip()
                continue
            _codex_item(b, item, obj.get("timestamp"), actor, _src(stage_dir, path, n), style="rollout",
                        began=called.get(item.get("id")) if isinstance(item.get("id"), str) else None)


def _codex_item(b: StreamBuilder, item: dict, ts: Any, actor: str, source: dict, *, style: str,
                began: Any = None) -> None:
    """One completed item (stamped ``ts`` when it completed; a tool call's event begins ``began``,
    when the model's call was recorded, where the rollout has it)."""
    kind = item.get("type")
    if kind in ("AgentMessage", "agent_message"):
        text = item.get("text") if style == "stdout" else _text(item.get("content"))
        if actor == "agent":
            b.message(text)
    elif kind in ("CommandExecution", "command_execution"):
        b.step(began or ts)
        exit_code = _int(item.get("exit_code"))
        b.shell(_codex_command(item.get("command")), cwd=b.cwd(item.get("cwd")), output=item.get("aggregated_output"),
                exit_code=exit_code, ts=ts, actor=actor, source=source, tool="exec_command",
                failed=None if exit_code is None else exit_code != 0)
    elif kind in ("FileChange", "file_change"):
        b.step(began or ts)
        changes = item.get("changes")
        pairs = (list(changes.items()) if isinstance(changes, dict)
                 else [(c.get("path"), c) for c in changes if isinstance(c, dict)] if isinstance(changes, list) else [])
        ok = item.get("status") == "completed"
        for path, change in pairs:
            change = change if isinstance(change, dict) else {}
            verb = change.get("type") or change.get("kind")
            kind_ = {"add": "create", "update": "modify", "delete": "delete"}.get(verb, "modify")
            content = change.get("content") if isinstance(change.get("content"), str) else None
            b.write(path, kind=kind_, tool="apply_patch", ts=ts, actor=actor, source=source,
                    result="ok" if ok else None, content=content)


def _codex_stdout(stage_dir: Path, b: StreamBuilder) -> None:
    transcript = stage_dir / "transcript.jsonl"
    if not transcript.is_file():
        return
    b.stream.records.append("transcript.jsonl")
    for n, obj in json_lines(transcript, b):
        item = obj.get("item")
        if obj.get("type") == "item.completed" and isinstance(item, dict):
            _codex_item(b, item, None, "agent", _src(stage_dir, transcript, n), style="stdout")


# ------------------------------------------------------------------------------------------- Gemini CLI

GEMINI_EXIT = re.compile(r"Exit Code: (-?\d+)")


def gemini_cli(stage_dir: Path, b: StreamBuilder) -> None:
    files = _files(stage_dir, f"{NATIVE}/gemini_cli/**/*.jsonl")
    for path in files:
        b.stream.records.append(_src(stage_dir, path, None)["record"])
        actor = "agent"
        messages: dict[str, tuple[int, dict]] = {}
        order: list[str] = []
        for n, obj in json_lines(path, b):
            if "sessionId" in obj and "kind" in obj and "id" not in obj:
                actor = "agent" if obj.get("kind") in ("main", None) else f"subagent:{obj.get('sessionId')}"
                continue
            mid = obj.get("id")
            if not isinstance(mid, str) or "type" not in obj:
                continue
            if mid not in messages:
                order.append(mid)
            messages[mid] = (n, obj)  # a later line updates the message (its tool calls, their results)
        for mid in order:
            n, msg = messages[mid]
            if msg.get("type") != "gemini":
                continue
            source = _src(stage_dir, path, n)
            if actor == "agent":
                b.message(_text(msg.get("content")), msg.get("timestamp"))
            for call in msg.get("toolCalls") or []:
                if isinstance(call, dict):
                    _gemini_call(b, call, actor, source)
                else:
                    b.skip()
    if b.stream.final_message is None:
        report = stage_dir / "transcript.jsonl"
        if report.is_file():
            text = report.read_text(errors="replace")
            try:
                data = json.loads(text[text.find("{"):]) if "{" in text and len(text) < MAX_LINE else None
            except ValueError:
                data = None
            if isinstance(data, dict):
                b.message(data.get("response"))


def _gemini_output(call: dict) -> str | None:
    for res in call.get("result") or []:
        response = ((res or {}).get("functionResponse") or {}).get("response") if isinstance(res, dict) else None
        if isinstance(response, dict):
            out = response.get("output", response.get("error"))
            if isinstance(out, str):
                return out
    display = call.get("resultDisplay")
    return display if isinstance(display, str) else None


def _gemini_call(b: StreamBuilder, call: dict, actor: str, source: dict) -> None:
    b.step(call.get("timestamp"))
    name, args, ts = call.get("name"), call.get("args"), call.get("timestamp")
    if not isinstance(args, dict):
        b.skip()
        return
    status = call.get("status")
    result = "ok" if status == "success" else ("error" if status in ("error", "cancelled") else None)
    if name == "read_file":
        b.read(args.get("file_path") or args.get("absolute_path"), lines=_lines_range(args.get("offset"),
                                                                                      args.get("limit")),
               via="tool", ts=ts, actor=actor, source=source)
    elif name == "read_many_files":
        for p in args.get("paths") or []:
            b.read(p, via="tool", ts=ts, actor=actor, source=source)
    elif name in ("write_file", "replace", "edit"):
        content = args.get("content") if name == "write_file" and isinstance(args.get("content"), str) else None
        b.write(args.get("file_path"), kind="create" if name == "write_file" else "modify", tool=name, ts=ts,
                actor=actor, source=source, result=result, content=content)
    elif name == "run_shell_command":
        output = _gemini_output(call)
        m = GEMINI_EXIT.search(output or "")
        exit_code = int(m.group(1)) if m else None
        cwd = args.get("dir_path") or args.get("directory")
        b.shell(args.get("command"), cwd=b.cwd(b.workdir + "/" + cwd if isinstance(cwd, str) and not cwd.startswith("/")
                                                else cwd),
                output=output, exit_code=exit_code, ts=ts, actor=actor, source=source, tool=name,
                failed=None if exit_code is None and result is None else (exit_code != 0 if exit_code is not None
                                                                         else result == "error"))


# --------------------------------------------------------------------------------------------- opencode

def opencode(stage_dir: Path, b: StreamBuilder) -> None:
    store = _files(stage_dir, f"{NATIVE}/opencode/store.jsonl")
    if store:
        b.stream.records.append(_src(stage_dir, store[0], None)["record"])
        sessions: dict[str, Any] = {}
        rows = []
        for n, obj in json_lines(store[0], b):
            if obj.get("kind") == "session" and isinstance(obj.get("id"), str):
                sessions[obj["id"]] = obj.get("parent_id")
            elif obj.get("kind") == "part" and isinstance(obj.get("data"), dict):
                t = obj.get("time") if isinstance(obj.get("time"), (int, float)) else 0
                rows.append((t, n, obj))
        rows.sort(key=lambda r: (r[0], r[1]))
        for t, n, row in rows:
            sid = row.get("session_id")
            actor = "agent" if not sessions.get(sid) else f"subagent:{sid}"
            _opencode_part(b, row["data"], t, actor, row.get("role"), _src(stage_dir, store[0], n))
        return
    transcript = stage_dir / "transcript.jsonl"
    if not transcript.is_file():
        return
    b.stream.records.append("transcript.jsonl")
    for n, obj in json_lines(transcript, b):
        part = obj.get("part")
        if obj.get("type") in ("tool_use", "text") and isinstance(part, dict):
            _opencode_part(b, part, obj.get("timestamp"), "agent", "assistant", _src(stage_dir, transcript, n))


def _opencode_part(b: StreamBuilder, part: dict, ts: Any, actor: str, role: Any, source: dict) -> None:
    if part.get("type") == "text":
        if role == "assistant" and actor == "agent" and not part.get("synthetic"):
            b.message(part.get("text"), ts)
        return
    if part.get("type") != "tool":
        return
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    args = state.get("input")
    if not isinstance(args, dict):
        b.skip()
        return
    b.step(ts)
    tool = part.get("tool")
    status = state.get("status")
    result = "ok" if status == "completed" else ("error" if status == "error" else None)
    ts = ((state.get("time") or {}).get("start") if isinstance(state.get("time"), dict) else None) or ts
    if tool == "read":
        b.read(args.get("filePath"), lines=_lines_range(args.get("offset"), args.get("limit")), via="tool", ts=ts,
               actor=actor, source=source)
    elif tool in ("write", "edit", "multiedit"):
        content = args.get("content") if tool == "write" and isinstance(args.get("content"), str) else None
        b.write(args.get("filePath"), kind="create" if tool == "write" else "modify", tool=tool, ts=ts, actor=actor,
                source=source, result=result, content=content)
    elif tool in ("apply_patch", "patch"):
        text = args.get("patchText") or args.get("patch")
        writes = shell.patch_writes(text if isinstance(text, str) else "", b.workdir)
        for w in writes:
            b.write(w.path, kind=w.kind, tool=str(tool), ts=ts, actor=actor, source=source, result=result)
        if not writes:  # an edit call whose input the store never got (opencode was killed mid-call)
            b.write(None, kind="unknown", tool=str(tool), ts=ts, actor=actor, source=source, result=result,
                    known_path=False)
    elif tool == "bash":
        meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        exit_code = _int(meta.get("exit"))
        output = state.get("output") if isinstance(state.get("output"), str) else meta.get("output")
        b.shell(args.get("command"), cwd=b.cwd(args.get("workdir")), output=output if isinstance(output, str) else None,
                exit_code=exit_code, ts=ts, actor=actor, source=source, tool="bash",
                failed=None if exit_code is None and result is None else (exit_code != 0 if exit_code is not None
                                                                         else result == "error"))


# ---------------------------------------------------------------------------------------- mini-swe-agent

def mini_swe_agent(stage_dir: Path, b: StreamBuilder) -> None:
    files = _files(stage_dir, "mini.traj.json")
    if not files:
        return
    b.stream.records.append("mini.traj.json")
    data = _json_file(files[0], b)
    if data is None:
        return  # not JSON (counted once)
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        b.skip()
        return
    results = {}
    cleaved = None  # the command SpecSnap's environment stopped mini after: it ran, though mini marks it not executed
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            results[m["tool_call_id"]] = m
        elif isinstance(m, dict) and m.get("role") == "exit" and isinstance(m.get("extra"), dict):
            found = m["extra"].get("cleaved_command")
            cleaved = found if isinstance(found, dict) else None
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        b.message(_text(m.get("content")))
        extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
        created = (extra.get("response") or {}).get("created") if isinstance(extra.get("response"), dict) else None
        calls = []
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            try:
                args = json.loads(fn.get("arguments")) if isinstance(fn, dict) else None
            except (ValueError, TypeError):
                args = None
            if not isinstance(args, dict):
                b.skip()
                continue
            calls.append((args.get("command"), call.get("id")))
        if not calls:  # the text-based format: the actions mini parsed out of the reply
            calls = [(a.get("command"), a.get("tool_call_id")) for a in extra.get("actions") or [] if isinstance(a, dict)]
        for command, call_id in calls:
            res = results.get(call_id) if isinstance(call_id, str) else None
            rextra = res.get("extra") if isinstance(res, dict) and isinstance(res.get("extra"), dict) else {}
            if rextra.get("exception_info") == "action was not executed":
                if cleaved is None or command != cleaved.get("command"):
                    continue  # mini stopped before running it (after the cleave, or its own submit)
                rextra = {"returncode": cleaved.get("returncode"), "raw_output": cleaved.get("output"),
                          "timestamp": rextra.get("timestamp")}
                cleaved = None
            b.step()
            exit_code = _int(rextra.get("returncode"))
            output = rextra.get("raw_output") if isinstance(rextra.get("raw_output"), str) else None
            b.shell(command, output=output, exit_code=exit_code, ts=rextra.get("timestamp") or created, actor="agent",
                    source={"record": "mini.traj.json", "line": None, "message": i}, tool="bash",
                    failed=None if exit_code is None else exit_code != 0)


# ------------------------------------------------------------------------------------------------ Aider

AIDER_ADDED = re.compile(r"^> Added (.+?) to the chat(?: \(read-only\))?\.?\s*$")
AIDER_ASK = re.compile(r"^> Add file to the chat\? .*?: *(y|n|yes|no)\b", re.IGNORECASE)
AIDER_APPLIED = re.compile(r"^> Applied edit to (.+?)\s*$")
AIDER_CREATE = re.compile(r"^> Create new file\? .*?: *(y|n|yes|no)\b", re.IGNORECASE)
AIDER_CREATED = re.compile(r"^> Creating empty file (.+?)\s*$")
AIDER_RUNNING = re.compile(r"^> Running (.+?)\s*$")
AIDER_OUTPUT = re.compile(r"^\d+ lines? of output$")
AIDER_STARTED = re.compile(r"^# aider chat started at (.+?)\s*$")


def aider(stage_dir: Path, b: StreamBuilder) -> None:
    """Aider's chat history: files added to the chat are reads (whole files), applied edits are
    edits, commands it ran are shell calls. It keeps no per-event time, no command output or exit
    status (test outcomes are unrecoverable), and nothing of sub-agents (it has none)."""
    files = _files(stage_dir, f"{NATIVE}/aider/chat.history.md")
    if not files:
        return
    path = files[0]
    b.stream.records.append(_src(stage_dir, path, None)["record"])
    candidate: str | None = None
    creating: set[str] = set()  # files aider was allowed to create (its edit then writes them)
    reply: list[str] = []
    with path.open("rb") as fh:
        lines = [ln.decode("utf-8", "replace").rstrip("\n") for ln in fh if len(ln) <= MAX_LINE]
    for n, line in enumerate(lines, 1):
        source = _src(stage_dir, path, n)
        clean = line.rstrip()
        if clean.startswith("####") or AIDER_STARTED.match(clean):
            reply = []
            continue
        if not (clean == ">" or clean.startswith("> ")):  # aider's own lines; ">>>>>>> REPLACE" is the model's
            reply.append(line)
            continue
        if clean.startswith("> Tokens:") and any(r.strip() for r in reply):
            b.message("\n".join(reply).strip())  # a model reply: the text just before its token line
        reply = []
        if (m := AIDER_ADDED.match(clean)) and not AIDER_OUTPUT.match(m.group(1)):
            b.step()
            b.read(m.group(1), via="chat", source=source)
        elif m := AIDER_ASK.match(clean):
            if candidate and m.group(1).lower().startswith("y"):
                b.step()
                b.read(candidate, via="chat", source=source)
            candidate = None
        elif m := AIDER_CREATE.match(clean):
            if candidate and m.group(1).lower().startswith("y"):
                creating.add(candidate)
            candidate = None
        elif m := AIDER_CREATED.match(clean):
            b.step()
            b.write(m.group(1), kind="create", tool="aider", source=source, result="ok")
        elif m := AIDER_APPLIED.match(clean):
            b.step()
            b.write(m.group(1), kind="create" if m.group(1) in creating else "modify", tool="aider", source=source,
                    result="ok")
        elif m := AIDER_RUNNING.match(clean):
            b.step()
            b.shell(m.group(1), source=source, tool="aider shell")
        else:
            body = clean[1:].strip()
            candidate = body if body and " " not in body and not body.endswith(":") else None


# ------------------------------------------------------------------------------------ reference policies

def reference(stage_dir: Path, b: StreamBuilder) -> None:
    """A reference policy's own log: one JSON line per action (``agents/reference_policy.py``)."""
    transcript = stage_dir / "transcript.jsonl"
    if not transcript.is_file():
        return
    b.stream.records.append("transcript.jsonl")
    reference_log(((n, obj, _src(stage_dir, transcript, n)) for n, obj in json_lines(transcript, b)), b)


def reference_stream(log: Iterable[dict[str, Any]], *, run_id: str = "closed-form", workdir: str = "/sandbox") -> Stream:
    """The event stream of a reference policy's log given as its lines (the closed forms model a
    session's log and read it through the same normaliser: agents/expectations.py)."""
    b = StreamBuilder(run_id, "reference", workdir)
    reference_log(((n, obj, {"record": "model", "line": n}) for n, obj in enumerate(log, start=1)), b)
    return b.finish(NOT_RECORDED["reference"])


def reference_log(lines: Iterable[tuple[int, dict[str, Any], dict[str, Any]]], b: StreamBuilder) -> None:
    for n, obj, source in lines:
        action, ts = obj.get("action"), obj.get("t")
        if action in ("message", "final_message"):  # a gold-patch policy's / a fact-driven policy's closing turn
            b.message(obj.get("text"))
            continue
        if action in (None, "idle", "blocked", "missing_fact"):  # the closing message says it, for the classifier
            continue
        if action == "committed":  # the outcome of the action before it, not a tool event of its own
            if obj.get("committed"):
                b.committed()
            continue
        b.step(ts)
        if action == "read":
            for f in obj.get("files") or []:
                b.read(f, via="policy", ts=ts, source=source)
            known = obj.get("known") if isinstance(obj.get("known"), dict) else {}
            sources = obj.get("sources") if isinstance(obj.get("sources"), dict) else {}
            texts = obj.get("texts") if isinstance(obj.get("texts"), dict) else {}
            for rid, form in known.items():
                how = sources.get(rid) if isinstance(sources.get(rid), dict) else {}
                b.fact(str(rid), form, acquisition=str(how.get("mode") or "unknown"), from_path=how.get("path"), ts=ts,
                       source=source, text=texts.get(rid))
        elif action in ("implement", "implement_baseline", "write_notes"):
            for f in obj.get("paths") or []:
                b.write(f, kind="modify", tool=f"policy {action}", ts=ts, source=source, result="ok")
            if obj.get("committed"):
                b.committed()
        elif action == "read_file":  # the fact-driven policies (agents/fact_policy.py), one file per action
            if obj.get("exists"):
                b.read(obj.get("path"), via="policy", ts=ts, source=source)
        elif action == "fact":  # where the value came from: its secret's file, the notes or an earlier edit
            where = obj.get("source") if isinstance(obj.get("source"), str) else None
            b.fact(str(obj.get("fact")), None, acquisition="read", from_path=where, ts=ts, source=source)
        elif action == "write_file":
            b.write(obj.get("path"), kind="create" if obj.get("created") else "modify", tool="policy write_file",
                    ts=ts, source=source, result="ok")
        elif action == "commit" and obj.get("committed"):
            b.committed()
        elif action == "revert":
            b.revert(obj.get("paths") or [], restored="HEAD", ts=ts, source=source, tool="policy revert")
        elif action == "diff_check" and obj.get("undone"):
            b.revert(obj["undone"], restored="HEAD plus recorded work", ts=ts, source=source, tool="policy diff_check")
        elif action == "drift_check" and obj.get("repaired"):
            b.revert(obj["repaired"], restored="setup version plus recorded work", ts=ts, source=source,
                     tool="policy hash_check")
        elif action in ("commit_remaining", "commit_repair") and obj.get("committed"):
            b.committed()


NORMALISERS: dict[str, Callable[[Path, StreamBuilder], None]] = {
    "claude_code": claude_code,
    "codex": codex,
    "gemini_cli": gemini_cli,
    "opencode": opencode,
    "mini_swe_agent": mini_swe_agent,
    "aider": aider,
    "reference": reference,
}

NOT_RECORDED: dict[str, dict[str, str]] = {
    **{h: COMMON_NOT_RECORDED for h in NORMALISERS},
    "aider": {**COMMON_NOT_RECORDED,
              "test_feedback": "aider's chat history keeps the commands it ran, never their output or exit status: "
                               "a test run is recorded without a result"},
    "reference": {"fact_extracted": "only what the policy states: the requirements it knows and where it learnt them "
                                    "(no values or spans)"},
}
UNKNOWN_FORMAT = "this harness's record has no known format (the generic command adapter)"


def normalise(harness: str, stage_dir: Path, *, run_id: str, workdir: str | Path,
              agent_written: tuple[str, ...] | list[str] = (), since: float | None = None) -> Stream:
    """The event stream of one session from the records in its stage directory (``since``: when a
    session that resumed a conversation started; what its records hold from before is left out)."""
    b = StreamBuilder(run_id, harness, workdir, agent_written, since=since)
    reader = NORMALISERS.get(harness)
    if reader is None:
        return b.finish({t: UNKNOWN_FORMAT for t in ("file_read", "fact_extracted", "edit_intent", "test_feedback",
                                                     "revert")})
    reader(Path(stage_dir), b)
    return b.finish(NOT_RECORDED[harness])
