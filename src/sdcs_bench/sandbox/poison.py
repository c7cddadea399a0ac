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

import time
from pathlib import Path
from typing import Any

from sdcs_bench.core import safefs
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.gitutil import GitError, RepoView, head_branch
from sdcs_bench.sandbox.records import sandbox_meta
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.trial.workload_model import Workload
from sdcs_bench.trial.workload_registry import registered_workloads

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


def check_injectable(workload: Workload, sandbox: Path, version: str, view: RepoView | None = None) -> None:
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
    if view is None:
        with _view(sandbox) as own:
            return check_injectable(workload, sandbox, version, own)
    for defect in workload.poison:
        for patch in {defect.patch, defect.marked_patch}:
            if view.run("apply", "--check", "--reverse", "-", input=patch.read_text(), check=False).returncode == 0:
                raise SpecSnapError(f"{sandbox}: defect {defect.id} is already present in {defect.file}; "
                                    "inject once per sandbox")
        check = view.run("apply", "--check", "-", input=defect.patch_for(version).read_text(), check=False)
        if check.returncode != 0:
            raise SpecSnapError(f"{sandbox}: cannot plant {defect.id} in {defect.file} (the file no longer has the "
                                f"lines the defect goes into): {check.stderr.decode(errors='replace').strip()}")
    if version == "v3" and view.head is None:
        raise SpecSnapError(f"{sandbox} has no commit to amend (v3)")


def _view(sandbox: Path) -> RepoView:
    """The sandbox's repository, read and written through a view (no program the agent configured
    runs; see :mod:`sdcs_bench.core.gitutil`)."""
    try:
        return RepoView(sandbox).__enter__()
    except GitError as exc:
        raise SpecSnapError(f"{sandbox}: the repository cannot be read ({exc})") from None


def inject(workload: Workload, sandbox: Path, version: str) -> dict[str, Any]:
    """Plant every defect of ``workload`` in ``sandbox``; return the injection record."""
    sandbox = sandbox.resolve()
    check_injectable(workload, sandbox, version)
    view = _view(sandbox)
    try:
        head_before = view.head
        uncommitted = sorted(view.out("status", "--porcelain", "--untracked-files=all").splitlines())
        for defect in workload.poison:
            applied = view.run("apply", "-", input=defect.patch_for(version).read_text(), check=False)
            if applied.returncode != 0:  # checked above; a failure here is a broken workload
                raise SpecSnapError(f"planting {defect.id} failed after its check passed: "
                                    f"{applied.stderr.decode(errors='replace').strip()}")
        head_after = _amend_into_head(view, [d.file for d in workload.poison]) if version == "v3" else head_before
    finally:
        view.__exit__(None, None, None)
    return {
        "workload": workload.id,
        "version": version,
        "marked": version == "v1",
        "in_head": version == "v3",
        "defects": [{"id": d.id, "file": d.file, "description": d.description} for d in workload.poison],
        "head_before": head_before,
        "head_after": head_after,
        "uncommitted_before": uncommitted,
        "at": time.time(),
    }


def _amend_into_head(view: RepoView, files: list[str]) -> str:
    """Amend the defect files (and nothing else) into HEAD as if they had always been there: same
    author, committer, dates and message; the previous session's uncommitted work stays
    uncommitted; the reflog shows the amended commit where the original stood. The new objects are
    written in the view and copied into the sandbox, the branch's ref file written by hand."""
    sandbox = view.repo
    fields = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
              "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE")
    values = view.out("log", "-1", "--format=%an%x00%ae%x00%aD%x00%cn%x00%ce%x00%cD").strip("\n")
    env = dict(zip(fields, values.split("\0")))
    old = view.head
    view.run("read-tree", "HEAD")
    view.run("add", "--", *files)
    tree = view.out("write-tree").strip()
    parents = [a for p in view.out("log", "-1", "--format=%P").split() for a in ("-p", p)]
    message = view.out("log", "-1", "--format=%B")
    new = view.run("commit-tree", tree, *parents, input=message, env=env).stdout.decode().strip()
    if not new:
        raise SpecSnapError(f"{sandbox}: amending the defects into HEAD failed")
    view.copy_new_objects()
    branch = head_branch(sandbox)
    safefs.write_file(sandbox, f".git/{branch}" if branch else ".git/HEAD", f"{new}\n".encode(), replace_dirs=True)
    # The sandbox's own index: the defect files' entries now match HEAD (git writes it by its lock
    # file and a rename; nothing in the sandbox's configuration is read).
    (view.dir / "HEAD").write_text(f"{new}\n")
    view.run("reset", "-q", new, "--", *files, env={"GIT_INDEX_FILE": str(sandbox / ".git" / "index")})
    for log in {".git/logs/HEAD", f".git/logs/{branch}"} if branch else {".git/logs/HEAD"}:
        _rewrite_last_reflog_entry(sandbox, log, old, new)
    return new


def _rewrite_last_reflog_entry(sandbox: Path, log: str, old: str, new: str) -> None:
    """Let the reflog's last entry, which moved the ref to ``old``, name the amended commit."""
    data = safefs.read_file(sandbox, log)
    if data is None:
        return
    lines = data.decode(errors="surrogateescape").splitlines(keepends=True)
    if lines:
        parts = lines[-1].split(" ", 2)
        if len(parts) == 3 and parts[1] == old:
            lines[-1] = " ".join([parts[0], new, parts[2]])
    safefs.write_file(sandbox, log, "".join(lines).encode(errors="surrogateescape"))
