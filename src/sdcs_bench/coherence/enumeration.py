"""The estimator enumeration: every way an edit's required facts can reach the agent, and what
two coverage estimators make of each.

One edit needs ``k`` facts, each kept in a source file of its own. Every fact is in exactly one
of three states:

- **read**: the agent read the file and took the fact from it; the trace holds a ``file_read``
  and a ``fact_extracted`` for it;
- **prior**: the model's parametric memory already holds a current copy; it enters the agent's
  ledger and *nothing is logged*;
- **uncovered**: neither channel supplies it.

The agent then states its edit (``edit_intent``) and writes the right value for every fact it
holds and a wrong one for every other fact; the test (``test_feedback``) compares the written
values with the true ones, so it fails exactly when some fact was uncovered, and a failed edit
is undone (``revert``). A trace is that list of events plus the set of facts the prior supplied.

Two estimators read every trace and name the facts the edit was missing:

- **union-aware**: required minus (resident ∪ prior), the per-edit coherence debt of the
  paper's Eq. 1; it consults the agent's ledger, so it sees the prior;
- **event-only**: required minus resident, where *resident* is what the events alone show;
  this is all that can be computed from a transcript.

The paper's Proposition 1 predicts the event-only estimator's error exactly: with the required
facts split into read R, prior P and uncovered U, it reports U ∪ P, so its excess over the
union-aware estimator is P, the parametric coverage. :func:`enumerate_runs` builds the trace of
every assignment of the three states to k facts and checks, on every run, that the union-aware
estimator returns U, that the event-only excess is P and that the test fails exactly when U is
not empty. This is a check of the instruments on constructed traces; no agent takes part.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from importlib import resources
from statistics import fmean
from typing import Any

import yaml

from sdcs_bench.core.errors import SpecSnapError, unknown

EVENT_TYPES = ("file_read", "fact_extracted", "edit_intent", "test_feedback", "revert")
K_LIMIT = 10  # 3**10 = 59,049 traces for the largest k, about ten seconds; every k more triples it
DEFAULT_K = (2, 6)
TARGET = "edit.py"  # the file the edit writes
BASE_VERSION = 1  # every file starts at this version; a write and its reversal each make a new one


class State(str, Enum):
    """How one required fact reached the agent before the edit."""

    READ = "read"
    PRIOR = "prior"
    UNCOVERED = "uncovered"

    @property
    def letter(self) -> str:
        return self.value[0].upper()


@dataclass(frozen=True)
class Event:
    """One event of the stream, with its payload."""

    type: str
    data: Mapping[str, Any]

    def __post_init__(self) -> None:
        if self.type not in EVENT_TYPES:
            raise unknown("event type", self.type, EVENT_TYPES)


@dataclass(frozen=True)
class Trace:
    """One run: the events the agent's stream records, the facts its prior supplied (which the
    stream cannot show) and the true value of every required fact (which only the test uses)."""

    assignment: tuple[State, ...]
    events: tuple[Event, ...]
    prior: frozenset[str]
    truth: Mapping[str, int]

    @property
    def k(self) -> int:
        return len(self.assignment)

    @property
    def label(self) -> str:
        """The assignment in one word, a letter per fact: ``RPU`` = F1 read, F2 prior, F3 uncovered."""
        return "".join(state.letter for state in self.assignment)

    @property
    def facts(self) -> tuple[str, ...]:
        return tuple(fact_id(i) for i in range(self.k))

    def facts_in(self, state: State) -> frozenset[str]:
        return frozenset(fact_id(i) for i, s in enumerate(self.assignment) if s is state)

    def edit(self) -> tuple[int, Event]:
        """The edit's ``edit_intent`` and its position in the stream."""
        for i, event in enumerate(self.events):
            if event.type == "edit_intent":
                return i, event
        raise SpecSnapError(f"trace {self.label} has no edit_intent event: there is no edit to estimate")

    def required(self) -> frozenset[str]:
        return frozenset(self.edit()[1].data["required"])

    def oracle_passed(self) -> bool:
        """The test's verdict on the edit, as its ``test_feedback`` records it."""
        index, intent = self.edit()
        for event in self.events[index + 1:]:
            if event.type == "test_feedback" and intent.data["id"] in event.data["validates"]:
                return bool(event.data["passed"])
        raise SpecSnapError(f"trace {self.label} has no test_feedback for its edit")


def fact_id(i: int) -> str:
    return f"F{i + 1}"


