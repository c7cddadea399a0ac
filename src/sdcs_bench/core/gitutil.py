"""Thin helpers over the git CLI, used on sandboxes from outside the agent's process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

AGENT_IDENTITY = {"user.name": "SpecSnap Agent", "user.email": "agent@specsnap.invalid"}
_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}


def git(repo: Path, *args: str, check: bool = True, input: bytes | None = None) -> str:
    env = {**os.environ, **_ENV, "HOME": os.environ.get("HOME", "/nonexistent")}
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, env=env)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace")


def init_repo(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    for key, value in AGENT_IDENTITY.items():
        git(repo, "config", key, value)
    git(repo, "config", "commit.gpgsign", "false")


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    return head(repo)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def untracked(repo: Path) -> list[str]:
    out = git(repo, "ls-files", "--others", "--exclude-standard", "-z")
    return sorted(p for p in out.split("\0") if p)


def changed_paths(repo: Path, since: str) -> list[str]:
    """Every path that differs from commit ``since``: committed, staged, unstaged or untracked."""
    out = git(repo, "diff", "--name-only", "-z", since)
    return sorted(set(p for p in out.split("\0") if p) | set(untracked(repo)))


def working_diff(repo: Path) -> str:
    """The uncommitted state as one patch: tracked changes against HEAD plus untracked files."""
    parts = [git(repo, "diff", "--binary", "HEAD")]
    for path in untracked(repo):
        # --no-index exits 1 when files differ, which is the point here.
        parts.append(git(repo, "diff", "--binary", "--no-index", "/dev/null", path, check=False))
    return "".join(parts)
