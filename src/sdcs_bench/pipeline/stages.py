"""Pipeline stages of one trial: scaffold -> session_k [-> inject] [-> handoff_k+1] -> score (docs/architecture.md).

Each stage starts from its predecessor's snapshot alone and ends by writing, atomically, a
snapshot of the sandbox and ``stage.json`` (written last: its presence means the stage is done).
So every stage is restartable, cacheable, and can run as a cluster job on another machine.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdcs_bench.core import safefs
from sdcs_bench.core.archive import Caps, restore_tree, write_tree
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_write, remove_stale_temporaries
from sdcs_bench.core.tokens import TokenUsage, count_tokens
from sdcs_bench.pipeline.freshness import INPUTS_KEY, input_record
from sdcs_bench.pipeline.layout import (CARRY, CLEAVE_DIFF, CONTEXT, LEDGER, MANIFEST, NOTES_REPLY, SCORECARD, SNAPSHOT,
                                        STAGE_FILE, WRITER_INPUT, TrialLayout, trial_layout)
from sdcs_bench.trial.continuation import handoff_stage, prompt_with_context
from sdcs_bench.trial.spec import TrialSpec
from sdcs_bench.core.timing import timed

if TYPE_CHECKING:
    from sdcs_bench.coherence.trace import SessionTrace
    from sdcs_bench.session.budget import Budget
    from sdcs_bench.trial.components import AgentConfig

# Each stage is a process of its own (a Snakemake job): what only one stage runs (the session
# runner, the scorer, the closed forms, the handoff's modes) is imported inside its function, so no
# stage pays for loading another's (docs/benchmarks.md#a-trials-own-overhead).


def load_trial(path: Path) -> TrialSpec:
    return TrialSpec.load(path)


@timed("snapshot write")
def write_snapshot(workdir: Path, stage_dir: Path, *, secrets: list[str] | None = None,
                   caps: Caps | None = None) -> dict[str, Any]:
    """Write the stage's snapshot of ``workdir``, within ``caps`` (core/archive.py: depth, entries,
    bytes per file by apparent size, bytes in all), and return its record (``write_tree``): what was
    left out and why, ``limit: "disk"`` when a cap was reached (the snapshot is written with what
    fits), and ``credential_leak``: where a key was found (masked in a plain file, in the archive and
    the tree; a file holding one in git's objects or compressed data left out). ``secrets``: the keys
    to look for (default: every API key in this process's environment; none, no cost)."""
    from sdcs_bench.agents.credentials import secret_values

    return write_tree(workdir, stage_dir / SNAPSHOT, caps=caps, secrets=secret_values() if secrets is None else secrets)


@timed("snapshot restore")
def restore_snapshot(stage_dir: Path, workdir: Path, *, caps: Caps | None = None) -> dict[str, Any]:
    """Restore a stage's snapshot into a fresh ``workdir`` (``restore_tree``: within the same caps, by
    directory descriptors, nothing made dense); the record of what was left out."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    return restore_tree(stage_dir / SNAPSHOT, workdir, caps=caps)


def snapshot_caps(trial: TrialSpec) -> Caps:
    """What one snapshot of the trial's sandbox may hold: the sandbox's own limits (``sandbox.limits``:
    ``disk`` in all, ``file_size`` a file, ``files`` entries), so a tree the session was allowed to
    make is archived whole, and restored whole."""
    from sdcs_bench.sandbox.limits import Limits

    limits = Limits.from_config(trial.sandbox_options.get("limits"))
    return Caps(total_bytes=limits.disk, file_bytes=limits.file_size, entries=limits.files)


def _clear_live(trial: TrialSpec) -> None:
    """The live sandbox (and the sessions' private HOMEs) exist only while a stage runs: once its
    snapshot is written, the next stage restores from that alone, so nothing lingers in the work root."""
    shutil.rmtree(trial.work_dir, ignore_errors=True)


def _begin(stage_dir: Path) -> None:
    """Start a stage: its directory exists, no temporary file of a killed earlier attempt stays, and
    no ``stage.json`` of an earlier run either: until this run writes its own, last, the stage is
    not done, whatever other outputs the directory holds."""
    stage_dir.mkdir(parents=True, exist_ok=True)
    (stage_dir / STAGE_FILE).unlink(missing_ok=True)
    remove_stale_temporaries(stage_dir)


def _predecessor(prev_stage: Path) -> list[Path]:
    """The files of the previous stage a stage is made from (the rules' ``previous`` and ``snapshot``)."""
    return [Path(prev_stage) / STAGE_FILE, Path(prev_stage) / SNAPSHOT]


@timed("record writing")
def _finish(stage_dir: Path, name: str, trial: TrialSpec, started: float, inputs: list[Path],
            **fields: Any) -> dict[str, Any]:
    """Write ``stage.json``, last: the stage is done. It records the SHA-256 of the trial file and of
    ``inputs`` (what the stage's rule gives it), so a copy of the results whose modification times
    were lost (``dvc pull``) can be shown up to date by content (:mod:`.freshness`)."""
    made_from = [trial.file, *inputs] if trial.file is not None else list(inputs)
    record = {
        "stage": name,
        "trial": trial.trial_id,
        "status": "done",
        "started": started,
        "finished": time.time(),
        "wall_s": round(time.time() - started, 3),
        "reference_policy": trial.is_reference,
        **fields,
        INPUTS_KEY: input_record(Path(trial_layout(stage_dir).run_dir), made_from),
    }
    atomic_write(stage_dir / STAGE_FILE, json.dumps(record, indent=2, default=str))
    return record


def run_scaffold_stage(trial: TrialSpec, stage_dir: Path) -> dict[str, Any]:
    from sdcs_bench.sandbox.scaffold import scaffold
    
    started = time.time()
    _begin(stage_dir)
    workdir = trial.sandbox_dir
    if workdir.exists():
        shutil.rmtree(workdir)
    caps = snapshot_caps(trial)
    meta = scaffold(trial.workload, trial.arm, workdir, trial.variant, withhold=trial.withhold_before_s1,
                    max_file_bytes=caps.file_bytes)
    write_snapshot(workdir, stage_dir, caps=caps)
    _clear_live(trial)
    atomic_write(stage_dir / MANIFEST, json.dumps(meta["manifest"], indent=2))
    extra = {"withheld": meta["withheld"]} if meta.get("withheld") else {}
    return _finish(stage_dir, "scaffold", trial, started, [], baseline_commit=meta["baseline_commit"], **extra)


def baseline_tokens(card: dict[str, Any]) -> int:
    """What a finished trial spent: its model tokens, or for a reference policy (which calls no
    model) the tokens its meter counted, summed over its sessions."""
    if card["tokens"].get("source") != "none" and card["tokens"].get("total"):
        return int(card["tokens"]["total"])
    return sum(int(s.get("meter_tokens") or 0) for s in card["diagnostics"]["sessions"])


def _resolve_cut(trial: TrialSpec, index: int, stage_dir: Path):
    """Session ``index`` of the trial, with an ``after_token_share:P`` rule resolved to
    ``after_tokens:T`` from the uninterrupted control's scorecard (and what it was resolved from)."""
    session = trial.schedule[index - 1]
    if not session.cleave.needs_baseline:
        return session, None
    control = (trial.raw.get("token_baseline") or {}).get("trial")
    if not control:
        raise SpecSnapError(f"trial {trial.trial_id}: its cut {session.cleave} needs the uninterrupted control's "
                            "tokens, and its trial file names no control; rerun `specsnap plan`")
    path = Path(TrialLayout(trial_layout(stage_dir).run_dir, control).file("score", SCORECARD))
    try:
        card = json.loads(path.read_text())
    except (OSError, ValueError):
        raise SpecSnapError(f"trial {trial.trial_id}: the control {control} has no scorecard yet ({path})") from None
    spent = baseline_tokens(card)
    rule = session.cleave.resolved(spent)
    return dataclasses.replace(session, cleave=rule), {"rule": str(session.cleave), "control": control,
                                                       "control_tokens": spent, "resolved": str(rule)}


def run_session_stage(trial: TrialSpec, index: int, prev_stage: Path, stage_dir: Path) -> dict[str, Any]:
    """Run one session from its predecessor's snapshot. An infrastructure failure (the harness died
    before its first model call; the provider was overloaded) is retried from the same snapshot
    with exponential backoff; whatever the agent itself did is data and is never retried. Each
    failed attempt's records are kept under ``attempts/N/``."""
    from sdcs_bench.agents.credentials import secret_values
    from sdcs_bench.coherence.session import ABSTENTION, EVENTS, RESIDENCY, WorkloadFacts, analyse_session, workspace_state
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.session.redact import redact_outputs
    from sdcs_bench.session.runner import run_session
    
    if not 1 <= index <= len(trial.schedule):
        raise SpecSnapError(f"trial {trial.trial_id} has {len(trial.schedule)} session(s), not {index}")
    started = time.time()
    _begin(stage_dir)
    retries, backoff = trial.session.infra_retries, trial.session.infra_backoff_s
    facts = WorkloadFacts.from_data(trial.session_coherence(index))  # bad coherence data fails here, before the session
    failed: list[dict[str, Any]] = []
    session, share = _resolve_cut(trial, index, stage_dir)
    handed = _handed_over(trial, index, prev_stage)
    if handed is not None and handed.get("context"):
        session = dataclasses.replace(session, prompt=prompt_with_context(session.prompt, trial.continuation.mode,
                                                                          handed["context"]))
    carry_in = Path(prev_stage) / CARRY if handed is not None and trial.continuation.carries_state else None
    continuation = _continuation(trial, index, handed)
    for attempt in range(retries + 1):
        restore_snapshot(prev_stage, trial.sandbox_dir, caps=snapshot_caps(trial))
        before = workspace_state(trial.sandbox_dir)
        record = run_session(
            trial_id=trial.trial_id,
            index=index,
            session=session,
            workload=trial.workload,
            arm=trial.arm,
            agent_cfg=trial.agent_for(index),
            workdir=trial.sandbox_dir,
            stage_dir=stage_dir,
            backend=make_backend(trial.backend, trial.sandbox_options),
            timeout_s=trial.session.timeout_s,
            keep_meter=bool(trial.raw.get("keep_meter")),
            continuation=continuation,
            carry_in=carry_in,
            carry_out=stage_dir / CARRY if trial.continuation.carries_state else None,
            seed=trial.seed,
            budget=_budget(stage_dir, trial, f"session_{index}"),
            # a later handoff's writer reads this session's own conversation (handoff.source)
            keep_conversation=(trial.continuation.is_written and index < len(trial.schedule)
                               and (trial.raw.get("continuation") or {}).get("source") == "conversation"),
        )
        if not record.get("infra_failure"):
            break
        failed.append({"attempt": attempt + 1, "infra_failure": record["infra_failure"], "status": record["status"]})
        _keep_attempt(stage_dir, attempt + 1)
        if attempt == retries:
            raise SpecSnapError(
                f"trial {trial.trial_id} session {index}: infrastructure failure after {retries + 1} attempt(s) "
                f"({record['infra_failure']}); records in {stage_dir / 'attempts'}; rerun to resume"
            )
        time.sleep(backoff * 2**attempt)
    record["infra_attempts"] = failed
    if share is not None:
        record["cleave"]["share"] = share
    if handed is not None:
        record["handoff"] = {"mode": str(trial.continuation), "from": handed["stage"],
                             "context_tokens": handed.get("context_tokens", 0)}
    # Every declared output exists: an empty ledger (no model was called), an empty diff (no cleave).
    atomic_write(stage_dir / CLEAVE_DIFF, record["cleave"].get("diff", "") if record["cleave"].get("fired") else "")
    (stage_dir / LEDGER).touch()
    coherence = analyse_session(
        harness=trial.agent_for(index).harness, stage_dir=stage_dir, run_id=f"{trial.trial_id}/session_{index}",
        workdir=trial.sandbox_dir.resolve(), before=before, after=workspace_state(trial.sandbox_dir), facts=facts,
        agent_written=_carried(prev_stage, "agent_written"), status=record["status"],
        import_roots=(trial.workload.import_root,), files_seen=_carried(prev_stage, "files_seen"),
        # a continuation: its writes on its clock, for the cost of resuming
        resume={"written": record.pop("written"), "calls": record["cleave"].get("counted"),
                "started": record["started_at"]} if "written" in record else None,
        # a resumed conversation (resume, compact): its records hold the earlier sessions' turns too
        since=record.get("started_at") if index >= 2 and trial.continuation.carries_state else None)
    if "resume" in coherence:
        record["resume"] = coherence.pop("resume")
    # No key reaches results/: what the stage wrote after the session's redaction pass, and the snapshot
    secrets = secret_values(trial.agent_for(index))
    coherence, leaks = redact_outputs(stage_dir, secrets, [CLEAVE_DIFF, EVENTS, RESIDENCY, ABSTENTION], coherence)
    record["snapshot"] = write_snapshot(trial.sandbox_dir, stage_dir, secrets=secrets, caps=snapshot_caps(trial))
    if record["snapshot"].get("limit") and not record.get("limit"):  # (a limit the session reached comes first)
        record["limit"] = {"reason": record["snapshot"]["limit"], "detail": record["snapshot"]["detail"]}
    record["credential_leak"] = sorted({*record.get("credential_leak", []), *leaks,
                                        *(f"tree:{p}" for p in record["snapshot"]["credential_leak"])})
    _clear_live(trial)
    handed_files = [Path(prev_stage) / CONTEXT, Path(prev_stage) / CARRY] if handed is not None else []
    return _finish(stage_dir, f"session_{index}", trial, started, [*_predecessor(prev_stage), *handed_files],
                   tokens=record["tokens"], session=record, coherence=coherence)


def _handed_over(trial: TrialSpec, index: int, prev_stage: Path) -> dict[str, Any] | None:
    """What the handoff stage before session ``index`` recorded (None under ``reset`` and for the
    first session), with the text it adds to the prompt."""
    if trial.continuation.is_reset or index < 2:
        return None
    record = json.loads((Path(prev_stage) / STAGE_FILE).read_text())
    if record.get("stage") != handoff_stage(index):
        raise SpecSnapError(f"trial {trial.trial_id}: session {index} continues by {trial.continuation}, so its "
                            f"predecessor must be {handoff_stage(index)}, not {record.get('stage')!r}; rerun `specsnap plan`")
    context = (Path(prev_stage) / CONTEXT).read_text() if trial.continuation.carries_text else ""
    handoff = record.get("handoff") or {}
    return {"stage": record["stage"], "context": context, "context_tokens": handoff.get("context_tokens", 0),
            "session_id": handoff.get("session_id"), "carried": bool((handoff.get("carried") or {}).get("files"))}


def _continuation(trial: TrialSpec, index: int, handed: dict[str, Any] | None) -> dict[str, Any] | None:
    """What session ``index`` is told of the continuation, with the id its harness resumes. When the
    session before left no state (it crashed, or was stopped, before its harness saved any), there
    is nothing to resume: the session starts a conversation of its own, and says why."""
    cont = trial.session_continuation(index)
    if cont is None or handed is None or not trial.continuation.carries_state:
        return cont
    if not handed["carried"]:
        return {**cont, "resume": False, "not_resumed": "the previous session left no state to resume"}
    return {**cont, **({"session_id": handed["session_id"]} if handed.get("session_id") else {})}


def _carried(prev_stage: Path, key: str) -> list[str]:
    """What earlier sessions of the trial leave the next one in their stage records (a session's,
    or the injection's, which passes its predecessor's on): ``agent_written``, the paths the agent
    wrote; ``files_seen``, the files its sessions read or wrote. Nothing after the scaffold."""
    record = json.loads((Path(prev_stage) / STAGE_FILE).read_text())
    return list((record.get("coherence") or {}).get(key) or [])


def _keep_attempt(stage_dir: Path, attempt: int) -> None:
    keep = stage_dir / "attempts" / str(attempt)
    keep.mkdir(parents=True, exist_ok=True)
    for path in stage_dir.iterdir():
        if (path.is_file() or (path.is_dir() and path.name != "attempts")) and path.name not in (STAGE_FILE, SNAPSHOT):
            path.replace(keep / path.name)


def run_inject_stage(trial: TrialSpec, prev_stage: Path, stage_dir: Path) -> dict[str, Any]:
    """Between two sessions, plant the workload's poison pill (docs/protocol.md) or withhold its
    authored facts (docs/coherence.md). The record stays in this stage's directory, outside the
    sandbox: the next session sees only the files."""
    from sdcs_bench.sandbox.poison import inject
    from sdcs_bench.sandbox.withhold import withhold

    if trial.injection is None:
        raise SpecSnapError(f"trial {trial.trial_id}: its variant {trial.variant.name!r} injects nothing "
                            "between sessions")
    started = time.time()
    _begin(stage_dir)
    restore_snapshot(prev_stage, trial.sandbox_dir, caps=snapshot_caps(trial))
    if trial.injection.withhold:
        spec = trial.injection.withhold
        record = withhold(trial.workload, trial.sandbox_dir, int(spec["k"]), str(spec["mode"]))
    else:
        record = inject(trial.workload, trial.sandbox_dir, trial.injection.poison)
    write_snapshot(trial.sandbox_dir, stage_dir, caps=snapshot_caps(trial))
    _clear_live(trial)
    return _finish(stage_dir, "inject", trial, started, _predecessor(prev_stage), injection=record,
                   coherence={k: _carried(prev_stage, k) for k in ("agent_written", "files_seen")})  # passed on


def _budget(stage_dir: Path, trial: TrialSpec, stage: str) -> Budget:
    """The run's budget (docs/cost.md), as this stage sees it: results/<run>/trials/<trial>/<stage>."""
    from sdcs_bench.session.budget import Budget
    
    return Budget(Path(stage_dir).resolve().parents[2], trial.trial_id, stage)


def run_handoff_stage(trial: TrialSpec, index: int, prev_stage: Path, stage_dir: Path, *,
                      session_stages: list[Path] | None = None) -> dict[str, Any]:
    """Between session ``index - 1`` (or the injection after it) and session ``index``: hand the work
    over by the trial's continuation mode (docs/protocol.md#continuation-modes), recording exactly
    what crosses: the text the next prompt carries (``context.md``: a trace, a summary, rendered
    notes), the harness state the next HOME gets (``carry.tar.gz``: a conversation, compacted or
    not), and what it cost (``ledger.jsonl``: the writer's model call). The sandbox passes through unchanged.
    ``session_stages``: the stage directories of sessions 1 .. index-1 (default: the trial's layout)."""
    from sdcs_bench.agents.continuation import compact_state
    from sdcs_bench.coherence.conversation import CONVERSATION
    from sdcs_bench.coherence.session import EVENTS
    from sdcs_bench.coherence.trace import render_trace
    from sdcs_bench.session.budget import REASON as BUDGET_EXHAUSTED
    from sdcs_bench.session.carry import read_state, write_state

    cont = trial.continuation
    if cont.is_reset or not 2 <= index <= len(trial.schedule):
        raise SpecSnapError(f"trial {trial.trial_id} has no handoff before session {index} (its continuation is "
                            f"{cont}, its sessions 1..{len(trial.schedule)})")
    started = time.time()
    _begin(stage_dir)
    layout = trial_layout(stage_dir)
    sessions = session_stages or [Path(layout.stage_dir(f"session_{j}")) for j in range(1, index)]
    previous = sessions[-1]
    prev_record = json.loads((previous / STAGE_FILE).read_text())
    agent = trial.agent_for(index - 1)  # whose session is handed over (a summary: its own model's)
    context, record = "", {"mode": str(cont), "context_tokens": 0}
    (stage_dir / LEDGER).write_text("")
    files: dict[str, bytes] = {}  # the harness state the next HOME gets (none but in resume, compact)
    if cont.mode == "trace":
        context, kept = render_trace([_session_trace(p) for p in sessions], int(cont.budget))
        record["trace"] = kept
    elif cont.is_written:
        context, record[cont.mode] = _written_handoff(trial, index, stage_dir, previous, agent)
        if BUDGET_EXHAUSTED in record[cont.mode]:  # the run's budget: the trial stops here, to be continued
            record[BUDGET_EXHAUSTED] = record[cont.mode].pop(BUDGET_EXHAUSTED)
    else:  # resume, compact: the harness's own state, as the previous session left it
        files = read_state(previous / CARRY)
        if cont.mode == "compact" and agent.reference:
            compacted = {}
            for rel, data in files.items():
                compacted[rel], record["compaction"] = compact_state(trial.workload, data)
            files = compacted
        elif cont.mode == "compact":
            record["compaction"] = {"by": "harness", "in": f"session_{index}"}  # forced there: its own stream says
        # the id its harness gave the conversation (the next session resumes it by this id)
        record["session_id"] = ((prev_record.get("session") or {}).get("continuation") or {}).get(
            "carried_out", {}).get("session_id")
    record["carried"] = write_state(files, stage_dir / CARRY)
    record["context_tokens"] = count_tokens(context)
    atomic_write(stage_dir / CONTEXT, context)
    shutil.copyfile(Path(prev_stage) / SNAPSHOT, stage_dir / SNAPSHOT)
    inputs = [*_predecessor(prev_stage), *(p / STAGE_FILE for p in sessions), *(p / EVENTS for p in sessions),
              *([previous / CARRY] if cont.carries_state else []),
              *([previous / CONVERSATION] if (previous / CONVERSATION).is_file() and cont.is_written else [])]
    return _finish(stage_dir, handoff_stage(index), trial, started, inputs, handoff=record,
                   previous_status=(prev_record.get("session") or {}).get("status"),
                   coherence={k: _carried(prev_stage, k) for k in ("agent_written", "files_seen")})  # passed on


def _session_trace(stage: Path) -> SessionTrace:
    """A finished session as the trace renders it: its events, how it ended, its closing message."""
    from sdcs_bench.coherence.events import read_events
    from sdcs_bench.coherence.session import EVENTS
    from sdcs_bench.coherence.trace import SessionTrace
    
    record = json.loads((Path(stage) / STAGE_FILE).read_text())
    return SessionTrace(int(record["session"]["index"]), str(record["session"]["status"]),
                        [e.to_dict() for e in read_events(Path(stage) / EVENTS)],
                        ((record.get("coherence") or {}).get("events") or {}).get("final_message"))


def _written_handoff(trial: TrialSpec, index: int, stage_dir: Path, previous: Path,
                     agent: AgentConfig) -> tuple[str, dict[str, Any]]:
    """A summary or notes on session ``index - 1`` (``previous``): the text the next prompt carries and
    the handoff's record: who wrote it (the policy handed over, its own summariser; else the model
    of ``handoff.writer`` or of the session), from what (its trace, or its conversation), the call's
    cost, and for notes whether they keep the schema (invalid notes carry nothing, and say why)."""
    from sdcs_bench.agents.continuation import policy_notes, policy_summary
    from sdcs_bench.coherence.conversation import conversation_lines, events_after, read_conversation
    from sdcs_bench.coherence.trace import event_line, keep_from_end, render_lines
    from sdcs_bench.session.budget import REASON as BUDGET_EXHAUSTED
    from sdcs_bench.session.handoff import model_summary
    from sdcs_bench.trial import notes as notes_schema
    from sdcs_bench.trial.components import AgentConfig

    cont, block = trial.continuation, trial.raw.get("continuation") or {}
    prompt = block.get(f"{cont.mode}_prompt")
    if not prompt:
        raise SpecSnapError(f"trial {trial.trial_id}: its trial file carries no {cont.mode} prompt; rerun `specsnap plan`")
    budget_tokens = int(prompt["transcript_tokens"])
    trace = _session_trace(previous)
    # (a reference policy has no conversation of its own: its summariser reads its trace)
    source = "trace" if agent.reference else block.get("source", "trace")
    if source == "conversation":
        request, at = read_conversation(previous)
        if request is None:
            raise SpecSnapError(f"trial {trial.trial_id} {handoff_stage(index)}: session {index - 1} kept no "
                                f"conversation ({previous}/conversation.json): it made no model call, or ran before "
                                "handoff.source was conversation; rerun it")
        then = [line for line in map(event_line, events_after(list(trace.events), at)) if line]
        kept, read = keep_from_end(conversation_lines(request, trace.final_message, then), budget_tokens)
    else:
        kept, read = keep_from_end(render_lines([trace]), budget_tokens)
    transcript = "\n".join(kept)
    if agent.reference:  # its own summariser
        if cont.mode == "summary":
            context, cost = policy_summary(trial.workload, list(trace.events), transcript)
            written = {**cost, "source": "trace"}
        else:
            notes, cost = policy_notes(trial.workload, trace, transcript)
            context = notes_schema.render(notes)
            written = {**cost, "source": "trace", "valid": True, "notes": notes}
        return context, {**written, "writer": {"agent": agent.name, "kind": agent.kind},
                         "prompt_version": prompt["version"], "text_tokens": count_tokens(context)}
    writer = AgentConfig.of(block["writer"]) if block.get("writer") else agent
    atomic_write(stage_dir / WRITER_INPUT, transcript)  # exactly what the writer was given
    reply, cost = model_summary(writer, system=prompt["system"], transcript=transcript, stage_dir=stage_dir,
                                key=handoff_stage(index), timeout_s=trial.session.timeout_s,
                                budget=_budget(stage_dir, trial, handoff_stage(index)))
    written = {**cost, "source": source, "writer": {"agent": writer.name, "kind": writer.kind,
                                                   "harness": writer.harness, "model": writer.model},
               "prompt_version": prompt["version"], "transcript": read}
    if (cost.get("budget") or {}).get("refused"):
        return "", {**written, BUDGET_EXHAUSTED: cost["budget"]["refused"], "text_tokens": 0}
    if cost.get("infra_failure") or cost["status"] != 200 or not reply.strip():
        why = cost.get("infra_failure") or (f"the {cont.mode} call answered {cost['status']}" if cost["status"] != 200
                                            else f"the {cont.mode} call answered no text")
        raise SpecSnapError(f"trial {trial.trial_id} {handoff_stage(index)}: {why} (records in {stage_dir}); a "
                            f"{cont.mode} continuation never goes on without its writer's answer; rerun to retry")
    context = reply
    if cont.mode == "notes":  # untrusted text: kept as it came, carried only when it keeps the schema
        atomic_write(stage_dir / NOTES_REPLY, reply)
        notes, problem = notes_schema.parse(reply)
        context = notes_schema.render(notes) if notes is not None else ""
        written.update({"valid": notes is not None, "notes": notes, "problem": problem, "schema": notes_schema.VERSION})
    return context, {**written, "text_tokens": count_tokens(context)}


def _withholds(injection: dict[str, Any] | None) -> bool:
    return bool(injection) and "mode" in injection and "withheld" in injection


def withhold_report(trial: TrialSpec, card: dict[str, Any]) -> dict[str, Any] | None:
    """A withholding trial's scorecard section (docs/coherence.md): what was withheld, when, and the
    tests passed per motif, withheld or not. None for a trial that withholds nothing."""
    from sdcs_bench.sandbox.withhold import variant_withholding

    found = variant_withholding(trial.variant)
    facts = trial.workload.facts
    if found is None or facts is None:
        return None
    spec, after = found
    paths = facts.withheld_secrets(int(spec["k"]))
    per_motif = {}
    for m in facts.motifs:
        tests = trial.workload.requirement(m.id).tests
        per_motif[m.id] = {"withheld": m.secret in paths, "tests_passed": sum(card["tests"].get(t, False) for t in tests)}
    return {"k": int(spec["k"]), "mode": spec["mode"],
            "when": "before session 1" if after is None else f"after session {after}",
            "withheld": list(paths), "motifs": [facts.motif(p).id for p in paths], "per_motif": per_motif}


def stage_inputs(trial: TrialSpec, stage_dir: Path) -> tuple[list[Path], Path | None]:
    """The score stage's inputs in the trial's layout: every session's stage record and the injection
    record (when the trial has one). The pipeline passes them explicitly; this is for by-hand use."""
    layout = trial_layout(stage_dir)
    sessions = [Path(layout.stage_json(s)) for s in trial.stages if s.startswith("session_")]
    injection = Path(layout.stage_json("inject")) if "inject" in trial.stages else None
    return sessions, injection


def _final_lines(tree: Path, rel: str) -> set[str] | None:
    """A file's lines at the trial's end (read without following a link), None when it is not there."""
    from sdcs_bench.coherence.resume import READ_LIMIT, line_set
    
    try:
        data = safefs.read_file(tree, rel, limit=READ_LIMIT)
    except OSError:
        return None
    return line_set(data) if data is not None else None


def handoff_report(trial: TrialSpec, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A continuation trial's handoffs on its scorecard: the mode, each handoff's record (what crossed,
    the context's tokens), and what they cost together (a summary's or notes' model calls and tokens,
    separate from the sessions' own: a reference policy's summariser counts on its meter); for the
    written modes, who wrote them from what, and for notes how many failed the schema."""
    calls = tokens = 0
    written = [(r.get("handoff") or {}).get(trial.continuation.mode) or {} for r in records] \
        if trial.continuation.is_written else []
    for w in written:
        calls += int(w.get("calls") or 0)
        spent = w.get("tokens") or {}
        tokens += int(spent.get("total") if "total" in spent else spent.get("meter") or 0)
    report = {"mode": str(trial.continuation), "calls": calls, "tokens": tokens,
              "handoffs": [{"stage": r["stage"], **(r.get("handoff") or {})} for r in records]}
    if written:
        report["writers"] = sorted({str((w.get("writer") or {}).get("agent")) for w in written if w.get("writer")})
        report["source"] = ",".join(sorted({str(w.get("source")) for w in written if w.get("source")}))
    if trial.continuation.mode == "notes":
        report["invalid_notes"] = sum(1 for w in written if w and not w.get("valid", True))
    return report


def _handoff_records(trial: TrialSpec, stage_dir: Path) -> list[Path]:
    layout = trial_layout(stage_dir)
    return [Path(layout.stage_json(s)) for s in trial.stages if s.startswith("handoff_")]


def run_score_stage(trial: TrialSpec, prev_stage: Path, stage_dir: Path, *, session_records: list[Path] | None = None,
                    injection_record: Path | None = None, handoff_records: list[Path] | None = None) -> dict[str, Any]:
    """Score the last snapshot. Session records are read from the session stages (outside the
    sandbox: a later session's agent can rewrite anything inside it, its ``.git`` included)."""
    from sdcs_bench.agents.expectations import expected_reference_score
    from sdcs_bench.coherence.abstention import trial_class
    from sdcs_bench.coherence.resume import resume_report
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.scoring import score_sandbox
    from sdcs_bench.scoring.scorer import trial_limit
    from sdcs_bench.scoring.sentinels import SentinelSettings
    from sdcs_bench.session.budget import REASON as BUDGET_EXHAUSTED
    from sdcs_bench.trial.standards import layout_for
    
    started = time.time()
    _begin(stage_dir)
    if session_records is None:
        session_records, injection_record = stage_inputs(trial, stage_dir)
    if handoff_records is None:  # (every handoff of a continuation trial: none under reset)
        handoff_records = _handoff_records(trial, stage_dir)
    stage_records = [json.loads(Path(p).read_text()) for p in session_records]
    records = [r["session"] for r in stage_records]
    sessions_abstention = [(r.get("coherence") or {}).get("abstention") for r in stage_records]
    injection = json.loads(Path(injection_record).read_text())["injection"] if injection_record else None
    if (injection is None) != (trial.injection is None):
        raise SpecSnapError(f"trial {trial.trial_id}: its variant {'injects' if trial.injection else 'injects nothing'} "
                            "between sessions, but the score stage was given "
                            f"{'no' if injection is None else 'an'} injection record")
    tokens = TokenUsage(source="none")
    for rec in records:
        tokens = tokens + TokenUsage.from_dict(rec["tokens"])
    with tempfile.TemporaryDirectory(prefix="specsnap-final-") as tmp:
        final = Path(tmp) / "sandbox"
        restore_snapshot(prev_stage, final, caps=snapshot_caps(trial))
        card = score_sandbox(
            trial.workload, final, tokens=tokens, arm=trial.arm,
            backend=make_backend(trial.backend, trial.score_sandbox_options),
            timeout_s=trial.scoring_timeout_s, injection=injection if not _withholds(injection) else None,
            sessions=records, sentinels=SentinelSettings.from_config(trial.scoring_sentinels),
            layout=layout_for(trial.workload, trial.variant),
        )
        resume = resume_report(records, lambda rel: _final_lines(final, rel))
    expected = expected_reference_score(trial.workload, trial.arm, trial.agent, trial.variant, successor=trial.successor,
                                        continuation=trial.raw.get("continuation"), seed=trial.seed)
    card = {**trial.labels(), **card, "withhold": withhold_report(trial, card),
            "abstention": {"trial": trial_class(sessions_abstention), "sessions": sessions_abstention},
            "resume": resume, "expected": expected,
            # a session the run's budget refused a call (docs/cost.md): neither the agent's failure nor a result
            # a session a limit ended (its memory, processes, disk, output...): counted apart, in no mean
            "limit_exceeded": trial_limit(records),
            "budget_exhausted": any(r.get("status") == BUDGET_EXHAUSTED for r in records) or any(
                BUDGET_EXHAUSTED in (json.loads(Path(p).read_text()).get("handoff") or {}) for p in handoff_records)}
    if not trial.continuation.is_reset:
        card["handoff"] = handoff_report(trial, [json.loads(Path(p).read_text()) for p in handoff_records])
    atomic_write(stage_dir / SCORECARD, json.dumps(card, indent=2))
    made_from = [*_predecessor(prev_stage), *map(Path, session_records),
                 *([Path(injection_record)] if injection_record else []), *map(Path, handoff_records)]
    return _finish(stage_dir, "score", trial, started, made_from, net=card["net"], raw=card["raw"], valid=card["valid"],
                   tampered=card["tampered"])
