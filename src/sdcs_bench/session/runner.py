"""Run one session of one trial in a live sandbox (docs/protocol.md): leak check, private HOME, the
agent's process group under the cleave controller, and the session record."""

from __future__ import annotations

import json
import os
import posixpath
import select
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sdcs_bench.agents import SessionContext, make_harness
from sdcs_bench.agents.credentials import api_key, new_session_token, proxy_mode, secret_values
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.components import AgentConfig
from sdcs_bench.session.cleave import CleaveController
from sdcs_bench.session.integrity import known_commits, qualifying_state, session_integrity
from sdcs_bench.sandbox.guard import exempt_patterns
from sdcs_bench.sandbox.guard_install import (VERIFY_COMMAND, install_guard, judge_verify, set_guard, verify_guard,
                                              verifying)
from sdcs_bench.core import safefs
from sdcs_bench.core.gitutil import GitError, RepoView, head
from sdcs_bench.sandbox.leakcheck import leak_check
from sdcs_bench.session.memory_files import git_configuration, repo_memory_changes, repo_state, state_changes
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import project_root
from sdcs_bench.proxy import INFRA_STATUSES, ModelProxy, ReplayScript
from sdcs_bench.session.budget import REASON as BUDGET_EXHAUSTED, Budget
from sdcs_bench.sandbox.records import remember_session
from sdcs_bench.session.carry import pack_state, unpack_state
from sdcs_bench.session.redact import redact_session
from sdcs_bench.session.resources import Monitor, Stopper, pump
from sdcs_bench.sandbox.environment import environment_access, with_environment
from sdcs_bench.sandbox.base import SANDBOX_MARKER, Backend, base_env, kill_group, kill_marked, sandbox_marker
from sdcs_bench.sandbox.limits import Limits
from sdcs_bench.trial.workload_model import SessionSpec, Workload
from sdcs_bench.core.timing import span, timed
from sdcs_bench.coherence.conversation import CONVERSATION

LIMIT = "limit"  # a session's status when a limit ended it (docs/sandboxes.md)


def run_session(
    *,
    trial_id: str,
    index: int,
    session: SessionSpec,
    workload: Workload,
    arm: Arm,
    agent_cfg: AgentConfig | dict[str, Any],
    workdir: Path,
    stage_dir: Path,
    backend: Backend,
    timeout_s: float,
    keep_meter: bool = False,
    continuation: dict[str, Any] | None = None,
    carry_in: Path | None = None,
    carry_out: Path | None = None,
    seed: int = 0,
    budget: Budget | None = None,
    keep_conversation: bool = False,
) -> dict[str, Any]:
    """Run one session. A reference policy's meter is counted under a token or turn cut rule, in
    every continuation (for the cost of resuming), and with ``keep_meter`` (the uninterrupted
    control a share rule is measured against); otherwise its meter files are left uncounted
    (tokenizing them costs a session a tokenizer's load).

    ``continuation`` (the modes that carry the harness's own state, docs/protocol.md): the
    conversation's id and whether it is resumed. ``carry_in``: the state an earlier session left,
    unpacked into the fresh HOME before the harness starts; ``carry_out``: where the state this
    session's conversation needs is written (exactly the files the harness names) when it ends.
    ``keep_conversation``: the last model request the session made is kept as ``conversation.json``
    (a handoff writer reads it, ``handoff.source: conversation``)."""
    workdir = workdir.resolve()
    stage_dir.mkdir(parents=True, exist_ok=True)
    agent_cfg = AgentConfig.of(agent_cfg)
    harness = make_harness(agent_cfg)
    key = api_key(agent_cfg) if harness.needs_model else None  # a missing key fails here, before anything ran
    # The harness never holds the key: a stand-in token of this session's, which its proxy alone
    # accepts and swaps for the key upstream (docs/agents.md#the-model-proxy).
    token = new_session_token() if harness.needs_model else None
    script = _replay_script(agent_cfg) if harness.needs_model and proxy_mode(agent_cfg) == "replay" else None
    # A fresh private HOME beside the sandbox, at a fixed path: a rerun after a kill replaces the
    # one the killed session left (and kills any process of that session still running).
    home = workdir.parent / f"home-{index}"
    leftovers = kill_marked(sandbox_marker(workdir))
    backend.reap(workdir)  # a container a killed run left
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    try:
        placed = unpack_state(carry_in, home) if carry_in is not None else None
        if continuation is not None:
            continuation = {**continuation, "carried_in": placed}
        ctx = SessionContext(trial_id, index, session, workload, arm, workdir, home, stage_dir, api_key=token,
                             continuation=continuation, seed=seed)
        record = _run(ctx, harness, backend, timeout_s, script, keep_meter, budget,
                      credential=key if harness.needs_model and proxy_mode(agent_cfg) == "forward" else None,
                      keep_conversation=keep_conversation)
        if continuation is not None:
            record["continuation"] = dict(continuation)
            if continuation.get("mode") == "compact" and continuation.get("resume"):
                record["continuation"]["compaction"] = harness.compaction(ctx)  # (None: its records show none)
        if carry_out is not None:
            record.setdefault("continuation", {})["carried_out"] = {
                "session_id": harness.session_id(ctx), **pack_state(home, harness.carried_state(ctx), carry_out)}
    finally:
        shutil.rmtree(home, ignore_errors=True)
    record["leftover_processes_killed"] = leftovers
    secrets = secret_values(agent_cfg)
    # The record (e.g. a key the agent wrote into a file is in the cleave diff), the stage's files, the
    # tree outside .git and the carried state, in every encoding the scanner knows: ``credential_leak``
    record = redact_session(stage_dir, workdir, secrets, record, carry=carry_out)
    remember_session(workdir, record)
    return record


