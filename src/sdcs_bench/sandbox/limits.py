"""What one sandboxed session may consume (``sandbox.limits`` in ``conf/config.yaml``; docs/sandboxes.md).

One home for every limit's name, default and unit. The backends enforce them (a cgroup's
``memory.max``/``memory.limit_in_bytes``, ``pids.max``, a CPU quota, resource limits of the
process, tmpfs sizes; docker's own equivalents), the session runner watches them (the work tree's
and HOME's size and entry count, the agent's output, the cgroup's OOM and fork-failure counters),
and hitting one ends the session with a recorded reason (``limit: memory``...): the trial is
marked and left out of every mean, and the run goes on.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from sdcs_bench.core.errors import SpecSnapError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

# The reasons a session can end for, as recorded (``limit.reason``) and shown (``limit: <reason>``).
REASONS = ("memory", "processes", "disk", "files", "output", "watches", "wall")


def parse_size(value: Any, what: str) -> int:
    """Bytes from ``4g``, ``512m``, ``64MiB`` or a plain integer."""
    if isinstance(value, bool):
        raise SpecSnapError(f"sandbox.limits.{what}: {value!r} is not a size (e.g. 4g, 512m, 1048576)")
    if isinstance(value, int):
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise SpecSnapError(f"sandbox.limits.{what}: {value!r} is not a size (e.g. 4g, 512m, 1048576)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


@dataclass(frozen=True)
class Limits:
    """Per session (and per scoring run), for the agent and everything it starts."""

    memory: int = 4 << 30  # resident memory, tmpfs pages included (2 trials at once fit 24 GiB with room)
    swap: int = 0  # swap on top of ``memory`` (cgroup v2 memory.swap.max; v1/docker: memory+swap)
    processes: int = 512  # tasks at once (pids.max); a fork past it fails
    cpus: float = 1.0  # CPU time per second (a quota: 2 trials at once on 2 cores leave the host room)
    disk: int = 1 << 30  # bytes the work tree and HOME may hold together (allocated), and a snapshot
    files: int = 200_000  # entries the work tree and HOME may hold together
    file_size: int = 256 << 20  # the largest file a process may write (RLIMIT_FSIZE; a snapshot's per-file cap)
    tmp: int = 512 << 20  # the private /tmp and /dev/shm, each (a tmpfs: counted in ``memory`` too)
    output: int = 64 << 20  # the agent's stdout and stderr, each, as kept on disk
    open_files: int = 4096  # descriptors per process (RLIMIT_NOFILE)
    watches: int = 4096  # inotify watches the cut's watcher may hold for this session
    request_body: int = 32 << 20  # one request to the model proxy (after decompression)
    requests_per_minute: int = 600  # model proxy requests

    SIZES = ("memory", "swap", "disk", "file_size", "tmp", "output", "request_body")

    @classmethod
    def from_config(cls, cfg: dict[str, Any] | None) -> Limits:
        """The limits a config names (missing keys: the defaults). An unknown key or a bad value is
        one error naming it and the valid choices."""
        cfg = dict(cfg or {})
        names = [f.name for f in fields(cls)]
        values: dict[str, Any] = {}
        for key, value in cfg.items():
            if key not in names:
                raise SpecSnapError(f"unknown limit sandbox.limits.{key}", names)
            if key in cls.SIZES:
                values[key] = parse_size(value, key)
            elif key == "cpus":
                try:
                    values[key] = float(value)
                except (TypeError, ValueError):
                    raise SpecSnapError(f"sandbox.limits.cpus: {value!r} is not a number of CPUs") from None
            else:
                try:
                    values[key] = int(value)
                except (TypeError, ValueError):
                    raise SpecSnapError(f"sandbox.limits.{key}: {value!r} is not a whole number") from None
            if values[key] < 0 or (values[key] == 0 and key not in ("swap",)):
                raise SpecSnapError(f"sandbox.limits.{key}: {value!r} must be positive")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def hit(reason: str, detail: str) -> dict[str, str]:
    """The record of a limit that ended a session."""
    if reason not in REASONS:
        raise ValueError(f"unknown limit reason {reason!r}")
    return {"reason": reason, "detail": detail}
