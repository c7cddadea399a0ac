"""A control group per local sandbox: what a session started is found by membership, not by trust.

The local backend runs the agent as a plain process group. A process can leave its group
(``setsid``), its parent (a double fork), and its environment (``env -i``, so the sandbox marker
finds nothing); it cannot leave a cgroup without write access to another one, and the kernel puts
every child into its parent's cgroup. So where a cgroup v2 hierarchy is writable (as root, or a
systemd user's delegated subtree), the local backend's supervisor (``reaper.py``) moves itself into
a cgroup of its own before it starts the agent, and the end of the session kills the cgroup
(``cgroup.kill``; on kernels before 5.14, freeze and kill each member) and removes it. Where none is
writable, the supervisor's child-subreaper and the marker remain (docs/cleave.md says what that
leaves open).
"""

from __future__ import annotations

import os
import signal
import time
from functools import cache
from pathlib import Path

PREFIX = "specsnap-"


@cache
def base() -> Path | None:
    """The cgroup v2 directory this process is in, if this process may make cgroups under it."""
    mount = None
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split(" - ")
            if len(fields) == 2 and fields[1].split()[0] == "cgroup2":
                mount = Path(fields[0].split()[4])
                break
        own = next((line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")),
                   None)
    except OSError:
        return None
    if mount is None or own is None:
        return None
    where = mount / own.lstrip("/")
    return where if os.access(where, os.W_OK) and (where / "cgroup.procs").exists() else None


def path_for(marker: str) -> Path | None:
    root = base()
    return root / f"{PREFIX}{marker}" if root is not None else None


def create(marker: str) -> Path | None:
    """The sandbox's cgroup, made if missing; None where no cgroup can be made."""
    path = path_for(marker)
    if path is None:
        return None
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return None
    return path


def members(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill(marker: str, timeout_s: float = 10.0) -> list[int]:
    """Kill every process in the sandbox's cgroup and remove it; return the pids it held."""
    path = path_for(marker)
    if path is None or not path.is_dir():
        return []
    found = members(path)
    deadline = time.monotonic() + timeout_s
    while True:
        pids = members(path)
        if not pids:
            break
        if (path / "cgroup.kill").exists():
            try:
                (path / "cgroup.kill").write_text("1")
            except OSError:
                pass
        else:  # before Linux 5.14: freeze (no member can fork any more), then kill each
            try:
                (path / "cgroup.freeze").write_text("1")
            except OSError:
                pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
        found += [p for p in members(path) if p not in found]
    try:
        path.rmdir()
    except OSError:
        pass
    return sorted(set(found))