def _replay_script(agent: AgentConfig) -> ReplayScript:
    """The agent's replay script: the content a trial file carries, else the file it names."""
    rel = agent.replay_script
    if not rel:
        raise SpecSnapError(f"agent {agent.name!r} runs in replay mode but names no replay_script")
    if agent.replay_script_data is not None:
        return ReplayScript.from_data(agent.replay_script_data, Path(rel))
    path = Path(rel) if Path(rel).is_absolute() else project_root() / rel
    return ReplayScript.load(path)


def _proxy(ctx: SessionContext, harness, controller: CleaveController, script: ReplayScript | None,
           budget: Budget | None, credential: str | None, limits: Limits) -> ModelProxy:
    """The session's proxy: only its provider's model calls, only with its stand-in token (the
    harness's ``api_key``), the real key put in upstream (forward mode), bounded by ``limits``."""
    cfg = harness.cfg
    # SPECSNAP_PROXY_DUMP=DIR keeps every request body (never headers) for writing a new adapter.
    dump = Path(os.environ["SPECSNAP_PROXY_DUMP"]) / f"session_{ctx.index}" if os.environ.get("SPECSNAP_PROXY_DUMP") else None
    budgeted = budget is not None and budget.active
    # Every call asks the cleave controller first, then the run's budget (docs/cost.md): either refuses.
    refusal = (lambda: controller.refusal() or budget.refusal()) if budgeted else controller.refusal
    common = {"ledger": ctx.stage_dir / "ledger.jsonl", "refusal": refusal, "dump_dir": dump,
              "on_answered": lambda tokens, seq, at: controller.count_call(tokens, seq=seq, at=at),
              "provider": cfg.provider, "session_token": ctx.api_key,
              "max_body_bytes": limits.request_body, "max_requests_per_minute": limits.requests_per_minute}
    if script is not None:
        proxy = ModelProxy(mode="replay", model=str(cfg.model or script.model),
                           script=script.for_session(ctx.index, {"workdir": str(ctx.workdir)}), **common)
    else:
        upstreams = {cfg.provider: str(cfg.endpoint)} if cfg.endpoint else None
        proxy = ModelProxy(mode="forward", upstreams=upstreams, credential=credential, **common)
    if budgeted:  # every answered call's cost goes to the run's spend ledger
        counted = proxy.on_answered

        def answered(tokens: int, seq: int, at: float) -> None:
            counted(tokens, seq, at)
            budget.charge(proxy.ledger.rows[seq - 1])

        proxy.on_answered = answered
    return proxy


