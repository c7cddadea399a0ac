"""Run one session of one trial in a live sandbox (SPEC §2): leak check, private HOME, the
agent's process group under the cleave controller, and the session record."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .agents import SessionContext, make_harness
from .arms import Arm
from .cleave import CleaveController, exempt_patterns, qualifies, set_guard
from .gitutil import changed_paths, git, head, working_diff
from .leakcheck import leak_check
from .paths import default_work_root
from .records import remember_session
from .sandbox.base import Backend, base_env, kill_group
from .workload import SessionSpec, Workload


def run_session(
    *,
    trial_id: str,
    index: int,
    session: SessionSpec,
    workload: Workload,
    arm: Arm,
    agent_cfg: dict[str, Any],
    workdir: Path,
    stage_dir: Path,
    backend: Backend,
    timeout_s: float,
) -> dict[str, Any]:
    workdir = workdir.resolve()
    stage_dir.mkdir(parents=True, exist_ok=True)
    harness = make_harness(agent_cfg)
    default_work_root().mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=default_work_root()))
    try:
        ctx = SessionContext(trial_id, index, session, workload, arm, workdir, home, stage_dir)
        return _run(ctx, harness, backend, timeout_s)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _run(ctx: SessionContext, harness, backend: Backend, timeout_s: float) -> dict[str, Any]:
    leak = leak_check(ctx.workdir, ctx.home, ctx.workload, backend)
    start_head = head(ctx.workdir)
    exempt = exempt_patterns(ctx.workload.protected, ctx.arm.memory_files)
    controller = CleaveController(ctx.workdir, ctx.session.cleave, exempt)
    invocation = harness.invocation(ctx)
    env = {**base_env(ctx.home), **invocation.env}
    transcript = ctx.stage_dir / "transcript.jsonl"
    status = "ok"
    t0 = time.monotonic()
    with transcript.open("wb") as out, (ctx.stage_dir / "agent.stderr.log").open("wb") as err:
        controller.start()
        try:
            proc = backend.spawn(
                invocation.argv, workdir=ctx.workdir, home=ctx.home, env=env, network=invocation.network,
                ro_binds=invocation.ro_binds,
                stdin=subprocess.PIPE if invocation.stdin is not None else subprocess.DEVNULL,
                stdout=out, stderr=err,
            )
            controller.attach(proc.pid)
            if invocation.stdin is not None:
                try:
                    proc.stdin.write(invocation.stdin)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass  # the agent was already stopped (or never read its input)
            try:
                exit_code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                status = "timeout"
                kill_group(proc.pid)
                exit_code = proc.wait()
            kill_group(proc.pid)  # nothing the agent started may outlive its session
        finally:
            controller.stop()
    wall_s = time.monotonic() - t0
    # Our kill can land while a git command of the agent holds a lock; the lock is an artifact of
    # the kill, not of the agent's work, and would otherwise hand the next session a broken repo
    # depending on timing alone. The working tree itself is never touched.
    locks_removed = _remove_stale_git_locks(ctx.workdir) if controller.fired.is_set() or status == "timeout" else []
    cleave = _cleave_record(ctx, controller, start_head, exempt)
    cleave["stale_git_locks_removed"] = locks_removed
    set_guard(ctx.workdir, "off")
    if cleave["fired"]:
        status = "cleaved"
    elif status == "ok" and exit_code != 0:
        status = "crashed"
    usage = harness.usage(ctx, transcript)
    record = {
        "session": ctx.session.name,
        "index": ctx.index,
        "prompt_source": ctx.session.prompt_source,
        "cleave_rule": str(ctx.session.cleave),
        "agent": harness.cfg.get("name"),
        "harness": harness.name,
        "reference_policy": harness.is_reference,
        "status": status,
        "exit_code": exit_code,
        "wall_s": round(wall_s, 3),
        "turns": harness.turns(transcript),
        "tokens": usage.to_dict(),
        "start_head": start_head,
        "end_head": head(ctx.workdir),
        "cleave": cleave,
        "leak_check": leak,
        "sandbox_backend": backend.name,
    }
    remember_session(ctx.workdir, record)
    return record


def _cleave_record(ctx: SessionContext, controller: CleaveController, start_head: str, exempt) -> dict:
    rule = ctx.session.cleave
    record: dict[str, Any] = {"rule": str(rule), "fired": controller.fired.is_set()}
    if record["fired"]:
        record.update(controller.record)
        record["diff"] = working_diff(ctx.workdir)
        committed = git(ctx.workdir, "diff", "--name-only", start_head, "HEAD").split()
        record["edit_uncommitted"] = record["path"] not in committed
    elif rule.active:
        changed = [p for p in changed_paths(ctx.workdir, start_head) if qualifies(p, exempt)]
        record["no_cleave"] = not changed
        record["missed"] = bool(changed)  # a qualifying edit the watcher did not see: an integrity error
    return record


def _remove_stale_git_locks(workdir: Path) -> list[str]:
    removed = []
    for lock in sorted((workdir / ".git").rglob("*.lock")):
        lock.unlink(missing_ok=True)
        removed.append(lock.relative_to(workdir).as_posix())
    return removed
