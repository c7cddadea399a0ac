"""The local backend's supervisor: whatever the agent starts dies with its session.

    python -I -B reaper.py -- ARGV...

Standalone (standard library only). It makes itself a child subreaper, so every process the agent
starts stays its descendant even after ``setsid``/double-fork (nothing escapes to PID 1), and asks
the kernel for SIGTERM when its parent (the session runner) dies, ``kill -9`` included. On that
signal, or when the agent's main process exits, it kills every descendant left and exits. (The
bwrap backend gets the same from ``--die-with-parent`` and its PID namespace.) A supervisor that is
killed with SIGKILL (the cleave kills the whole process group at once) can do none of this; so
the local backend starts it inside the sandbox's cgroups (``confine.py``): every process the agent
starts is then a member, and the session's end kills the cgroups whole.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _children_map() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(root: int) -> list[int]:
    tree, out, todo = _children_map(), [], [root]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_all() -> None:
    """SIGKILL every descendant until none is left (a dying process may still fork once)."""
    for _ in range(50):
        pids = descendants(os.getpid())
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:  # reap what died (orphans reparented to us are our children now)
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: reaper.py -- ARGV...", file=sys.stderr)
        return 2
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    def _die(signum, _frame):
        kill_all()
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _die)
    if os.getppid() != parent:  # the session runner died before the death signal was armed
        return 137
    pid = os.fork()
    if pid == 0:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(argv[1], argv[1:])
        except OSError as exc:
            print(f"reaper: cannot run {argv[1]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    kill_all()
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
