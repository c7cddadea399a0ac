"""The reference policies' decision rules, in one home (docs/agents.md#reference-policies).

A gold-patch or standards reference policy (``agents/reference_policy.py``) decides, in its
sandbox, what it knows, what it notes, which patch it writes and what it skips; its closed form
(``agents/expectations.py``) must reach the same decisions from the workload's data alone. Both
call the functions here, so a rule is written once: the policy applies it to what it reads from the
disk (git, its notes file, AGENTS.md), the closed form to its model of the disk. What the closed
form models on its own is only what the pipeline does: where cuts land, what the meters count,
what each write leaves on disk. It therefore stays an independent check of the pipeline.

This module runs inside the sandbox beside the policy, which loads it by path: it imports only
the standard library, and nothing of SpecSnap; only what the policy imports anyway (its process
starts in every session of every reference trial: no dataclasses, no typing at run time).

A requirement is anything with ``id``, ``text``, ``summary`` and ``amendment`` (None: it has none)
attributes; :class:`Req` is the policy's form of one.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # (typing's flag, without importing typing)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

# How a policy keeps its notes file (a policy's ``notes`` setting):
#   none        it writes no notes
#   verbatim    it appends each requirement it knows in full, and each amendment it knows
#   amend       as verbatim, but an amendment goes right under its requirement
#   compressed  it appends the summary line of each requirement it knows in full
#   overwrite   it replaces the notes (below their first line) with what this prompt newly requests
NOTE_STYLES = ("none", "verbatim", "amend", "compressed", "overwrite")
# Where a policy learns which requirements to do (its ``knows_sprint`` setting; absent: the prompt
# and its notes only): ``always`` (the oracle), ``from_hints`` (also the bugs a hint names, when
# that hint's text is in AGENTS.md or its notes file).
KNOWS_SPRINT = ("always", "from_hints")
# The patch forms of one requirement: its gold patch, the patch written from its summary line, the
# patch of its original form that a later wave's amendment supersedes.
GOLD, SUMMARY, SUPERSEDED = "gold", "summary", "superseded"
# What a policy does about one requirement, given the form on disk (:func:`next_step`).
DONE, WRITE, IN_PLACE, SKIP = "done", "write", "in_place", "skip"


class Req(namedtuple("Req", ["id", "text", "summary", "amendment"], defaults=[None])):
    """A requirement as the policy holds it: ``id``, ``text``, ``summary`` and ``amendment`` (None:
    it has none)."""

    __slots__ = ()


def norm(text: str) -> str:
    """Text compared as a policy compares it: its words, single-spaced (line breaks, indentation
    and wrapping never decide whether a text is there)."""
    return " ".join(text.split())


def summary_line(req: Any) -> str:
    """The one-line form of a requirement a policy notes, summarises and recognises."""
    return f"- {req.id}: {req.summary}"


def learn(reqs: Sequence[Any], conversation: str, notes: str | None, *,
          oracle: bool) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """What a session knows: per requirement ``full`` or ``summary``, where it learnt it
    (``briefing``: the oracle; ``prompt``: the conversation, which is the prompt with what a
    continuation carried into it and a resumed conversation's earlier turns; ``notes``), and the
    amendments it knows. ``notes``: the notes file's text (None: there is no notes file)."""
    sources = [norm(conversation)] + ([norm(notes)] if notes is not None else [])
    known: dict[str, str] = {}
    where: dict[str, str] = {}
    amended: set[str] = set()
    for r in reqs:
        text, line = norm(r.text), norm(summary_line(r))
        if oracle or any(text in s for s in sources):
            known[r.id] = "full"
            where[r.id] = "briefing" if oracle else "prompt" if text in sources[0] else "notes"
        elif notes is not None and line in sources[-1]:
            known[r.id], where[r.id] = "summary", "notes"
        elif line in sources[0]:  # a summary or a compaction carried it
            known[r.id], where[r.id] = "summary", "prompt"
        if r.amendment and (oracle or any(norm(r.amendment) in s for s in sources)):
            amended.add(r.id)
    return known, where, amended


def hinted(hints: Iterable[tuple[str, Iterable[str]]], texts: Sequence[str]) -> dict[str, int]:
    """The bugs a hint-following policy knows from hints: each hint is ``(text, the bugs it names)``;
    a hint counts when its text is in one of ``texts`` (AGENTS.md, the notes file: what it reads).
    Per bug, the index of the first text that holds a hint naming it."""
    normed = [norm(t) for t in texts]
    found: dict[str, int] = {}
    for text, names in hints:
        index = next((i for i, t in enumerate(normed) if norm(text) in t), None)
        if index is not None:
            for rid in names:
                found.setdefault(rid, index)
    return found


def known_texts(reqs: Sequence[Any], known: dict[str, str]) -> dict[str, str]:
    """What a session learnt, as text (a ``trace`` carries it on): a requirement's full text, or its
    summary line."""
    by_id = {r.id: r for r in reqs}
    return {rid: by_id[rid].text if form == "full" else summary_line(by_id[rid]) for rid, form in known.items()}


def wants_baseline(prompt: str, *, oracle: bool) -> bool:
    """Tier 1: does the session implement TASK.md (the prompt asks for it; the oracle always)?"""
    return oracle or "TASK.md" in prompt


def patch_form(known: str, *, has_superseded: bool, amendment_known: bool) -> str:
    """The form a policy writes of a requirement it knows (``full`` or ``summary``): the summary's
    patch from a summary line; the superseded original while it does not know the amendment."""
    if known == "summary":
        return SUMMARY
    if has_superseded and not amendment_known:
        return SUPERSEDED
    return GOLD


def next_step(current: str | None, target: str) -> str:
    """What a policy does about a requirement whose form ``current`` is on disk (None: no form; any
    other string: a form it did not write) when it would write ``target``: nothing (``done``), write
    it, make the amendment in place (reverse the superseded patch, apply the gold one: one write per
    file), or skip it, logged (another form is there, and the patch conflicts with it)."""
    if current == target:
        return DONE
    if current is None:
        return WRITE
    if current == SUPERSEDED and target == GOLD:
        return IN_PLACE
    return SKIP


def take_notes(style: str, text: str, reqs: Sequence[Any], known: dict[str, str], amended: set[str],
               prompt: str) -> tuple[str, list[str], int]:
    """A session's note-taking (see ``NOTE_STYLES``): the notes' new text, the entries it writes
    (what its meter counts) and how many entries are new (0: it writes nothing)."""
    if style == "none":
        return text, [], 0
    if style == "compressed":
        held = norm(text)
        new = [summary_line(r) for r in reqs if known.get(r.id) == "full" and norm(summary_line(r)) not in held]
        return (text.rstrip("\n") + "\n" + "\n".join(new) + "\n", new, len(new)) if new else (text, [], 0)
    if style == "overwrite":  # only what this prompt newly requests; a prompt that requests nothing leaves them
        asked = norm(prompt)
        current = [r.text for r in reqs if norm(r.text) in asked]
        current += [r.amendment for r in reqs if r.amendment and norm(r.amendment) in asked]
        if not current:
            return text, [], 0
        new_text = text.split("\n", 1)[0] + "\n\n" + "\n\n".join(current) + "\n"
        return (new_text, list(current), len(current)) if new_text != text else (text, [], 0)
    written: list[str] = []  # verbatim (append) or amend (amendments placed under their requirement)
    entries = 0
    for r in reqs:
        if known.get(r.id) == "full" and norm(r.text) not in norm(text):
            text = text.rstrip("\n") + "\n\n" + r.text + "\n"
            written.append(r.text)
            entries += 1
        if r.id in amended and norm(r.amendment) not in norm(text):
            written.append(r.amendment)
            if style == "amend" and r.text in text:
                text = text.replace(r.text, r.text + "\n\n" + r.amendment, 1)
            else:
                text = text.rstrip("\n") + "\n\n" + r.amendment + "\n"
            entries += 1
    return text, written, entries


# -- the standards family -------------------------------------------------------------------------
STANDARDS_MODES = ("follow_standard", "follow_code")


def choose_form(mode: str, stated: str | None, code: str | None) -> tuple[str, str]:
    """The form a standards policy writes on one surface, and its source: what the standard states
    (``follow_standard``, where it states exactly one form: ``stated``), else the form the existing
    handlers show (``code``, where they show exactly one), else the better form (its own choice).
    ``gold`` (the oracle) writes the better form everywhere."""
    if mode == "follow_standard" and stated is not None:
        return stated, "standard"
    if mode != "gold" and code is not None:
        return code, "code"
    return "better", "own"
