"""A control group per sandbox: what a session started is found by membership, and what it may
consume is capped by the kernel.

A process can leave its process group (``setsid``), its parent (a double fork) and its environment
(``env -i``, so the sandbox marker finds nothing); it cannot leave a cgroup without write access to
another one, and the kernel puts every child into its parent's cgroup. So where a cgroup hierarchy
is writable (as root, or a systemd user's delegated subtree), the sandbox's launcher
(``confine.py``) joins cgroups of the sandbox's own before it starts anything, the session's
limits are written into them (memory, swap, tasks, CPU quota), and the end of the session kills
them (``cgroup.kill``; before Linux 5.14, or in a v1 hierarchy, each member until none is left)
and removes them.

Both layouts are handled: cgroup v2 (one hierarchy; the limits need the memory/pids/cpu
controllers enabled below this process's cgroup, which is possible only where that cgroup holds
no process itself or is the root) and v1 or hybrid hosts (a hierarchy per controller: memory,
pids and cpu each get a group of the sandbox's). Where no controller can be had, the group still
tracks membership, and the session runner's monitor polls the processes' memory instead (a weaker
limit, said so in the record: ``limits.enforced``).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from sdcs_bench.sandbox.limits import Limits

PREFIX = "specsnap-"
CONTROLLERS = ("memory", "pids", "cpu")
LIMIT_OF = {"memory": "memory", "pids": "processes", "cpu": "cpus"}  # the limit each controller enforces


def _mounts() -> list[tuple[Path, Path, str, set[str]]]:
    """(mount point, root of the mount, filesystem type, super options) of every cgroup mount."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fstype, _source, options = (right.split() + ["", "", ""])[:3]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        parts = left.split()
        out.append((Path(parts[4]), Path(parts[3]), fstype, set(options.split(","))))
    return out


def _own() -> dict[str, str]:
    """This process's cgroup path per hierarchy: ``""`` for v2, each controller's name for v1."""
    out = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _id, ctrls, path = line.split(":", 2)
            if not ctrls:
                out[""] = path
            for c in ctrls.split(","):
                out[c] = path
    except (OSError, ValueError):
        pass
    return out


def _dir(mount: Path, root: Path, path: str) -> Path:
    rel = os.path.relpath(path, str(root)) if path.startswith(str(root)) else path.lstrip("/")
    return mount if rel in (".", "") else mount / rel.lstrip("/")


@cache
def base() -> Path | None:
    """The cgroup v2 directory this process is in, if this process may make cgroups under it."""
    own = _own().get("")
    for mount, root, fstype, _ in _mounts():
        if fstype == "cgroup2" and own is not None:
            where = _dir(mount, root, own)
            if os.access(where, os.W_OK) and (where / "cgroup.procs").exists():
                return where
    return None


@cache
def _v2_controllers() -> frozenset[str]:
    """The controllers a sandbox's v2 group can use (enabled below ``base()`` if they can be)."""
    where = base()
    if where is None:
        return frozenset()
    try:
        have = set((where / "cgroup.controllers").read_text().split()) & set(CONTROLLERS)
        enabled = set((where / "cgroup.subtree_control").read_text().split())
    except OSError:
        return frozenset()
    for ctrl in sorted(have - enabled):
        try:  # (refused where this cgroup holds processes and is not the root: no internal processes)
            (where / "cgroup.subtree_control").write_text(f"+{ctrl}")
            enabled.add(ctrl)
        except OSError:
            pass
    return frozenset(have & enabled)


@cache
def _v1_bases() -> dict[str, Path]:
    """For each controller a v1 hierarchy carries (and v2 cannot give): this process's directory
    there, where writable."""
    own = _own()
    out: dict[str, Path] = {}
    for mount, root, fstype, options in _mounts():
        if fstype != "cgroup":
            continue
        for ctrl in CONTROLLERS:
            if ctrl in options and ctrl in own and ctrl not in out:
                where = _dir(mount, root, own[ctrl])
                if os.access(where, os.W_OK) and (where / "cgroup.procs").exists():
                    out[ctrl] = where
    return out


@dataclass
class Group:
    """The cgroups of one sandbox: ``dirs`` to join (each ``cgroup.procs``), and which one carries
    each controller's limit and counters."""

    dirs: list[Path] = field(default_factory=list)
    by: dict[str, tuple[int, Path]] = field(default_factory=dict)  # controller -> (version, dir)

    @property
    def enforced(self) -> list[str]:
        """The limits (:class:`.limits.Limits`' names) these cgroups enforce."""
        return sorted(LIMIT_OF[ctrl] for ctrl in self.by)


