"""Repo-written memory (issue: what survived a reset besides the working tree).

A private HOME stops a harness carrying its own history across the reset, but harnesses also
write memory into the repository itself (``CLAUDE.md``, ``GEMINI.md``, Aider's history files,
config folders). Each session records which such files it created or changed; they are part of
what survived, and the scorecard lists them.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sdcs_bench.core import safefs

# What any harness is known to write into a repository as its own memory or state.
COMMON_MEMORY_GLOBS = (
    "CLAUDE.md", "CLAUDE.local.md", "*/CLAUDE.md", ".claude/*",
    "GEMINI.md", "*/GEMINI.md", ".gemini/*",
    ".aider*", ".codex/*", ".opencode/*", "opencode.json", ".mini-swe-agent/*", "trajectory.json", "*.traj.json",
    "AGENTS.md", "*/AGENTS.md",
)


def _digest(root: Path, rel: str, st: os.stat_result) -> str:
    """A content hash of what the agent left at ``rel``, read without following it: a regular file's
    bytes, a link's target text; anything else (a FIFO, a device) by its kind alone."""
    if stat.S_ISLNK(st.st_mode):
        return "link:" + hashlib.sha256(os.fsencode(os.readlink(root / rel))).hexdigest()
    if not stat.S_ISREG(st.st_mode):
        return f"special:{stat.S_IFMT(st.st_mode):o}"
    try:
        data = safefs.read_file(root, rel)
    except safefs.Unsafe:
        return f"large:{st.st_size}:{st.st_mtime_ns}"
    return hashlib.sha256(data).hexdigest() if data is not None else "unreadable"


def repo_state(workdir: Path) -> dict[str, str]:
    """path -> content hash of every file in the working tree (outside .git), links not followed."""
    return {rel: _digest(workdir, rel, st)
            for rel, st in safefs.walk(workdir, skip_dirs={"__pycache__"}, top_skip={".git"})}


# Where git reads configuration or programs from: what an agent leaves there survives into the next
# session (inside its sandbox), so each session lists what it created, changed or deleted there.
GIT_CONFIG_FILES = (".git/config", ".git/config.worktree", ".git/commondir", ".git/gitdir", ".gitmodules")
GIT_CONFIG_DIRS = (".git/hooks", ".git/info", ".git/worktrees", ".git/modules")


def git_configuration(workdir: Path) -> dict[str, str]:
    """path -> content hash of the repository's configuration, hooks and attributes: the files in
    :data:`GIT_CONFIG_FILES` and under :data:`GIT_CONFIG_DIRS`, and every ``.gitattributes`` of
    the working tree."""
    state = {}
    try:
        git_dir = os.lstat(workdir / ".git")
    except OSError:
        git_dir = None
    real = git_dir is not None and stat.S_ISDIR(git_dir.st_mode)
    if git_dir is not None and not real:
        state[".git"] = _digest(workdir, ".git", git_dir)  # a link or a file: nothing under it is read
    for rel in GIT_CONFIG_FILES if real else (".gitmodules",):
        try:
            state[rel] = _digest(workdir, rel, os.lstat(workdir / rel))
        except OSError:
            pass
    for top in GIT_CONFIG_DIRS if real else ():
        try:
            st = os.lstat(workdir / top)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            state[top] = _digest(workdir, top, st)
            continue
        for rel, sub in safefs.walk(workdir, rel=top):
            state[f"{top}/{rel}"] = _digest(workdir, f"{top}/{rel}", sub)
    for rel, st in safefs.walk(workdir, skip_dirs={"__pycache__"}, top_skip={".git"}):
        if rel.rsplit("/", 1)[-1] == ".gitattributes":
            state[rel] = _digest(workdir, rel, st)
    return state


def state_changes(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    return {"created": sorted(p for p in after if p not in before),
            "modified": sorted(p for p in after if p in before and after[p] != before[p]),
            "deleted": sorted(p for p in before if p not in after)}


def repo_memory_changes(before: dict[str, str], after: dict[str, str], harness_globs: Iterable[str],
                        arm_memory: Iterable[str]) -> dict[str, list[str]]:
    """The harness-memory files a session created, changed or deleted. The arm's own memory files
    (the notes the protocol asks for) are reported elsewhere (notes size) and left out here."""
    globs = tuple(harness_globs) + COMMON_MEMORY_GLOBS
    arm = set(arm_memory)

    def memory(rel: str) -> bool:
        return rel not in arm and any(fnmatch.fnmatchcase(rel, g) for g in globs)

    return {
        "created": sorted(p for p in after if p not in before and memory(p)),
        "modified": sorted(p for p in after if p in before and after[p] != before[p] and memory(p)),
        "deleted": sorted(p for p in before if p not in after and memory(p)),
    }