def _run(ctx: SessionContext, harness, backend: Backend, timeout_s: float, script: ReplayScript | None,
         keep_meter: bool = False, budget: Budget | None = None, credential: str | None = None,
         keep_conversation: bool = False) -> dict[str, Any]:
    exempt = exempt_patterns(ctx.workload.protected, ctx.arm.memory_files)
    leak, guard = _leak_check_and_guard(ctx, backend, exempt)
    with span("cleave bookkeeping"):
        start_head = _head(ctx.workdir)
        commits_before = known_commits(ctx.workdir)
        before = repo_state(ctx.workdir)
        config_before = git_configuration(ctx.workdir)
        # A continuation session (every session after the first) records its writes and its calls, for
        # the cost of resuming (coherence/resume.py): each file's content at the start is read once.
        continuation = ctx.index > 1
        start_contents: dict[str, bytes | None] | None = {} if continuation else None
        qualifying_before = qualifying_state(ctx.workdir, exempt, contents=start_contents)
    controller = CleaveController(ctx.workdir, ctx.session.cleave, exempt, kill_grace_s=harness.stop_grace_s,
                                  meter_files=harness.meters_itself and (ctx.session.cleave.metered or keep_meter
                                                                         or continuation),
                                  record_writes=start_contents, max_watches=backend.limits.watches)
    proxy = (_proxy(ctx, harness, controller, script, budget, credential, backend.limits).start()
             if harness.needs_model else None)
    if proxy is not None:
        ctx = replace(ctx, endpoint=proxy.url)
    try:
        record = _spawn_and_wait(ctx, harness, backend, timeout_s, controller, start_head, commits_before, exempt,
                                 qualifying_before, guard)
    finally:
        if proxy is not None:
            proxy.stop()
    if keep_conversation and proxy is not None and proxy.last_request is not None:
        (ctx.stage_dir / CONVERSATION).write_text(json.dumps({"at": proxy.last_request_at, "request": proxy.last_request}))
    if controller.written is not None:
        record["written"] = controller.written_record()
    record["leak_check"] = leak
    record["guard"] = guard
    # The harness's own records (transcript, rollout, chat files) leave the private HOME before it
    # is deleted: the session's event stream is read from them (sdcs_bench.coherence).
    with span("session instruments"):
        record["harness_records"] = harness.keep_records(ctx)
        record["repo_memory_files"] = repo_memory_changes(before, repo_state(ctx.workdir), harness.repo_memory_globs,
                                                          ctx.arm.memory_files)
        # Hooks and git configuration the agent left survive into the next session (where they run
        # only inside its sandbox; the host never runs them): listed, as what survived.
        record["git_configuration"] = state_changes(config_before, git_configuration(ctx.workdir))
    native = harness.usage(ctx, ctx.stage_dir / "transcript.jsonl")
    if proxy is not None:
        rows = proxy.ledger.rows
        tokens = proxy.ledger.totals()
        record["tokens"] = tokens.to_dict()
        record["tokens_native"] = native.to_dict() if native is not None else None
        record["tokens_native_minus_proxy"] = native.total - tokens.total if native is not None else None
        record["model_calls"] = sum(1 for r in rows if r.get("kind") == "generate" and not r.get("refused"))
        record["turns"] = record["model_calls"]  # one definition for every harness: answered model calls
        record["model_calls_refused"] = sum(1 for r in rows if r.get("refused"))
        record["proxy_mode"] = proxy.mode
        record["infra_failure"] = _infra_failure(record, rows)
        if budget is not None and budget.active:
            record["budget"] = budget.record()
            if budget.refused is not None:  # refused a call for the budget: stopped by us, never retried
                record["status"], record["infra_failure"] = BUDGET_EXHAUSTED, None
    else:
        record["tokens"] = native.to_dict()
        record["infra_failure"] = None
    return record


