"""Structured handoff notes and who writes a handoff (docs/protocol.md#structured-notes,
#who-writes-a-handoff): the schema a writer's reply must keep, what is rendered into the next
prompt, a session's own conversation as a writer reads it, and the run's ``handoff`` settings."""

from __future__ import annotations

import json

import pytest

from sdcs_bench.coherence.conversation import PART_CHARS, conversation_lines, events_after, read_conversation
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial import notes

GOOD = {"schema": notes.VERSION, "goal": "Ship R-1 and R-2.", "done": ["wrote a.py"],
        "in_progress": [{"task": "R-2's parser", "files": ["b.py", "c.py"]}],
        "next_steps": ["R-2: parse dates as ISO 8601"], "open_questions": ["Is UTC assumed?"]}


def test_valid_notes_are_rendered_field_by_field_in_the_schema_s_order():
    parsed, problem = notes.parse(json.dumps(GOOD))
    assert problem is None and parsed == GOOD
    assert notes.render(parsed) == ("Goal: Ship R-1 and R-2.\n\nDone:\n- wrote a.py\n\nIn progress:\n"
                                    "- R-2's parser (files: b.py, c.py)\n\nNext steps:\n- R-2: parse dates as ISO 8601\n\n"
                                    "Open questions:\n- Is UTC assumed?")
    # a fenced reply is accepted as the same object; an empty list leaves its heading out
    fenced, _ = notes.parse("```json\n" + json.dumps({**GOOD, "done": []}) + "\n```")
    assert fenced is not None and "Done:" not in notes.render(fenced)


@pytest.mark.parametrize(("reply", "problem"), [
    ("", "the reply is empty"),
    ("Here are my notes: {}", "not one JSON object"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "next_steps"}), "'next_steps' is a required property"),
    (json.dumps({**GOOD, "extra": 1}), "Additional properties are not allowed"),
    (json.dumps({**GOOD, "schema": "specsnap-notes/0"}), "schema: must be 'specsnap-notes/1'"),
    (json.dumps({**GOOD, "done": "everything"}), "done: must be of type 'array'"),
    (json.dumps({**GOOD, "in_progress": [{"task": "x"}]}), "in_progress/0: 'files' is a required property"),
    (json.dumps({**GOOD, "next_steps": ["x" * 2001]}), "next_steps/0: is longer than 2000 characters"),
    (json.dumps({**GOOD, "open_questions": ["q"] * 51}), "open_questions: has more than 50 items"),
    (json.dumps([GOOD]), "the top level: must be of type 'object'"),
    ("[" * 100_000, "not one JSON object"),  # nested past the parser's depth
    ("x" * (notes.MAX_REPLY_CHARS + 1), "longer than"),
])
def test_a_reply_that_breaks_the_schema_carries_nothing_and_says_why_in_one_line(reply, problem):
    parsed, why = notes.parse(reply)
    assert parsed is None and problem in why and "\n" not in why


# -- a session's own conversation, as a writer reads it ---------------------------------------------
ANTHROPIC = {"system": "HARNESS SYSTEM PROMPT", "tools": [{"name": "Write"}], "messages": [
    {"role": "user", "content": [{"type": "text", "text": "Implement R-1."}]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hidden"}, {"type": "text", "text": "On it."},
                                      {"type": "tool_use", "name": "Write", "input": {"file_path": "a.py"}}]},
    {"role": "user", "content": [{"type": "tool_result", "content": [{"type": "text", "text": "written"}]}]},
    {"role": "user", "content": "API Error: 403 specsnap: this session was cleaved; no further model calls are allowed"},
]}
CHAT = {"messages": [{"role": "system", "content": "HARNESS SYSTEM PROMPT"}, {"role": "user", "content": "Implement R-1."},
                     {"role": "assistant", "content": "On it.", "tool_calls": [
                         {"function": {"name": "write", "arguments": "{\"path\": \"a.py\"}"}}]},
                     {"role": "tool", "content": "written"}]}
RESPONSES = {"instructions": "HARNESS SYSTEM PROMPT", "input": [
    {"type": "message", "role": "developer", "content": "HARNESS SYSTEM PROMPT"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Implement R-1."}]},
    {"type": "reasoning", "summary": []},
    {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\": \"apply_patch a.py\"}"},
    {"type": "function_call_output", "output": "written"}]}
GEMINI = {"systemInstruction": {"parts": [{"text": "HARNESS SYSTEM PROMPT"}]}, "contents": [
    {"role": "user", "parts": [{"text": "Implement R-1."}]},
    {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"functionCall": {"name": "write_file",
                                                                                       "args": {"file_path": "a.py"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {"output": "written"}}}]}]}


@pytest.mark.parametrize(("request_body", "call"), [
    (ANTHROPIC, "assistant called Write"), (CHAT, "assistant called write"),
    (RESPONSES, "assistant called exec_command"), (GEMINI, "assistant called write_file")])
def test_each_wire_s_conversation_is_read_as_its_turns_without_the_harness_s_own_prompt(request_body, call):
    lines = conversation_lines(request_body, final_message="Stopped.")
    text = "\n".join(lines)
    assert lines[0] == "user: Implement R-1."
    assert any(line.startswith(call + ": ") and "a.py" in line for line in lines), lines
    assert "tool result: " in text and "written" in text
    assert lines[-1] == "assistant (last message): Stopped."
    assert "HARNESS SYSTEM PROMPT" not in text and "hidden" not in text and "thinking" not in text
    assert "specsnap: " not in text  # what SpecSnap said never crosses