def fact_path(i: int) -> str:
    return f"facts/f{i + 1}.py"


def build_trace(assignment: Sequence[State]) -> Trace:
    """The trace of one edit whose i-th required fact is in state ``assignment[i]``."""
    assignment = tuple(State(s) for s in assignment)
    facts = [fact_id(i) for i in range(len(assignment))]
    truth = {fact: 100 + 7 * i for i, fact in enumerate(facts)}
    events: list[Event] = []
    held: dict[str, int] = {}  # the agent's ledger: fact -> the source version of its copy
    prior: set[str] = set()
    for i, (fact, state) in enumerate(zip(facts, assignment)):
        if state is State.READ:
            path = fact_path(i)
            events.append(Event("file_read", {"path": path, "version": BASE_VERSION, "bytes": [0, 64]}))
            events.append(Event("fact_extracted", {"fact": fact, "value": truth[fact], "source": path,
                                                   "version": BASE_VERSION, "mode": "read"}))
            held[fact] = BASE_VERSION
        elif state is State.PRIOR:  # a current copy in the ledger, and no event at all
            prior.add(fact)
            held[fact] = BASE_VERSION
    # What the agent writes: the value it holds, or (it holds none) a plausible wrong one.
    writes = {fact: truth[fact] if fact in held else truth[fact] + 1 for fact in facts}
    events.append(Event("edit_intent", {"id": "e1", "target": TARGET, "base_version": BASE_VERSION,
                                        "required": facts, "relied_on": dict(held), "writes": writes}))
    wrong = [fact for fact in facts if writes[fact] != truth[fact]]
    events.append(Event("test_feedback", {"command": "pytest -q", "validates": ["e1"], "passed": not wrong,
                                          "contradicts": ["e1"] if wrong else [],
                                          "diagnostics": f"{len(wrong)} of {len(facts)} values wrong"}))
    if wrong:
        events.append(Event("revert", {"target": TARGET, "restored_version": BASE_VERSION,
                                       "version": BASE_VERSION + 2, "intent": "e1",
                                       "feedback": len(events) - 1}))
    return Trace(assignment, tuple(events), frozenset(prior), truth)


def resident(events: Sequence[Event]) -> frozenset[str]:
    """The facts the events show the agent holding a current copy of: one ``fact_extracted``
    whose source has not changed since. A ``file_read`` alone extracts nothing, and an
    ``edit_intent``'s ``relied_on`` is the agent's own claim, which is no evidence."""
    current: dict[str, int] = {}
    extracted: dict[str, tuple[str, int]] = {}
    for event in events:
        data = event.data
        if event.type == "file_read":
            current[data["path"]] = max(current.get(data["path"], 0), data["version"])
        elif event.type == "fact_extracted":
            extracted[data["fact"]] = (data["source"], data["version"])
            current[data["source"]] = max(current.get(data["source"], 0), data["version"])
    return frozenset(fact for fact, (source, version) in extracted.items() if version >= current[source])


Estimator = Callable[[Trace], frozenset[str]]


def union_aware(trace: Trace) -> frozenset[str]:
    """Required facts in neither channel at edit time: required − (resident ∪ prior)."""
    index, _ = trace.edit()
    return trace.required() - (resident(trace.events[:index]) | trace.prior)


def event_only(trace: Trace) -> frozenset[str]:
    """Required facts the events do not show resident at edit time: required − resident."""
    index, _ = trace.edit()
    return trace.required() - resident(trace.events[:index])


@dataclass(frozen=True)
class Run:
    """One trace, what both estimators said of it, and every way it broke the prediction."""

    trace: Trace
    oracle_passed: bool
    union_missing: frozenset[str]
    event_missing: frozenset[str]
    problems: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"k={self.trace.k} {self.trace.label}"

    @property
    def overstatement(self) -> frozenset[str]:
        return self.event_missing - self.union_missing

    @property
    def fully_covered(self) -> bool:
        return not self.trace.facts_in(State.UNCOVERED)

    @property
    def all_read(self) -> bool:
        return self.trace.facts_in(State.READ) == frozenset(self.trace.facts)

    @property
    def false_alarm(self) -> bool:
        """The edit passed, yet the event-only estimator reports missing facts."""
        return self.fully_covered and self.oracle_passed and bool(self.event_missing)


def _names(facts: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(facts, key=lambda f: int(f[1:]))) + "}"