def _leak_check_and_guard(ctx: SessionContext, backend: Backend, exempt) -> tuple[dict[str, Any], dict[str, Any]]:
    """Before every session: the leak check (what a resume carried into the HOME is checked as the
    sandbox is: no hidden test, no canary), and the git guard put back as SpecSnap made it (an
    earlier session may have replaced, unlinked or disabled it) and, before a cleaved session,
    verified inside the sandbox: that git runs it. With an isolating backend the guard's check runs
    in the leak probe's sandbox, after the probe (one sandbox start for both). A guard that cannot
    be verified is recorded, and the session's integrity check fails (the trial is never valid)."""
    guard = _install_guard(ctx, exempt)
    verify = ctx.session.cleave.active and guard["reinstalled"]
    env = {**base_env(ctx.home), SANDBOX_MARKER: sandbox_marker(ctx.workdir)}
    carried = (ctx.continuation or {}).get("carried_in") or ()
    if not (verify and backend.isolated):
        leak = leak_check(ctx.workdir, ctx.home, ctx.workload, backend, carried=carried)
        if verify:
            with span("guard"):
                guard.update(verify_guard(ctx.workdir, ctx.home, backend, env))
        return leak, guard
    with verifying(ctx.workdir):
        leak = leak_check(ctx.workdir, ctx.home, ctx.workload, backend, carried=carried, then=VERIFY_COMMAND, env=env)
        code, said = leak.pop("then")
        with span("guard"):
            guard.update(judge_verify(ctx.workdir, ctx.home, backend, env, code, said))
    return leak, guard


@timed("guard")
def _install_guard(ctx: SessionContext, exempt) -> dict[str, Any]:
    try:
        repaired = install_guard(ctx.workdir, exempt)
    except (GitError, OSError) as exc:
        return {"reinstalled": False, "verified": False, "problem": f"the guard could not be installed: {exc}"}
    return {"reinstalled": True, "repaired": repaired}


def _infra_failure(record: dict[str, Any], rows: list[dict[str, Any]]) -> str | None:
    """Why this session failed for reasons outside the agent (retried), or None (its behaviour: kept).

    - the harness exited non-zero before its first model call reached the proxy;
    - its last model call ended in a provider error (rate limit, overload, 5xx, unreachable).
    A cleaved or timed-out session, or one a limit ended (its own memory, processes, disk, output),
    is never an infrastructure failure: what the agent did is kept, never retried."""
    if record["status"] in ("cleaved", "timeout", LIMIT):
        return None
    calls = [r for r in rows if r.get("kind") == "generate" and not r.get("refused")]
    if not calls:
        return "crashed before its first model call" if record["status"] == "crashed" else None
    last = calls[-1]
    if last.get("status") in INFRA_STATUSES or last.get("upstream_error"):
        return f"provider error {last.get('status')} on the last model call"
    return None


@dataclass
class _Exit:
    """How the agent's process ended."""

    code: int
    timed_out: bool
    began: float  # wall-clock time the agent was started
    at: float  # wall-clock time the process was gone
    wall_s: float
    escaped: list[int]  # processes that had left its group, killed by the sandbox marker
    limit: dict[str, str] | None = None  # the limit that ended it (``limit: <reason>``)
    limits: dict[str, Any] | None = None  # what was set, what the kernel enforced, the peaks seen