def test_a_hostile_conversation_is_read_bounded_and_an_unreadable_one_is_none(tmp_path):
    huge = {"messages": [{"role": "user", "content": "x" * 1_000_000}] * 3 + [{"role": 7, "content": {"a": [1]}}, "junk"]}
    lines = conversation_lines(huge)
    assert len(lines) == 4 and all(len(line) <= PART_CHARS + 40 for line in lines)
    assert conversation_lines("not a request") == [] and conversation_lines({"input": 5}) == []
    assert read_conversation(tmp_path) == (None, None)  # none kept
    (tmp_path / "conversation.json").write_text("{not json")
    assert read_conversation(tmp_path) == (None, None)
    (tmp_path / "conversation.json").write_text(json.dumps({"at": 100.5, "request": CHAT}))
    assert read_conversation(tmp_path) == (CHAT, 100.5)


def test_what_the_last_reply_did_follows_the_request_s_turns():
    events = [{"timestamp": "1970-01-01T00:01:39Z", "type": "file_read"}, {"timestamp": "1970-01-01T00:01:41Z"},
              {"timestamp": "not a time"}, {}]
    assert events_after(events, 100.0) == [events[1]] and events_after(events, None) == []
    lines = conversation_lines(CHAT, "Stopped.", ["edit a.py"])
    assert lines[-2:] == ["assistant then: edit a.py", "assistant (last message): Stopped."]


# -- the run's handoff settings, refused before any work ---------------------------------------------
@pytest.mark.parametrize(("override", "message"), [
    ("handoff.source=memory", "handoff.source is 'memory'"),
    ("handoff.writer=nobody", "handoff.writer is 'nobody'"),
    ("handoff.writer=ref_oracle", "handoff.writer is 'ref_oracle', a reference policy"),
    ("+handoff.model=x", "unknown handoff setting 'model'"),
    ("handoff.writer=replay_claude_code", "replay script of the run's handoff.writer 'replay_claude_code'"),
])
def test_a_bad_handoff_setting_is_one_line_naming_the_choices(tmp_path, override, message):
    from sdcs_bench.pipeline.plan.planner import make_plan

    with pytest.raises(SpecSnapError) as err:
        make_plan("continuity", [override, "workload=[tier_2]", "arm=[Vanilla]", "agent=[replay_claude_code_continue]",
                                 "continuation=[summary]"], tmp_path)
    assert message in str(err.value)
    assert "\n" not in str(err.value).split("; valid choices")[0] or "valid choices" in str(err.value)


def test_the_writer_and_source_are_carried_by_the_trial_file_only_where_they_are_not_the_default(tmp_path):
    from sdcs_bench.pipeline.plan.planner import make_plan

    base = ["workload=[tier_2]", "arm=[Vanilla]", "agent=[replay_claude_code_continue]",
            "continuation=[summary,notes,trace:1000]"]
    default = {t["continuation"]["mode"]: t["continuation"] for t in make_plan("continuity", base, tmp_path).trials}
    assert not any("writer" in b or "source" in b for b in default.values())
    assert default["notes"]["notes_prompt"]["schema"] == notes.VERSION
    named = {t["continuation"]["mode"]: t["continuation"] for t in make_plan(
        "continuity", [*base, "handoff.writer=replay_codex_continue", "handoff.source=conversation"], tmp_path).trials}
    for mode in ("summary", "notes"):
        assert named[mode]["writer"]["name"] == "replay_codex_continue" and named[mode]["source"] == "conversation"
    assert "writer" not in named["trace"] and "source" not in named["trace"]


def test_the_estimate_counts_each_handoff_call_for_its_writer(tmp_path):
    from sdcs_bench.pipeline.estimate import estimate

    base = ["workload=[tier_2]", "arm=[Vanilla]", "agent=[replay_claude_code_continue,ref_amnesiac]",
            "continuation=[notes]"]
    own = {e.agent: e.handoff_calls for e in estimate("continuity", base, results=tmp_path)[0]}
    assert own == {"replay_claude_code_continue": 1, "ref_amnesiac": 1}
    named = {e.agent: e.handoff_calls
             for e in estimate("continuity", [*base, "handoff.writer=replay_codex_continue"], results=tmp_path)[0]}
    # the named writer writes the replay agent's handoff; a reference policy always writes its own
    assert named == {"replay_claude_code_continue": 0, "ref_amnesiac": 1, "replay_codex_continue": 1}


def test_notes_from_a_replay_script_that_scripts_only_a_summary_are_refused_before_any_work(tmp_path):
    """A replay writer whose handoff entries would answer the notes call with its summary: one line
    at plan time, not a run of invalid notes."""
    import yaml

    from sdcs_bench.pipeline.plan.compat import check_continuation
    from sdcs_bench.trial import config
    from sdcs_bench.trial.components import AgentConfig
    from sdcs_bench.trial.continuation import Continuation

    cfg = config.entity("agent", "replay_codex_continue")
    script = yaml.safe_load((config.conf_dir().parent / cfg["replay_script"]).read_text())
    script["sessions"]["handoff_2"] = [e for e in script["sessions"]["handoff_2"] if "match" not in e]
    agent = AgentConfig.of({**cfg, "replay_script_data": script})
    with pytest.raises(SpecSnapError, match="continuation notes needs its handoff_2 call answered in the notes schema"):
        check_continuation(Continuation.parse("notes"), agent, None)
    check_continuation(Continuation.parse("summary"), agent, None)  # (the summary is scripted)
