"""The host's side of the git guard (:mod:`sdcs_bench.sandbox.guard` has the contract): installing
and reinstalling it, changing its state, and verifying that git inside the sandbox runs it.

Everything here writes in a tree the agent wrote, through :mod:`sdcs_bench.core.safefs`, which
follows no link the agent planted: a ``.git/specsnap`` or ``.git/hooks`` that is a link, a file, or
a directory where a file belongs is replaced, never written through.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from sdcs_bench.core import safefs
from sdcs_bench.core.gitutil import checked_git_dir
from sdcs_bench.sandbox.guard import ASK_POLLS, GUARD_STATES, VERIFIED, guard_hook

HOOK = ".git/hooks/reference-transaction"
CONFIG_FILES = (".git/config", ".git/config.worktree")


def write_cleave_spec(repo: Path, rule: str, exempt: Iterable[str]) -> None:
    """What the session's cleave is, for the hooks that run inside the sandbox."""
    data = (json.dumps({"rule": rule, "exempt": list(exempt)}) + "\n").encode()
    safefs.write_file(Path(repo), ".git/specsnap/cleave.json", data, replace_dirs=True)


def install_guard(repo: Path, exempt: Iterable[str], ask_polls: int = ASK_POLLS) -> list[str]:
    """Install (or reinstall) the guard: the hook, executable, in a real ``.git/hooks`` directory,
    and its state ``off`` in a real ``.git/specsnap``; a ``core.hooksPath`` in the repository's
    configuration (which would send git to other hooks) is removed. Returns what was not as
    SpecSnap left it and had to be put back (empty for a fresh scaffold)."""
    repo = Path(repo)
    checked_git_dir(repo)  # a .git the agent turned into a link or a file is never written through
    repaired: list[str] = []
    hook = guard_hook(exempt, ask_polls).encode()
    for rel in (".git/hooks", ".git/specsnap"):
        try:
            with safefs.open_dir(repo, rel):
                pass
        except FileNotFoundError:
            pass
        except OSError:
            repaired.append(f"{rel} was not a directory")
    if safefs.read_file(repo, HOOK) != hook or not _executable(repo / HOOK):
        if (repo / HOOK).exists() or (repo / HOOK).is_symlink():
            repaired.append(f"{HOOK} was changed")
        safefs.write_file(repo, HOOK, hook, 0o755, replace_dirs=True)
    for rel in CONFIG_FILES:
        note = _unset_hooks_path(repo, rel)
        if note:
            repaired.append(note)
    set_guard(repo, "off")
    return repaired


def _executable(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o100)


def _unset_hooks_path(repo: Path, rel: str) -> str | None:
    """Remove every ``core.hooksPath`` from one of the repository's configuration files (by git's
    own parser, on the file alone: nothing in it is run, and includes are not followed). A file
    that is a link or not a regular file is replaced by an empty one."""
    path = repo / rel
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        safefs.write_file(repo, rel, b"", replace_dirs=True)
        return f"{rel} was not a regular file (emptied)"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
    found = subprocess.run(["git", "config", "--file", str(path), "--get-all", "core.hooksPath"], cwd="/",
                           capture_output=True, env=env, timeout=60)
    if found.returncode != 0:
        return None
    subprocess.run(["git", "config", "--file", str(path), "--unset-all", "core.hooksPath"], cwd="/",
                   capture_output=True, env=env, timeout=60)
    return f"core.hooksPath removed from {rel}"


def set_guard(repo: Path, state: str) -> None:
    """Change the guard's state atomically (write a new file, rename it over the old one): the
    hook, running concurrently, reads the old state or the new one, never a truncated file. A
    control directory the agent replaced is replaced back; a failure raises (the watcher then
    fails closed)."""
    if state not in GUARD_STATES:
        raise ValueError(f"unknown guard state {state!r}")
    safefs.write_file(Path(repo), ".git/specsnap/guard", (state + "\n").encode(), replace_dirs=True)


VERIFY_REF = "refs/specsnap/verify"
VERIFY_COMMAND = ("git", "update-ref", VERIFY_REF, "HEAD")  # (run in the sandbox while the state is ``verify``)


def verify_guard(repo: Path, home: Path, backend, env: dict[str, str]) -> dict:
    """Check, inside the sandbox and with the repository's own configuration, that git runs the
    guard: with the state ``verify``, a ref update must be refused with the guard's own message.
    A guard that does not answer (a configuration the agent left sends git elsewhere) is reported
    ``verified: false``, which makes the session's integrity check fail (never a valid trial). (An
    isolating backend runs the same command after its leak probe instead, in one sandbox start:
    :func:`verifying` and :func:`judge_verify`.)"""
    with verifying(repo):
        code, _, err = backend.run(list(VERIFY_COMMAND), workdir=repo, home=home, env=env, timeout=120)
        return judge_verify(repo, home, backend, env, code, err.decode(errors="replace"))


@contextmanager
def verifying(repo: Path):
    """The guard in the state ``verify`` (a ref update refused with the guard's own message), then
    ``off`` again, whatever happened in between."""
    set_guard(Path(repo), "verify")
    try:
        yield
    finally:
        set_guard(Path(repo), "off")


def judge_verify(repo: Path, home: Path, backend, env: dict[str, str], code: int | None, said: str) -> dict:
    """What :data:`VERIFY_COMMAND`'s exit status and stderr say of the guard (called while the state is
    still ``verify``); an update that landed, or may have (the guard did not run; the command did
    not say how it ended), is taken back out."""
    verified = code not in (0, None) and VERIFIED in said
    if code in (0, None):
        backend.run(["git", "update-ref", "-d", VERIFY_REF], workdir=Path(repo), home=home, env=env, timeout=120)
    result = {"verified": verified}
    if not verified:
        result["problem"] = ("git in the sandbox did not run the guard hook "
                             f"(update-ref exit {code}: {said.strip()[-300:] or 'no message'})")
    return result
