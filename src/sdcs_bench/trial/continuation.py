"""How a session after a cut continues the work (docs/protocol.md#continuation-modes).

The grid axis ``continuation`` (default ``[reset]``) names one of five modes; each applies to
every session after the first, and a trial in any mode but ``reset`` has a ``handoff_<k>`` stage
before each such session, which records exactly what crosses:

- ``reset``: no history: the neutral prompt and the disk (SpecSnap's original protocol).
- ``trace:<budget>``: the prompt carries the earlier sessions' normalised event streams rendered
  as text, kept from the end up to ``budget`` ``o200k_base`` tokens.
- ``summary``: the prompt carries a summary of the previous session, written through the proxy with a
  fixed, versioned prompt (``conf/continuation/``) by that session's model or the model the run's
  ``handoff.writer`` names, from its trace or its own conversation (``handoff.source``); the call's
  tokens are the trial's handoff cost.
- ``notes``: as ``summary``, but the writer answers with structured notes in a fixed, versioned
  schema (goal, done, in progress with its files, next steps, open questions: :mod:`.notes`),
  validated and rendered into the prompt; notes that fail the schema carry nothing, and say why.
- ``resume``: the harness resumes its own killed conversation by its id; the harness state that
  needs (and nothing else) is carried from one private HOME to the next.
- ``compact``: as ``resume``, with the harness's own compaction forced before it continues.

A grid may also ask for a mode per pair: ``<mode>_or_<fallback>`` (``native`` standing for
``resume``: ``native_or_trace:4000``) takes the first mode where every agent of the trial can do it
and the fallback elsewhere; the planner resolves it per (agent, successor) and each trial file
records what it asked for and what it got.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sdcs_bench.core.errors import SpecSnapError

MODES = ("reset", "trace", "summary", "notes", "resume", "compact")
RESET = "reset"
# What a mode carries from one session to the next: text added to the prompt, or harness state.
PROMPT_MODES = ("trace", "summary", "notes")
# The modes whose handoff asks a writer (a model, or a reference policy's own summariser) for the text.
WRITTEN_MODES = ("summary", "notes")
STATE_MODES = ("resume", "compact")
_TRACE = re.compile(r"^trace:([1-9][0-9]{0,7})$")
MAX_BUDGET = 99_999_999
CHOICES = ("reset, trace:<budget> (o200k tokens, e.g. trace:4000), summary, notes, resume, compact, or <mode>_or_<fallback> "
           "(e.g. native_or_trace:4000; native: resume)")
OR = "_or_"  # <mode>_or_<fallback>: a mode per pair
NATIVE = "native"  # in a mode per pair: the harness's own resume
# What session k gets in each mode, in one line (``specsnap list modes``; docs/protocol.md#continuation-modes).
GETS = {
    "reset": "nothing but the disk and the neutral prompt (SpecSnap's original protocol)",
    "trace:<budget>": "the earlier sessions' events (what was read, edited and run; the closing message) as text in "
                      "its prompt, kept from the end up to <budget> o200k tokens (e.g. trace:4000)",
    "summary": "a summary of the previous session in its prompt, written by that session's model or the one "
               "handoff.writer names, from its trace or its conversation (handoff.source; a call counted as handoff cost)",
    "notes": "structured notes on the previous session in its prompt (goal, done, in progress with files, next "
             "steps, open questions; a versioned schema, validated), written as a summary is",
    "resume": "the harness resumes its own killed conversation (its state carried to the new private HOME); "
              "the same harness only",
    "compact": "as resume, with the harness's own compaction forced first; the same harness only",
    "<mode>_or_<fallback>": "a mode per pair: the first mode where every agent of the trial can do it, else the "
                            "fallback (e.g. native_or_trace:4000: resume within a harness, a trace across two)",
}


@dataclass(frozen=True)
class Continuation:
    mode: str = RESET
    budget: int | None = None  # trace only: o200k tokens of the rendered trace kept
    # a mode per pair (``<mode>_or_<fallback>``): the mode taken where this one cannot be (the planner
    # resolves it per trial: :meth:`resolved`)
    fallback: Continuation | None = None

    @classmethod
    def parse(cls, text: str | None) -> Continuation:
        text = RESET if text in (None, "") else str(text).strip()
        if OR in text:
            first, _, then = text.partition(OR)
            if OR in then:
                raise SpecSnapError(f"continuation {text}: one fallback at most (<mode>_or_<fallback>)")
            preferred = cls.parse("resume" if first == NATIVE else first)
            fallback = cls.parse(then)
            if preferred.is_reset or fallback.is_reset:
                raise SpecSnapError(f"continuation {text}: a mode per pair chooses between modes that carry something "
                                    "(trace:<budget>, summary, notes, resume, compact); reset is a grid value of its own")
            if str(preferred) == str(fallback):
                raise SpecSnapError(f"continuation {text}: the fallback is the mode itself; name one mode")
            return cls(preferred.mode, preferred.budget, fallback)
        m = _TRACE.match(text)
        if m:
            return cls("trace", int(m.group(1)))
        if text in MODES and text != "trace":
            return cls(text)
        if text.startswith("trace:"):  # a budget that is no count of tokens: said as such, not "unknown"
            budget = text.partition(":")[2].strip()
            if re.fullmatch(r"[0-9]+", budget) and int(budget) > MAX_BUDGET:
                raise SpecSnapError(f"continuation {text}: the trace budget is at most {MAX_BUDGET:,} tokens "
                                    f"(got {budget})")
            if re.fullmatch(r"[0-9]+", budget) and int(budget) > 0:
                raise SpecSnapError(f"continuation {text}: write the trace budget without leading zeros "
                                    f"(trace:{int(budget)})")
            raise SpecSnapError(f"continuation {text}: the trace budget must be a positive number of tokens "
                                f"(got {budget or 'nothing'}), e.g. trace:4000")
        raise SpecSnapError(f"unknown continuation {text!r}; valid choices: {CHOICES}")

    @classmethod
    def from_trial(cls, block: dict | None) -> Continuation:
        """The trial file's ``continuation`` block (absent: ``reset``)."""
        return cls.parse(block.get("name")) if block else cls()

    def __str__(self) -> str:
        own = f"trace:{self.budget}" if self.mode == "trace" else self.mode
        return own if self.fallback is None else f"{NATIVE if own == 'resume' else own}{OR}{self.fallback}"

    @property
    def is_choice(self) -> bool:
        """A mode per pair, still to be resolved for a trial's agents."""
        return self.fallback is not None

    def resolved(self, can: bool) -> Continuation:
        """The mode a trial takes: this one (``can``: every agent of the trial can do it), else the fallback."""
        if self.fallback is None:
            return self
        return Continuation(self.mode, self.budget) if can else self.fallback

    @property
    def is_reset(self) -> bool:
        return self.mode == RESET

    @property
    def id_part(self) -> str:
        """The suffix a trial's id takes (none for ``reset``: today's trial ids stay as they are)."""
        return "" if self.is_reset else str(self).replace(":", "-")

    @property
    def carries_state(self) -> bool:
        return self.mode in STATE_MODES

    @property
    def carries_text(self) -> bool:
        return self.mode in PROMPT_MODES

    @property
    def is_written(self) -> bool:
        """Its handoff asks a writer for the text (a summary, notes)."""
        return self.mode in WRITTEN_MODES


def handoff_stage(index: int) -> str:
    """The stage before session ``index`` (>= 2) that hands the work over."""
    return f"handoff_{index}"


# The block a session's prompt gets in the trace and summary modes (after the neutral prompt).
CONTEXT_HEADINGS = {
    "trace": "## What the earlier sessions did (their tool calls, oldest first; cut from the start to fit)",
    "summary": "## A summary of the previous session",
    "notes": "## Notes the previous session handed over",
}


def prompt_with_context(prompt: str, mode: str, text: str) -> str:
    """The session's prompt with what the handoff carries (unchanged when it carries no text)."""
    if mode not in CONTEXT_HEADINGS or not text.strip():
        return prompt
    return f"{prompt.rstrip()}\n\n{CONTEXT_HEADINGS[mode]}\n\n{text.strip()}\n"