def check_run(trace: Trace, union: Estimator | None = None, event: Estimator | None = None) -> Run:
    """Run both estimators on a trace and compare them with the assignment it was built from."""
    union_missing = (union or union_aware)(trace)
    event_missing = (event or event_only)(trace)
    uncovered, parametric = trace.facts_in(State.UNCOVERED), trace.facts_in(State.PRIOR)
    passed = trace.oracle_passed()
    problems = []
    if passed != (not uncovered):
        problems.append(f"the test {'passed' if passed else 'failed'} with uncovered facts {_names(uncovered)}")
    if union_missing != uncovered:
        problems.append(f"union-aware estimator reports {_names(union_missing)} missing, "
                        f"the uncovered facts are {_names(uncovered)}")
    if not union_missing <= event_missing:
        problems.append(f"union-aware estimator reports {_names(union_missing - event_missing)} missing, "
                        f"which the event-only estimator does not")
    if event_missing - union_missing != parametric:
        problems.append(f"event-only overstatement {_names(event_missing - union_missing)} is not the "
                        f"parametrically covered set {_names(parametric)}")
    return Run(trace, passed, union_missing, event_missing, tuple(problems))


def check_k_range(k_min: int, k_max: int) -> None:
    """One clear error for a range that cannot be enumerated, before any work."""
    valid = f"k runs from 1 to {K_LIMIT} (3^k traces per k)"
    for flag, value in (("--k-min", k_min), ("--k-max", k_max)):
        if not 1 <= value <= K_LIMIT:
            raise SpecSnapError(f"{flag} {value} is out of range: {valid}")
    if k_min > k_max:
        raise SpecSnapError(f"--k-min {k_min} is greater than --k-max {k_max}: give 1 <= k-min <= k-max <= {K_LIMIT}")


def assignments(k: int) -> Iterator[tuple[State, ...]]:
    """All 3^k assignments of the three states to k facts."""
    return itertools.product(tuple(State), repeat=k)


def enumerate_runs(k_min: int = DEFAULT_K[0], k_max: int = DEFAULT_K[1],
                   union: Estimator | None = None, event: Estimator | None = None) -> list[Run]:
    """Every assignment for every k in [k_min, k_max], built into a trace and checked."""
    check_k_range(k_min, k_max)
    return [check_run(build_trace(a), union, event) for k in range(k_min, k_max + 1) for a in assignments(k)]


def _counts(runs: Sequence[Run]) -> dict[str, Any]:
    sizes = [len(run.overstatement) for run in runs]
    return {
        "runs": len(runs),
        "fully_covered": sum(run.fully_covered for run in runs),
        "event_only_false_alarms": sum(run.false_alarm for run in runs),
        "all_read": sum(run.all_read for run in runs),
        "all_read_estimators_agree": sum(run.all_read and run.union_missing == run.event_missing for run in runs),
        "union_aware_exact": sum(run.union_missing == run.trace.facts_in(State.UNCOVERED) for run in runs),
        "overstatement_equals_parametric": sum(run.overstatement == run.trace.facts_in(State.PRIOR) for run in runs),
        "overstatement_mean": round(fmean(sizes), 2) if sizes else 0.0,
        "overstatement_max": max(sizes, default=0),
    }


def published() -> dict[str, Any]:
    """The paper's own figures (data, labelled published wherever they are shown)."""
    text = resources.files("sdcs_bench").joinpath("data/published_estimator_enumeration.yaml").read_text()
    return yaml.safe_load(text)


PUBLISHED_LABEL = "published (coherence-debt paper, Appendices C-D; not produced by this run)"
WHAT = "constructed traces, no agent (a check of the estimators, not a measurement)"


def summarise(runs: Sequence[Run], k_min: int, k_max: int) -> dict[str, Any]:
    """The counts over all runs and per k, every violation, and the published figures when the
    range is the paper's."""
    violations = [{"run": run.name, "problem": problem} for run in runs for problem in run.problems]
    summary: dict[str, Any] = {
        "what": WHAT,
        "k_min": k_min,
        "k_max": k_max,
        **_counts(runs),
        "per_k": [{"k": k, **_counts([run for run in runs if run.trace.k == k])} for k in range(k_min, k_max + 1)],
        "proposition_holds": not violations,
        "violations": violations,
    }
    pub = published()
    if [k_min, k_max] == pub["k"]:
        summary["published"] = {"label": PUBLISHED_LABEL, "source": pub["source"], **pub["figures"]}
    return summary
