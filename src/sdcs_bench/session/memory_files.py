"""Repo-written memory (issue: what survived a reset besides the working tree).

A private HOME stops a harness carrying its own history across the reset, but harnesses also
write memory into the repository itself (``CLAUDE.md``, ``GEMINI.md``, Aider's history files,
config folders). Each session records which such files it created or changed; they are part of
what survived, and the scorecard lists them.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterable
from pathlib import Path

# What any harness is known to write into a repository as its own memory or state.
COMMON_MEMORY_GLOBS = (
    "CLAUDE.md", "CLAUDE.local.md", "*/CLAUDE.md", ".claude/*",
    "GEMINI.md", "*/GEMINI.md", ".gemini/*",
    ".aider*", ".codex/*", ".opencode/*", "opencode.json", ".mini-swe-agent/*", "trajectory.json", "*.traj.json",
    "AGENTS.md", "*/AGENTS.md",
)


def repo_state(workdir: Path) -> dict[str, str]:
    """path -> content hash of every file in the working tree (outside .git)."""
    state = {}
    for path in workdir.rglob("*"):
        rel = path.relative_to(workdir)
        if rel.parts[0] == ".git" or "__pycache__" in rel.parts or not path.is_file():
            continue
        state[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


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
