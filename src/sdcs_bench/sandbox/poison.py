"""The poison pill (docs/protocol.md): plant a workload's defects in a live sandbox between two sessions.

- ``v1`` applies each defect's *marked* patch (comments that point at it) to the working tree;
- ``v2`` applies the unmarked patch: the defects show in ``git diff`` and nowhere else;
- ``v3`` applies the unmarked patch and amends it into HEAD, so ``git diff`` is clean; the amend
  keeps HEAD's author, committer, dates and message, and its reflog entry is removed.

Whatever the previous session left uncommitted stays exactly as it was. Nothing in the sandbox
records the injection (the record is returned, and kept by the caller outside the sandbox): the
agent can learn of the defects only from the files and history themselves. Every precondition is
checked before the first write: a refused injection changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.sandbox.records import sandbox_meta
from sdcs_bench.trial.workload import Workload, load_workload, registered_workloads

VERSIONS = ("v1", "v2", "v3")


def record_path(sandbox: Path) -> Path:
    """Where a by-hand injection is recorded: beside the sandbox, never inside it."""
    sandbox = sandbox.resolve()
    return sandbox.with_name(sandbox.name + ".specsnap-injection.json")


def poisonable_workloads() -> list[str]:
    """The workloads that define a poison pill (an unreadable workload is left out, not fatal)."""
    found = []
    for wid in registered_workloads():
        try:
            if load_workload(wid).poison:
                found.append(wid)
        except SpecSnapError:
            continue
    return sorted(found)


def _git(sandbox: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None):
    return subprocess.run(["git", *args], cwd=sandbox, input=stdin, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def check_injectable(workload: Workload, sandbox: Path, version: str) -> None:
    """Every reason to refuse, before anything is written."""
    if version not in VERSIONS:
        raise SpecSnapError(f"unknown poison-pill version {version!r}", VERSIONS)
    meta = sandbox_meta(sandbox)  # raises for a directory that is not a SpecSnap sandbox
    if meta.get("workload") != workload.id:
        raise SpecSnapError(f"{sandbox} was scaffolded for workload {meta.get('workload')!r}, not {workload.id!r}")
    if not workload.poison:
        raise SpecSnapError(f"workload {workload.id} defines no poison pill", poisonable_workloads())
    if record_path(sandbox).exists():
        raise SpecSnapError(f"{sandbox} was already injected (record: {record_path(sandbox)}); inject once per sandbox")
    for defect in workload.poison:
        for patch in {defect.patch, defect.marked_patch}:
            if _git(sandbox, "apply", "--check", "--reverse", "-", stdin=patch.read_text()).returncode == 0:
                raise SpecSnapError(f"{sandbox}: defect {defect.id} is already present in {defect.file}; "
                                    "inject once per sandbox")
        check = _git(sandbox, "apply", "--check", "-", stdin=defect.patch_for(version).read_text())
        if check.returncode != 0:
            raise SpecSnapError(f"{sandbox}: cannot plant {defect.id} in {defect.file} (the file no longer has the "
                                f"lines the defect goes into): {check.stderr.strip()}")
    if version == "v3" and _git(sandbox, "rev-parse", "--verify", "-q", "HEAD").returncode != 0:
        raise SpecSnapError(f"{sandbox} has no commit to amend (v3)")


def inject(workload: Workload, sandbox: Path, version: str) -> dict[str, Any]:
    """Plant every defect of ``workload`` in ``sandbox``; return the injection record."""
    sandbox = sandbox.resolve()
    check_injectable(workload, sandbox, version)
    head_before = _git(sandbox, "rev-parse", "HEAD").stdout.strip()
    uncommitted = sorted(_git(sandbox, "status", "--porcelain", "--untracked-files=all").stdout.splitlines())
    for defect in workload.poison:
        applied = _git(sandbox, "apply", "-", stdin=defect.patch_for(version).read_text())
        if applied.returncode != 0:  # checked above; a failure here is a broken workload
            raise SpecSnapError(f"planting {defect.id} failed after its check passed: {applied.stderr.strip()}")
    if version == "v3":
        _amend_into_head(sandbox, [d.file for d in workload.poison])
    return {
        "workload": workload.id,
        "version": version,
        "marked": version == "v1",
        "in_head": version == "v3",
        "defects": [{"id": d.id, "file": d.file, "description": d.description} for d in workload.poison],
        "head_before": head_before,
        "head_after": _git(sandbox, "rev-parse", "HEAD").stdout.strip(),
        "uncommitted_before": uncommitted,
        "at": time.time(),
    }


def _amend_into_head(sandbox: Path, files: list[str]) -> None:
    """Amend the defect files (and nothing else) into HEAD as if they had always been there: same
    author, committer, dates and message; the previous session's uncommitted work stays
    uncommitted; the reflog shows the amended commit where the original stood."""
    fields = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
              "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE")
    values = _git(sandbox, "log", "-1", "--format=%an%x00%ae%x00%aD%x00%cn%x00%ce%x00%cD").stdout.strip("\n")
    env = dict(zip(fields, values.split("\0")))
    old = _git(sandbox, "rev-parse", "HEAD").stdout.strip()
    scratch_index = sandbox / ".git" / "specsnap-inject.index"
    index_env = {"GIT_INDEX_FILE": str(scratch_index)}
    try:
        _git(sandbox, "read-tree", "HEAD", env=index_env)
        _git(sandbox, "add", "--", *files, env=index_env)
        tree = _git(sandbox, "write-tree", env=index_env).stdout.strip()
    finally:
        scratch_index.unlink(missing_ok=True)
    parents = [a for p in _git(sandbox, "log", "-1", "--format=%P").stdout.split() for a in ("-p", p)]
    message = _git(sandbox, "log", "-1", "--format=%B").stdout
    new = _git(sandbox, "commit-tree", tree, *parents, stdin=message, env=env).stdout.strip()
    if not new:
        raise SpecSnapError(f"{sandbox}: amending the defects into HEAD failed")
    branch = _git(sandbox, "symbolic-ref", "-q", "HEAD").stdout.strip()
    _git(sandbox, "update-ref", branch or "HEAD", new, old)
    _git(sandbox, "reset", "-q", "--", *files)  # the index entries of the defect files now match HEAD
    for log in {sandbox / ".git" / "logs" / "HEAD", sandbox / ".git" / "logs" / branch} if branch else ():
        _rewrite_last_reflog_entry(log, old, new)


def _rewrite_last_reflog_entry(log: Path, old: str, new: str) -> None:
    """Drop the entry update-ref just wrote and let the entry before it name the amended commit."""
    if not log.is_file():
        return
    lines = log.read_text().splitlines(keepends=True)
    if lines and lines[-1].split(" ", 2)[:2] == [old, new]:
        lines.pop()
    if lines:
        parts = lines[-1].split(" ", 2)
        if len(parts) == 3 and parts[1] == old:
            lines[-1] = " ".join([parts[0], new, parts[2]])
    log.write_text("".join(lines))
