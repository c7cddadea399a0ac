"""Structured handoff notes (the ``notes`` continuation, docs/protocol.md#structured-notes): the
fixed, versioned schema a writer answers in, its validation, and how notes are rendered into the
next session's prompt.

A writer's reply is untrusted text: it is read as one JSON object (a Markdown code fence around it
is accepted), checked against :data:`SCHEMA` (every field present, nothing else, bounded sizes),
and only then rendered. Notes that fail carry nothing into the next prompt; the handoff record says
why (the first problem found), so an invalid handoff is a measured outcome, never a silent one.
"""

from __future__ import annotations

import json
import re
from typing import Any

VERSION = "specsnap-notes/1"
MAX_REPLY_CHARS = 200_000  # what is parsed of a reply at most (a longer one is refused as such)
_TEXT = {"type": "string", "minLength": 1, "maxLength": 2000}
_LIST = {"type": "array", "maxItems": 50, "items": _TEXT}

# The schema (JSON Schema 2020-12). A change of it is a new VERSION (and a new prompt version).
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": VERSION,
    "type": "object",
    "additionalProperties": False,
    "required": ["schema", "goal", "done", "in_progress", "next_steps", "open_questions"],
    "properties": {
        "schema": {"const": VERSION},
        "goal": _TEXT,
        "done": _LIST,
        "in_progress": {
            "type": "array", "maxItems": 50,
            "items": {"type": "object", "additionalProperties": False, "required": ["task", "files"],
                      "properties": {"task": _TEXT, "files": {"type": "array", "maxItems": 50,
                                                               "items": {**_TEXT, "maxLength": 500}}}},
        },
        "next_steps": _LIST,
        "open_questions": _LIST,
    },
}
# (the headings of the rendered notes, in the schema's order)
HEADINGS = {"done": "Done", "in_progress": "In progress", "next_steps": "Next steps",
            "open_questions": "Open questions"}
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*)\n\s*```\s*$", re.S)


def parse(reply: str) -> tuple[dict[str, Any] | None, str | None]:
    """The notes in a writer's reply, or None and the first problem found (one line)."""
    if len(reply) > MAX_REPLY_CHARS:
        return None, f"the reply is longer than {MAX_REPLY_CHARS:,} characters"
    text = reply.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        return None, "the reply is empty"
    try:
        notes = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return None, f"the reply is not one JSON object ({type(exc).__name__}: {str(exc)[:120]})"
    problem = check(notes)
    return (notes, None) if problem is None else (None, problem)


def check(notes: Any) -> str | None:
    """The first way ``notes`` breaks the schema (None: they keep it)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(notes), key=lambda e: (list(e.absolute_path), e.message))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.absolute_path) or "the top level"
    value = first.validator_value  # (said without the writer's text: its own words are not the problem)
    said = {"type": f"must be of type {value!r}", "const": f"must be {value!r}", "minLength": "is empty",
            "maxLength": f"is longer than {value} characters", "maxItems": f"has more than {value} items"}
    return f"{where}: {said.get(str(first.validator), first.message[:200])}"


def render(notes: dict[str, Any]) -> str:
    """Valid notes as the next prompt carries them: the goal, then each non-empty list under its
    heading, one ``- `` line per item (an item in progress with its files)."""
    out = [f"Goal: {notes['goal'].strip()}"]
    for key, heading in HEADINGS.items():
        items = notes[key]
        if not items:
            continue
        out += ["", f"{heading}:"]
        for item in items:
            if key == "in_progress":
                files = f" (files: {', '.join(item['files'])})" if item["files"] else ""
                out.append(f"- {item['task'].strip()}{files}")
            else:
                out.append(f"- {item.strip()}")
    return "\n".join(out)
