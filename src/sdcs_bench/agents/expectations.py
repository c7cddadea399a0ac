"""Closed-form expected scores of the reference policies (docs/agents.md).

Each follows from the workload data alone: a small abstract model of the policy's decisions
(what it knows from each prompt and from its notes, what it writes, where the cleave cuts it)
run over the trial's schedule, with no files, processes or git. The pipeline runs the real
policy through the real scaffold, cleave, sessions and scoring; a trial whose observed score
differs from this expectation means the pipeline is broken, not the policy.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Callable
from typing import Any

from sdcs_bench.agents.continuation import compact_turns, policy_notes, policy_summary, transcript_text
from sdcs_bench.agents.stochastic import distribution, dropped
from sdcs_bench.coherence.normalise import reference_stream
from sdcs_bench.coherence.trace import SessionTrace, render_trace
from sdcs_bench.core.tokens import meter_tokens
from sdcs_bench.trial.continuation import Continuation, prompt_with_context
from sdcs_bench.trial.notes import render as render_notes
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.components import AgentConfig, Policy, VariantConfig
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial import policy_rules as rules
from sdcs_bench.trial.standards import expected_decisions, layout_for, policy_forms
from sdcs_bench.trial.workload_model import CleaveRule, Workload
from sdcs_bench.core.timing import timed


@dataclass
class _Meter:
    """One session's meter under its cut rule: each metered step is one call of its texts' tokens."""

    rule: CleaveRule
    calls: int = 0
    tokens: int = 0

    def charge(self, *texts: str) -> bool:
        """Count one step before it is performed; True when it reaches the cut (it is then not)."""
        self.calls += 1
        self.tokens += meter_tokens(*texts)
        return self.rule.reached(self.calls, self.tokens)

    def cut_at(self) -> dict[str, int]:
        return {"at_turns": self.calls, "at_tokens": self.tokens}


@functools.lru_cache(maxsize=None)
def _patch_files(patch: Path) -> tuple[tuple[str, bool, bool], ...]:
    """Per file a patch touches: (path, whether it creates the file, whether it removes a non-blank
    line: undoing it then adds that line back)."""
    out = []
    for chunk in re.split(r"^(?=diff --git )", patch.read_text(), flags=re.MULTILINE):
        m = re.match(r"diff --git a/(\S+) b/", chunk)
        if m is None:
            continue
        lines = chunk.splitlines()
        out.append((m.group(1), "--- /dev/null" in lines,
                    any(ln.startswith("-") and not ln.startswith("---") and ln[1:].strip() for ln in lines)))
    return tuple(out)


@dataclass
class _Clock:
    """One session in the closed form of the cost of resuming (coherence/resume.py): its tool events
    (the policy's logged actions), the files it read, the files it read or wrote (for the sessions
    after it), and each write that may be its first useful edit, with the clock when it was made."""

    prior: frozenset[str]
    steps: int = 0
    reads: set[str] = field(default_factory=set)
    touched: set[str] = field(default_factory=set)
    writes: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)  # its logged actions, as the policy logs them

    def act(self, action: str, **detail: Any) -> None:
        """One logged action (a tool event): the fields the event stream reads from its line."""
        self.steps += 1
        self.log.append({"action": action, **detail})

    def read(self, *paths: str) -> None:
        self.reads.update(paths)
        self.touched.update(paths)

    def wrote(self, meter: _Meter, kind: str, rid: str | None, form: str | None, patch: Path | None,
              only: str | None = None) -> None:
        """A write of each source file a patch touches (``only``: of that one): ``implement`` (its
        lines survive if the requirement ends in this form), ``undo`` (the lines it restores survive
        if the requirement ends absent)."""
        for path, new, removes in _patch_files(patch) if patch is not None else ():
            if only is not None and path != only:
                continue
            self.touched.add(path)
            if kind == "undo" and (new or not removes):
                continue  # a created file undone is deleted, and an undo that restores no line adds none
            self.writes.append({"calls": meter.calls, "tokens": meter.tokens, "tool_events": self.steps,
                                "reread": sorted(self.reads & self.prior), "kind": kind, "rid": rid, "form": form})


@dataclass
class _World:
    disk: dict[str, str] = field(default_factory=dict)  # requirement -> form on disk
    uncommitted: set[str] = field(default_factory=set)
    notes: str = ""  # the notes file's text (the arm's, then as the policies rewrite it)
    baseline_done: bool = False
    first_cut: tuple[str, str] | None = None  # (requirement, form) left uncommitted by S1's cleave
    s1_meter_cut: dict[str, int] | None = None  # where a token or turn rule cut S1 (its meter then)
    meter: _Meter | None = None  # the meter of the last session run
    clock: _Clock | None = None  # the clock of the last session run
    seen: set[str] = field(default_factory=set)  # the files the sessions so far read or wrote
    defects: dict[str, bool] = field(default_factory=dict)  # planted defect -> committed (in HEAD)?


@timed("closed form")
def expected_reference_score(
    workload: Workload, arm: Arm, agent: AgentConfig | dict[str, Any], variant: VariantConfig | dict[str, Any],
    successor: AgentConfig | dict[str, Any] | None = None, continuation: dict[str, Any] | None = None, seed: int = 0,
) -> dict[str, Any] | None:
    """``{"raw", "net", "requirements", "s1_edit_survived", "no_cleave", "poison_survived"}`` (and, on
    a standards workload, ``standards``: the decision counts), or ``None`` when the agent is not a
    reference policy. With a ``successor`` (a handoff: it runs every session after the first), the
    closed form of the pair, when both are reference policies. ``continuation``: the trial file's
    block (absent: ``reset``); each mode hands the next session what :mod:`.continuation` defines."""
    agent, variant = AgentConfig.of(agent), VariantConfig.of(variant)
    successor = AgentConfig.of(successor) if successor is not None else None
    if not agent.reference or (successor is not None and not successor.reference):
        return None
    if workload.facts is not None:
        return expected_fact_score(workload, arm, agent, variant)
    if agent.policy.standards:
        return _standards_policy(workload, variant, agent.policy)
    reqs = workload.requirements
    first = _PolicyModel.of(agent, workload, arm, seed)
    then = _PolicyModel.of(successor, workload, arm, seed) if successor is not None else first
    world = _World(baseline_done=workload.baseline_gold is None, notes=first.notes_text or "")
    inject = variant.inject
    hashes = arm_records_hashes(arm)
    no_cleave = False
    sessions = effective_schedule(workload, variant)
    control_tokens = None
    if any(s.cleave.needs_baseline for s in sessions):
        # A cut at a share of the uninterrupted run's tokens: that run's meter, in closed form too
        # (one session: the first agent's).
        control = _World(baseline_done=workload.baseline_gold is None, notes=first.notes_text or "")
        control_tokens = 0
        for s in effective_schedule(workload, {"name": "uninterrupted", "schedule": "single_session"}):
            if first.acts:
                _run_session(control, workload, s.prompt, s.cleave, first, True, hashes)
                control_tokens += control.meter.tokens
        sessions = tuple(replace(s, cleave=s.cleave.resolved(control_tokens)) for s in sessions)
    clocks: list[tuple[int, _Clock]] = []
    cont = Continuation.from_trial(continuation)
    handover = _Handover(cont, workload, continuation or {})
    for index, session in enumerate(sessions, start=1):
        who = first if index == 1 else then
        prompt, history = handover.before(index, session.prompt, who.acts)
        cut = False
        if who.acts:
            cut = _run_session(world, workload, prompt, session.cleave, who, index == 1, hashes, history,
                               log_texts=cont.mode == "trace")
            if index == 1 and session.cleave.active and not cut:
                no_cleave = True
        else:
            no_cleave = no_cleave or (index == 1 and session.cleave.active)
            world.clock = _Clock(frozenset(world.seen))  # (it reads and writes nothing)
        handover.after(index, world.clock.log, "cleaved" if cut else "ok")
        if index > 1:
            clocks.append((index, world.clock))
        if inject and index == inject.after_session:
            world.defects = {d.id: inject.poison == "v3" for d in workload.poison}
    alive = [d for d in workload.poison if d.id in world.defects]
    red = {t for d in alive for t in d.fails}
    passing = {r.id for r in reqs if world.disk.get(r.id) == "gold" and not red & set(r.tests)}
    survived = None
    if world.first_cut is not None:
        rid, form = world.first_cut
        survived = world.disk.get(rid) == form
    raw = len(passing)
    # Every patch the policies write keeps the baseline and the boundary rules; a surviving
    # defect breaks one or the other.
    broken = bool(red & set(workload.baseline_tests)) or any(d.forbidden_import for d in alive)
    result = {
        "raw": raw,
        "net": 0 if broken else raw,
        "requirements": {r.id: r.id in passing for r in reqs},
        "s1_edit_survived": survived,
        "no_cleave": no_cleave,
        "poison_survived": {d.id: d.id in world.defects for d in workload.poison} if inject else None,
    }
    result["resume"] = [_resume_row(index, clock, _survives(world)) for index, clock in clocks]
    if not cont.is_reset:
        result["handoff"] = handover.cost()
    if world.s1_meter_cut is not None:
        result["s1_cut"] = world.s1_meter_cut
    known = distribution(first.policy, arm.name, len(reqs)) if successor is None else None
    if known is not None:  # a stochastic policy: this trial's draw above, and the distribution it is drawn from
        result["distribution"] = known
    if control_tokens is not None:
        result["control_tokens"] = control_tokens
    layout = layout_for(workload, variant)
    if layout is not None:  # a generic policy on the standards workload writes gold: the better form
        written = {r.id: policy_forms(layout, "gold") for r in reqs if world.disk.get(r.id) == "gold"}
        result["standards"] = expected_decisions(workload.standards, layout, written)
    return result


@dataclass
class _Handover:
    """What each continuation mode hands the next session of a gold-patch policy, in closed form: the
    text its prompt carries (a trace of the modelled logs, read through the same normaliser and
    renderer as the real ones; the deterministic summary) or the conversation it resumes (the
    prompts it was given, compacted or not); and what the handoffs cost (their meter)."""

    cont: Continuation
    workload: Workload
    block: dict[str, Any]
    traces: list[SessionTrace] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    calls: int = 0
    tokens: int = 0

    def before(self, index: int, prompt: str, acts: bool) -> tuple[str, tuple[str, ...]]:
        mode = self.cont.mode
        if self.cont.carries_state:  # its conversation file: the prompts it was given (one per acting session)
            if index >= 2 and mode == "compact":
                self.turns = compact_turns(self.workload, self.turns)[0]
            history = tuple(self.turns) if index >= 2 and acts else ()
            if acts:
                self.turns = [*history, prompt]
            return prompt, history
        if index < 2 or mode == "reset":
            return prompt, ()
        if mode == "trace":
            return prompt_with_context(prompt, mode, render_trace(self.traces, int(self.cont.budget))[0]), ()
        if mode in ("summary", "notes"):  # the policy's own summariser, from its trace
            last = self.traces[-1]
            transcript = transcript_text(last, int(self.block[f"{mode}_prompt"]["transcript_tokens"]))
            if mode == "summary":
                text, record = policy_summary(self.workload, list(last.events), transcript)
            else:
                notes, record = policy_notes(self.workload, last, transcript)
                text = render_notes(notes)
            self.calls += 1
            self.tokens += record["tokens"]["meter"]
            return prompt_with_context(prompt, mode, text), ()
        return prompt, ()

    def after(self, index: int, log: list[dict[str, Any]], status: str) -> None:
        stream = reference_stream(log)
        self.traces.append(SessionTrace(index, status, [e.to_dict() for e in stream.events], None))

    def cost(self) -> dict[str, int]:
        return {"calls": self.calls, "tokens": self.tokens}


def _survives(world: _World) -> Callable[[dict[str, Any]], bool]:
    """Whether a gold-patch policy's write survives to the end of ``world``: an implemented
    requirement that ends in that form, an undone one that ends absent, TASK.md's baseline."""
    def useful(w: dict[str, Any]) -> bool:
        if w["kind"] == "implement":
            return world.disk.get(w["rid"]) == w["form"]
        return w["kind"] == "baseline" or world.disk.get(w["rid"]) is None
    return useful