def _paths(marker: str) -> tuple[Path | None, dict[str, Path]]:
    v2 = base() / f"{PREFIX}{marker}" if base() is not None else None
    v1 = {ctrl: where / f"{PREFIX}{marker}" for ctrl, where in _v1_bases().items() if ctrl not in _v2_controllers()}
    return v2, v1


def path_for(marker: str) -> Path | None:
    """The sandbox's v2 group (membership; the kill), if a v2 hierarchy is writable."""
    return _paths(marker)[0]


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def create(marker: str, limits: Limits | None = None) -> Group:
    """The sandbox's cgroups, made if missing, with ``limits`` written into them; an empty group
    where none can be made."""
    group = Group()
    v2, v1 = _paths(marker)
    if v2 is not None:
        try:
            v2.mkdir(exist_ok=True)
            group.dirs.append(v2)
            for ctrl in _v2_controllers():
                group.by[ctrl] = (2, v2)
        except OSError:
            pass
    for ctrl, where in v1.items():
        try:
            where.mkdir(exist_ok=True)
        except OSError:
            continue
        group.dirs.append(where)
        group.by[ctrl] = (1, where)
    if limits is not None:
        _apply(group, limits)
    return group


def _apply(group: Group, limits: Limits) -> None:
    kept: dict[str, tuple[int, Path]] = {}
    for ctrl, (version, where) in group.by.items():
        if ctrl == "memory":
            if version == 2:
                ok = _write(where / "memory.max", str(limits.memory))
                _write(where / "memory.swap.max", str(limits.swap))
                _write(where / "memory.oom.group", "1")
            else:  # v1: memory, then memory+swap (absent without swap accounting)
                ok = _write(where / "memory.limit_in_bytes", str(limits.memory))
                if (where / "memory.memsw.limit_in_bytes").exists():
                    _write(where / "memory.memsw.limit_in_bytes", str(limits.memory + limits.swap))
        elif ctrl == "pids":
            ok = _write(where / "pids.max", str(limits.processes))
        else:  # cpu: a quota of limits.cpus per period
            period = 100_000
            quota = max(1000, int(limits.cpus * period))
            ok = (_write(where / "cpu.max", f"{quota} {period}") if version == 2 else
                  _write(where / "cpu.cfs_period_us", str(period)) and _write(where / "cpu.cfs_quota_us", str(quota)))
        if ok:
            kept[ctrl] = (version, where)
    group.by = kept


def members(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _all_dirs(marker: str) -> list[Path]:
    v2, v1 = _paths(marker)
    return [d for d in [v2, *v1.values()] if d is not None and d.is_dir()]


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def events(marker: str) -> dict[str, int]:
    """What the kernel stopped in the sandbox's cgroups: ``oom_kills`` (processes killed at the
    memory limit) and ``fork_refusals`` (forks refused at the task limit)."""
    out = {"oom_kills": 0, "fork_refusals": 0}
    v2, v1 = _paths(marker)
    for where, version in [(v2, 2), *((d, 1) for d in v1.values())]:
        if where is None:
            continue
        try:
            if version == 2 and (where / "memory.events").exists():
                out["oom_kills"] += _counter((where / "memory.events").read_text(), "oom_kill")
            if version == 1 and (where / "memory.oom_control").exists():
                out["oom_kills"] += _counter((where / "memory.oom_control").read_text(), "oom_kill")
            if (where / "pids.events").exists():
                out["fork_refusals"] += _counter((where / "pids.events").read_text(), "max")
        except OSError:
            continue
    return out


def memory_current(marker: str) -> int | None:
    """The memory the sandbox's cgroup holds now, where a memory controller counts it."""
    v2, v1 = _paths(marker)
    for where, name in ((v2, "memory.current"), (v1.get("memory"), "memory.usage_in_bytes")):
        if where is not None:
            try:
                return int((where / name).read_text())
            except (OSError, ValueError):
                continue
    return None


def kill(marker: str, timeout_s: float = 10.0) -> list[int]:
    """Kill every process in the sandbox's cgroups and remove them; return the pids they held."""
    dirs = _all_dirs(marker)
    if not dirs:
        return []
    found: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while True:
        pids = {p for d in dirs for p in members(d)}
        found |= pids
        if not pids:
            break
        for d in dirs:
            if (d / "cgroup.kill").exists():
                _write(d / "cgroup.kill", "1")
            elif (d / "cgroup.freeze").exists():  # v2 before Linux 5.14: freeze (no member can fork), then kill
                _write(d / "cgroup.freeze", "1")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            pass
    return sorted(found)