@timed("agent process")
def _run_agent(ctx: SessionContext, invocation, backend: Backend, timeout_s: float,
               controller: CleaveController) -> _Exit:
    """Start the agent as one process group under the cleave controller and the session's limits,
    hand it its input, stream its output to disk (capped), wait for it (or its timeout, or the first
    limit it hits), and make sure nothing it started outlives it."""
    marker = sandbox_marker(ctx.workdir)
    python, readable = environment_access(ctx.workload.environment_dir)  # a real repository's own Python
    env = {**with_environment(base_env(ctx.home), python), **invocation.env, SANDBOX_MARKER: marker}
    t0 = time.monotonic()
    timed_out = False
    pumps: list = []
    monitor = None
    with (ctx.stage_dir / "transcript.jsonl").open("wb") as out, (ctx.stage_dir / "agent.stderr.log").open("wb") as err:
        with span("cleave watcher"):
            controller.start()
        began = time.time()  # (the watcher is in place: the agent starts now)
        proc = None
        stopper = Stopper(lambda: kill_group(proc.pid) if proc is not None else None)
        try:
            proc = backend.spawn(
                invocation.argv, workdir=ctx.workdir, home=ctx.home, env=env, network=invocation.network,
                ro_binds=[*invocation.ro_binds, *readable], ports=_ports(ctx.endpoint),
                stdin=subprocess.PIPE if invocation.stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
            cap = backend.limits.output
            pumps = [pump(proc.stdout, out, cap, stopper, "stdout"), pump(proc.stderr, err, cap, stopper, "stderr")]
            monitor = Monitor(backend, ctx.workdir, ctx.home, proc.pid, stopper,
                              extra=lambda: getattr(controller, "limit", None)).start()
            controller.attach(proc.pid, reap=lambda: backend.reap(ctx.workdir))
            if invocation.stdin is not None:
                try:
                    proc.stdin.write(invocation.stdin)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass  # the agent was already stopped (or never read its input)
            try:
                code = _wait_exit(proc, timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc.pid)
                code = proc.wait()
            at = time.time()
            with span("process cleanup"):
                kill_group(proc.pid)  # nothing the agent started may outlive its session...
        finally:
            with span("cleave watcher"):
                controller.stop()
            with span("process cleanup"):
                if monitor is not None:
                    monitor.stop()  # (a last look at what the kernel stopped, before the cgroups go)
                escaped = kill_marked(marker)  # ...not even what left its process group
                backend.reap(ctx.workdir)  # (then its cgroups emptied and its tree handed back: nothing runs in it)
                for thread in pumps:  # (every writer of the pipes is gone: they end)
                    thread.join(timeout=30)
    return _Exit(code, timed_out, began, at, round(time.monotonic() - t0, 3), escaped, stopper.limit,
                 monitor.record() if monitor is not None else None)


def _wait_exit(proc: subprocess.Popen, timeout_s: float) -> int:
    """``proc.wait(timeout_s)``, woken by the process's exit itself (a pidfd) rather than by
    ``Popen.wait``'s polling, which notices an exit up to 50 ms late."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # (no pidfd: an older kernel or another system)
        return proc.wait(timeout=timeout_s)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        while True:  # (in slices a poll's millisecond argument can hold, whatever the timeout)
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout_s)
            if poller.poll(min(left, 3600.0) * 1000):
                break
    finally:
        os.close(fd)
    return proc.wait()


def _ports(endpoint: str | None) -> tuple[int, ...]:
    """The port of the session's model proxy on 127.0.0.1: all the network a harness needs."""
    from urllib.parse import urlsplit

    port = urlsplit(endpoint).port if endpoint else None
    return (port,) if port else ()


def _spawn_and_wait(ctx: SessionContext, harness, backend: Backend, timeout_s: float, controller: CleaveController,
                    start_head: str | None, commits_before: set[str], exempt, qualifying_before: dict[str, str],
                    guard: dict[str, Any]) -> dict[str, Any]:
    ended = _run_agent(ctx, harness.invocation(ctx), backend, timeout_s, controller)
    # Our kill can land while a git command of the agent holds a lock; the lock is an artifact of
    # the kill, not of the agent's work, and would otherwise hand the next session a broken repo
    # depending on timing alone. The working tree itself is never touched.
    locks_removed = _remove_stale_git_locks(ctx.workdir) if controller.fired.is_set() or ended.timed_out else []
    cleave = _cleave_record(ctx, controller, commits_before, exempt, qualifying_before, guard, harness.needs_model)
    path = cleave.get("path")
    if cleave["fired"] and path and controller.cut_write_at is not None:
        # Cleave latency: from when the watcher saw the qualifying write (SpecSnap's clock; never the
        # file's mtime, which the agent can set) to the agent's process being gone.
        cleave["write_to_exit_s"] = round(ended.at - controller.cut_write_at, 4)
    cleave["stale_git_locks_removed"] = locks_removed
    try:
        set_guard(ctx.workdir, "off")
    except OSError:
        pass  # the next session reinstalls the guard in any case
    if cleave["fired"]:
        cleave["stopped_by"] = ("harness (exact stop)" if not controller.killed
                                else "kill at the cut" if ctx.session.cleave.metered else "watcher kill")
    return {
        "session": ctx.session.name,
        "index": ctx.index,
        "prompt_source": ctx.session.prompt_source,
        "cleave_rule": str(ctx.session.cleave),
        "agent": harness.cfg.name,  # who ran this session (in a handoff, not always the trial's first agent)
        "agent_kind": harness.cfg.kind,
        "harness": harness.name,
        "model": harness.cfg.model,
        "reference_policy": harness.is_reference,
        "status": _status(cleave["fired"], ended),
        "limit": ended.limit,
        "limits": ended.limits,
        "exit_code": ended.code,
        "wall_s": ended.wall_s,
        "started_at": round(ended.began, 4),
        "turns": harness.turns(ctx.stage_dir / "transcript.jsonl"),
        "start_head": start_head,
        "end_head": _head(ctx.workdir),
        "cleave": cleave,
        "context_exposure": harness.context_exposure(ctx),
        "escaped_processes_killed": ended.escaped,
        "sandbox_backend": backend.name,
    }


def _head(repo: Path) -> str | None:
    """HEAD's commit, read from the ref files (None when the agent left no readable HEAD)."""
    try:
        return head(repo)
    except (GitError, OSError):
        return None


def _status(cleaved: bool, ended: _Exit) -> str:
    """limit (a limit ended it: ``limit.reason`` says which), cleaved (it fired, whatever the exit),
    timeout, crashed (a non-zero exit), or ok."""
    if ended.limit is not None:
        return LIMIT
    if cleaved:
        return "cleaved"
    if ended.timed_out:
        return "timeout"
    return "crashed" if ended.code != 0 else "ok"


@timed("cleave bookkeeping")
def _cleave_record(ctx: SessionContext, controller: CleaveController, commits_before: set[str], exempt,
                   qualifying_before: dict[str, str], guard: dict[str, Any], needs_model: bool) -> dict:
    """What the cleave did, with the session's integrity check (``integrity.ok`` false marks the
    trial invalid): a commit the rule forbids (however it was made), a qualifying edit the watcher
    never saw, a watcher that failed, or a guard that was not in force."""
    rule = ctx.session.cleave
    record: dict[str, Any] = {"rule": str(rule), "fired": controller.fired.is_set()}
    if record["fired"]:
        record.update(controller.record)
        try:
            with RepoView(ctx.workdir) as view:
                record["diff"] = view.working_diff()
        except (GitError, OSError) as exc:
            record["diff"] = ""
            record["diff_problem"] = f"the working tree could not be diffed: {exc}"
    if rule.active:
        linked: set[str] = set()
        after = qualifying_state(ctx.workdir, exempt, linked)
        integrity = session_integrity(
            ctx.workdir, rule=rule, exempt=exempt, cleave=record, commits_before=commits_before,
            before=qualifying_before, after=after, watched=controller.watched(), linked_after=linked, guard=guard)
        record["integrity"] = integrity
        if record["fired"] and not rule.metered:
            record["edit_uncommitted"] = integrity["edit_committed"] is False
        else:
            record["no_cleave"] = not integrity["unseen_edits"]
            record["missed"] = bool(integrity["unseen_edits"])  # qualifying edits the watcher did not see
    if rule.metered or controller.meter_files or controller.written is not None:
        # answered model calls and their tokens as a cut rule counts them (a reference policy: its
        # meter), with when each was asked (its request reached the proxy; a metered step: asked)
        record["counted"] = {"calls": controller.calls, "tokens": controller.tokens,
                             "by": "meter" if controller.meter_files else "proxy" if needs_model else "none",
                             "per_call": controller.call_tokens, "at": controller.call_times}
        if controller.unreadable_meters:
            record["counted"]["unreadable_meters"] = controller.unreadable_meters
    if controller.errors:
        record["watcher_errors"] = controller.errors
    if controller.unjudged:
        record["unjudged_questions"] = controller.unjudged  # refused, never answered: recorded, not a failure
    return record


def _remove_stale_git_locks(workdir: Path) -> list[str]:
    """Remove the regular files named ``*.lock`` under the sandbox's own ``.git`` (never through a
    link: the walk follows none, so a ``.git`` that is not a real directory yields nothing, and the
    integrity check reports it)."""
    removed = []
    for rel, st in sorted(safefs.walk(workdir, rel=".git")):
        if not rel.endswith(".lock") or not stat.S_ISREG(st.st_mode):
            continue
        parent, name = posixpath.split(f".git/{rel}")
        try:
            with safefs.open_dir(workdir, parent) as fd:
                os.unlink(name, dir_fd=fd)
        except OSError:
            continue
        removed.append(f".git/{rel}")
    return removed