def _resume_row(index: int, clock: _Clock, useful: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """A continuation session's cost of resuming in closed form: its first write whose lines survive
    to the end (``useful``), and its clock then. Wall time has no closed form."""
    first = next((w for w in clock.writes if useful(w)), None)
    row: dict[str, Any] = {"index": index, "reached": first is not None, "prior_files": len(clock.prior)}
    if first is not None:
        row.update({k: first[k] for k in ("calls", "tokens", "tool_events", "reread")})
    return row


@dataclass(frozen=True)
class _PolicyModel:
    """What the closed form needs of one gold-patch policy in one arm: its settings, the notes it
    keeps (only where the arm placed a notes file), whether it knows the sprint, the bugs it knows
    from hints."""

    policy: Policy
    style: str
    oracle: bool
    hinted: frozenset[str]
    notes_file: str | None = None
    reads: tuple[str, ...] = ()  # the files it reads when it learns (its notes, AGENTS.md for hints)
    notes_text: str | None = None  # the notes file the arm placed (None: none)
    dropped: frozenset[str] = frozenset()  # a stochastic policy: the requirements it does not keep (never told)

    @property
    def acts(self) -> bool:
        return self.policy.acts

    @classmethod
    def of(cls, agent: AgentConfig, workload: Workload, arm: Arm, seed: int = 0) -> _PolicyModel:
        policy = agent.policy
        if policy.fact_driven:  # a fact-driven policy finds no authored fact here: it writes nothing
            policy = replace(policy, acts=False)
        style = policy.notes if places_notes_file(arm) else "none"
        reads = (arm.notes_file,) if places_notes_file(arm) else ()
        if policy.knows_sprint == "from_hints" and workload.hints and any(
                f.path == "AGENTS.md" for f in arm.for_workload(workload.id, workload.root).files):
            reads = ("AGENTS.md", *reads) if reads else ("AGENTS.md",)
        return cls(policy, style, policy.oracle, frozenset(hinted_bugs(workload, arm, policy)),
                   arm.notes_file, reads, notes_text=_notes_text(arm, workload),
                   dropped=dropped(policy, arm.name, seed, (r.id for r in workload.requirements)))


def _standards_policy(workload: Workload, variant: VariantConfig, policy: Policy) -> dict[str, Any]:
    """A standards reference policy: in each session it takes every task the queue still holds, in
    order, writing (and committing) one handler each, until the session's cleave cuts it; the forms
    follow from the layout alone (``trial.standards.policy_forms``). On another workload there is
    no queue and it writes nothing."""
    layout = layout_for(workload, variant)
    tasks = [t.id for t in workload.standards.tasks] if workload.standards is not None else []
    modules = {t.id: t.module for t in workload.standards.tasks} if workload.standards is not None else {}
    written: list[str] = []
    cut = None
    no_cleave = False
    resume = []
    for index, session in enumerate(effective_schedule(workload, variant), start=1):
        kind = session.cleave.kind
        limit = {"first_py_edit": 1, "nth_py_edit": session.cleave.n, "first_py_edit_after_commit": 2}.get(kind)
        edits = 0
        prior = len({modules[t] for t in written})  # it reads nothing it logs: its earlier sessions' files are what they wrote
        for tid in [t for t in tasks if t not in written]:
            written.append(tid)
            edits += 1
            if limit is not None and edits >= limit:
                cut = cut or tid
                break
        if index > 1:
            # Its first write (a new handler: it survives) comes after the decision, the first task
            # taken and its own action (each logged before it acts).
            row: dict[str, Any] = {"index": index, "reached": edits > 0, "prior_files": prior}
            if edits:
                row.update(calls=0, tokens=0, reread=[], tool_events=3)
            resume.append(row)
        if index == 1 and session.cleave.active and (limit is None or edits < limit):
            no_cleave = True
    raw = len(written)  # both forms of every surface pass the hidden tests
    # It writes only handler files: a planted defect (another workload's poison pill) stays.
    planted = list(workload.poison) if variant.inject else []
    red = {t for d in planted for t in d.fails}
    broken = bool(red & set(workload.baseline_tests)) or any(d.forbidden_import for d in planted)
    result = {"raw": raw, "net": 0 if broken else raw,
              "requirements": {r.id: r.id in written for r in workload.requirements},
              "s1_edit_survived": True if cut else None, "no_cleave": no_cleave,
              "poison_survived": {d.id: True for d in planted} if variant.inject else None,
              "resume": resume if workload.standards is not None else None}
    if layout is not None:
        forms = policy_forms(layout, policy.standards)
        result["standards"] = expected_decisions(workload.standards, layout, {tid: forms for tid in written})
    return result


def places_notes_file(arm: Arm) -> bool:
    """Does the arm put its notes file in the sandbox? A reference policy keeps notes in the arm's
    notes file (whatever it is named), and only where the arm placed it."""
    return bool(arm.notes_file) and any(f.path == arm.notes_file for f in arm.files)


def _notes_text(arm: Arm, workload: Workload) -> str | None:
    """The notes file as the arm places it (None: it places none; a generated one: empty, as far as
    what a policy notes and reads in it is concerned)."""
    if not places_notes_file(arm):
        return None
    placed = next(f for f in arm.files if f.path == arm.notes_file)
    if placed.workload_file is not None:
        path = workload.root / placed.workload_file
        return path.read_text() if path.is_file() else ""
    return placed.text or ""


def hinted_bugs(workload: Workload, arm: Arm, policy: Policy) -> set[str]:
    """The bugs a hint-following policy knows: those named by each of the workload's hint files
    whose text the arm places in AGENTS.md or in the policy's notes file."""
    if policy.knows_sprint != "from_hints" or not workload.hints:
        return set()
    placed = [f.text for f in arm.for_workload(workload.id, workload.root).files
              if f.text is not None and f.path in ("AGENTS.md", arm.notes_file)]
    return set(rules.hinted(((h.text, h.names) for h in workload.hints), placed))


def arm_records_hashes(arm: Arm) -> bool:
    """Does the arm record a SHA-256 per module at setup (Gate I's app_map.md)?"""
    return any(f.generator == "app_map" and f.options.get("hashes") for f in arm.files)


def _run_session(world: _World, workload: Workload, prompt: str, cleave: CleaveRule, who: _PolicyModel,
                 first: bool, hashes: bool, history: tuple[str, ...] = (), log_texts: bool = False) -> bool:
    """One session of a gold-patch policy; whether its cleave cut it. (Its clock, ``world.clock``,
    and the files it read or wrote, added to ``world.seen`` whatever the outcome.) ``history``: the
    earlier turns of a resumed conversation; ``log_texts``: it logs what it learnt (a trace)."""
    clock = world.clock = _Clock(frozenset(world.seen))
    try:
        return _session_steps(world, workload, prompt, cleave, who, first, hashes, clock, history, log_texts)
    finally:
        world.seen |= clock.touched


def _session_steps(world: _World, workload: Workload, prompt: str, cleave: CleaveRule, who: _PolicyModel,
                   first: bool, hashes: bool, clock: _Clock, history: tuple[str, ...], log_texts: bool) -> bool:
    policy, style, oracle, hinted = who.policy, who.style, who.oracle, who.hinted
    reqs = [r for r in workload.requirements if r.id not in who.dropped]  # (what it was told of)
    meter = world.meter = _Meter(cleave)
    by_id = {r.id: r for r in reqs}
    patch = {"gold": lambda r: r.gold, "summary": lambda r: r.summary_patch, "superseded": lambda r: r.superseded_gold}

    def metered_cut(*texts: str) -> bool:
        if not meter.charge(*texts):
            return False
        if first:
            world.s1_meter_cut = meter.cut_at()
        return True

    armed = cleave.kind in ("first_py_edit", "nth_py_edit")
    edits = 0

    def edit() -> bool:
        """One qualifying write (a patch applied, a file restored); True when the cut falls on it."""
        nonlocal edits
        edits += 1
        return armed and edits >= (cleave.n if cleave.kind == "nth_py_edit" else 1)

    def write(rid: str, form: str) -> bool:
        """Record one source edit; True when the cleave cuts the session right after it."""
        world.disk[rid] = form
        cut = edit()
        if cut:
            world.uncommitted.add(rid)
            if first and world.first_cut is None:
                world.first_cut = (rid, form)
        else:
            world.uncommitted.discard(rid)
        return cut

    def undo(rids: list[str], logged_when_empty: bool) -> bool:
        """One action undoing uncommitted work file by file, in path order: the requirements ``rids``
        and every planted defect not committed. Each file restored is a qualifying write (a file
        the work created is deleted instead: no write); the action is logged before it writes.
        True when the cut falls on one of its writes (the policy is killed there)."""
        planted = [d for d in workload.poison if world.defects.get(d.id) is False]
        items = sorted([(path, created, r) for r in rids for path, created, _ in _patch_files(patch[world.disk[r]](by_id[r]))]
                       + [(d.file, False, d) for d in planted], key=lambda item: item[0])
        if items or logged_when_empty:  # (logged before it writes)
            paths = sorted({path for path, _, _ in items})
            if logged_when_empty:
                clock.act("diff_check", undone=paths)
            else:
                clock.act("revert", paths=paths)
        done, cut = [], False
        for path, created, what in items:
            done.append((path, what))
            if not created and edit():
                cut = True
                break
        for path, what in done:
            clock.touched.add(path)
            if isinstance(what, str):
                form = world.disk[what]
                clock.wrote(meter, "undo", what, form, patch[form](by_id[what]), only=path)
            else:
                world.defects.pop(what.id, None)
        for what in {w for _, w in done if isinstance(w, str)}:
            world.disk.pop(what)  # (a requirement cut in the middle of its files: treated as undone)
            world.uncommitted.discard(what)
        return cut

    if policy.revert_uncommitted and undo(sorted(world.uncommitted), False):
        return True
    # learn (from the prompt, a resumed conversation's earlier turns, the notes)
    if metered_cut(*history, prompt):
        return True
    notes = world.notes if who.notes_text is not None else None  # (a notes file only where the arm placed one)
    known, _, amended = rules.learn(reqs, "\n\n".join([*history, prompt]), notes, oracle=oracle)
    for rid in hinted:  # read from the hint files on disk, which it never rewrites
        known.setdefault(rid, "full")
    files = [f for f in who.reads if f != "AGENTS.md"] + [f for f in who.reads if f == "AGENTS.md"]  # its order
    texts = rules.known_texts(reqs, known) if log_texts else None
    clock.act("read", files=files, known=dict(known), **({"texts": texts} if texts is not None else {}))
    clock.read(*who.reads)
    notes, written, _ = rules.take_notes(style, world.notes, reqs, known, amended, prompt)
    if written and metered_cut(*written):
        return True
    if written:
        clock.act("write_notes", paths=[who.notes_file])
        clock.touched.add(who.notes_file)
    world.notes = notes
    if policy.hash_check and hashes:
        # Every module that differs from its setup hash is checked (one action); planted defects are
        # rebuilt away (their files' repair restores no line: they only add), and committed.
        if world.disk or world.defects:
            clock.act("drift_check", repaired=sorted({d.file for d in workload.poison if d.id in world.defects}))
        if world.defects:
            clock.act("commit_repair")
            clock.touched.update(d.file for d in workload.poison if d.id in world.defects)
        world.defects.clear()  # every planted file differs from its setup hash: rebuilt without it
    # Uncommitted changes it cannot account for are undone: planted defects that show in the diff,
    # and a cut edit when nothing it knows explains it (the check is logged even when it undoes nothing).
    if policy.diff_check and undo(sorted(r for r in world.uncommitted if r not in known), True):
        return True

    if not world.baseline_done and rules.wants_baseline(prompt, oracle=oracle):
        if metered_cut(workload.baseline_gold.read_text()):
            return True
        clock.act("implement_baseline", paths=[f for f, _, _ in _patch_files(workload.baseline_gold)])
        clock.wrote(meter, "baseline", None, None, workload.baseline_gold)
        world.baseline_done = True  # implemented and committed: this arms an after-commit cleave
        armed = armed or cleave.kind == "first_py_edit_after_commit"
    if world.baseline_done:
        for r in reqs:
            form = known.get(r.id)
            if form is None:
                continue
            target = rules.patch_form(form, has_superseded=r.superseded_gold is not None,
                                      amendment_known=r.id in amended)
            current = world.disk.get(r.id)
            if r.from_summary is None and {current, target} == {"gold", "summary"}:
                current = target  # the summary keeps every tested detail: its patch is the gold one
            step = rules.next_step(current, target)
            if step == rules.DONE:
                continue
            if step == rules.SKIP:
                clock.act("skip_conflict")  # the form on disk is another, whose patch conflicts: it logs the skip
                continue
            if r.from_summary is None and target == "summary":
                target = "gold"  # (what it writes is the gold patch)
            texts = [patch[target](r).read_text()]
            if step == rules.IN_PLACE:  # the amendment, made in place: both patches
                texts.insert(0, r.superseded_gold.read_text())
            if metered_cut(*texts):
                return True
            # (logged before it writes: a cut at the write keeps its line)
            clock.act("implement", paths=sorted({f for p in ([r.superseded_gold] if step == rules.IN_PLACE else [])
                                                 + [patch[target](r)] for f, _, _ in _patch_files(p)}))
            cut = write(r.id, target)
            clock.wrote(meter, "implement", r.id, target, patch[target](r))
            if cut:
                return True
    world.uncommitted.clear()  # the session ends normally and commits its work
    world.defects = dict.fromkeys(world.defects, True)  # (whatever is still planted, too)
    return False


# -- coherence workloads: the fact-driven policies (docs/coherence.md) ---------------------------
REAL, FAKE, ABSENT, DONE = "real", "fake", "absent", "done"


def expected_fact_score(workload: Workload, arm: Arm, agent: AgentConfig | dict[str, Any],
                        variant: VariantConfig | dict[str, Any]) -> dict[str, Any]:
    """The closed form of a fact-driven reference policy (``agents/fact_policy.py``) on a coherence
    workload, from the workload's data alone: which secrets the variant withholds and when, where
    the cleave cuts each session, what the arm's notes file carries across it.

    The model tracks, per file, only what matters for the outcome: a secret file holds the real
    value, a made-up one or none (deleted or stubbed: the policy cannot tell them apart); a file
    that states the value holds the real one, a made-up one or its baseline; a file that needs no
    value is written or not. A motif's four tests pass iff its value file holds the real value and
    its other files are written. ``abstention``: ``fabricated`` if the policy made a value up in
    any session, else ``blocked`` if its last session ended saying so, else ``proceeded``."""
    from sdcs_bench.sandbox.withhold import variant_withholding

    facts = workload.facts
    policy = AgentConfig.of(agent).policy
    acts = policy.acts
    on_missing = policy.on_missing_fact or "skip"
    notes_on = places_notes_file(arm) and policy.notes == "facts"
    found = variant_withholding(variant)
    withheld = set(facts.withheld_secrets(int(found[0]["k"]))) if found else set()
    after = found[1] if found else None
    files: dict[str, str] = {m.secret: REAL for m in facts.motifs}  # path -> REAL | FAKE | ABSENT | DONE
    if found and after is None:
        files.update(dict.fromkeys(withheld, ABSENT))
    notes: dict[str, str] = {}  # motif id -> the value it noted (REAL or FAKE)
    fabricated = blocked = False
    first_cut: tuple[str, str] | None = None
    no_cleave = False
    stubbed = bool(found) and found[0]["mode"] == "stub"
    secrets = set(facts.secrets)
    baseline = workload.root / "baseline"

    def exists(path: str) -> bool:
        if path in secrets:  # a withheld secret is gone, or a stub that defines nothing
            return files[path] in (REAL, FAKE) or stubbed
        return path in files or (baseline / path).is_file()

    seen: set[str] = set()
    clocks: list[tuple[int, _Clock]] = []
    for index, session in enumerate(effective_schedule(workload, variant), start=1):
        clock = _Clock(frozenset(seen))
        if acts:
            cut, blocked_now, made_up = _fact_session(facts, session.cleave, files, notes, notes_on, on_missing, clock,
                                                      arm.notes_file if places_notes_file(arm) else None, exists)
            fabricated |= made_up
            blocked = blocked_now
            if index == 1 and session.cleave.active and cut is None:
                no_cleave = True
            if index == 1 and cut is not None:
                first_cut = cut
        elif index == 1 and session.cleave.active:
            no_cleave = True
        seen |= clock.touched
        if index > 1:
            clocks.append((index, clock))
        if found and after == index:
            files.update(dict.fromkeys(withheld, ABSENT))
    passing = {m.id for m in facts.motifs if all(files.get(e.path) == (REAL if _needs_value(e) else DONE)
                                                   for e in m.edits)}
    reqs = workload.requirements
    return {
        "raw": len(passing),
        "net": len(passing),  # the policies never import a secret, touch a visible test or a baseline test
        "requirements": {r.id: r.id in passing for r in reqs},
        "tests_passed": sum(len(r.tests) for r in reqs if r.id in passing),
        "s1_edit_survived": None if first_cut is None else files.get(first_cut[0]) == first_cut[1],
        "no_cleave": no_cleave,
        "poison_survived": None,
        "withheld": sorted(withheld),
        "abstention": "fabricated" if fabricated else "blocked" if blocked else "proceeded",
        # a write survives when its file ends holding what it wrote
        "resume": [_resume_row(index, clock, lambda w: files.get(w["path"]) == w["value"]) for index, clock in clocks],
    }


def _needs_value(edit) -> bool:
    return "{value}" in edit.template.read_text()


def _fact_session(facts, cleave: CleaveRule, files: dict[str, str], notes: dict[str, str], notes_on: bool,
                  on_missing: str, clock: _Clock, notes_file: str | None,
                  exists: Callable[[str], bool]) -> tuple[tuple[str, str] | None, bool, bool]:
    """One session of a fact-driven policy; returns (the write the cleave cut it at, if any: (path,
    what it wrote)), whether it ended blocked, whether it made a value up. Its ``clock`` counts its
    logged actions (each is logged before it is carried out), the files it reads (``exists``: is
    the path a file now) and each write, for the cost of resuming."""

    def read(path: str) -> None:
        clock.steps += 1
        if exists(path):
            clock.read(path)

    if notes_file is not None:  # (placed by the arm: it is there)
        clock.steps += 1
        clock.read(notes_file)
    known: dict[str, str] = {}
    for m in facts.motifs:
        value_files = [e.path for e in m.edits if _needs_value(e)]
        read(m.secret)
        if files[m.secret] in (REAL, FAKE):
            known[m.id] = files[m.secret]
        elif m.id in notes:
            known[m.id] = notes[m.id]
        else:
            for path in value_files:  # read in order until one carries a value
                read(path)
                if files.get(path) in (REAL, FAKE):
                    known[m.id] = files[path]
                    break
        clock.steps += m.id in known  # (a fact found is logged; a missing one is not a tool event)
    if notes_on:
        if set(known) - set(notes):
            clock.steps += 1
            clock.touched.add(notes_file)
        for mid, value in known.items():
            notes.setdefault(mid, value)
    armed = cleave.kind in ("first_py_edit", "nth_py_edit")
    limit = cleave.n if cleave.kind == "nth_py_edit" else 1
    writes = 0
    made_up = False

    def write(path: str, value: str) -> bool:
        """One file write (logged first); True when the cleave cuts the session right after it."""
        nonlocal writes
        clock.steps += 1
        clock.touched.add(path)
        clock.writes.append({"calls": 0, "tokens": 0, "tool_events": clock.steps,
                             "reread": sorted(clock.reads & clock.prior), "kind": "fact", "path": path, "value": value})
        files[path] = value
        writes += 1
        return armed and writes >= limit

    missing = False
    for m in facts.motifs:
        value = known.get(m.id)
        changed = False
        if value is None and on_missing == "fabricate":
            value, made_up = FAKE, True
            if write(m.secret, FAKE):  # (its own action: it does not make the motif's commit)
                return (m.secret, FAKE), False, made_up
        if value is None:
            missing = True
            if on_missing == "abstain":
                continue
        for e in m.edits:
            if _needs_value(e):
                if value is None:
                    continue
                want = value
            else:
                want = DONE
            if files.get(e.path) == want:
                continue
            changed = True
            if write(e.path, want):
                return (e.path, want), False, made_up
        clock.steps += changed  # its commit (after the motif's edits, when it wrote any)
    return None, missing and on_missing == "abstain", made_up
