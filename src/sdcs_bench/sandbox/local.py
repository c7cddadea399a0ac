"""Plain subprocesses: no isolation at all. For development only; every use warns.

Each command runs under :mod:`.reaper`, so nothing it starts outlives it or the session runner, and
(where a cgroup can be made, :mod:`.cgroup`) in the cgroups of its sandbox's, with the session's
limits, which the end of the session kills whole: a process that left the group, its parent and
its environment included. The local backend keeps no secret from the agent: it reads what the
user running SpecSnap can read, and shares the host's network (docs/sandboxes.md)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from sdcs_bench.sandbox.base import Backend

REAPER = Path(__file__).with_name("reaper.py")


class LocalBackend(Backend):
    name = "local"
    isolated = False
    _warned = False

    @classmethod
    def available(cls) -> bool:
        return True

    def wrap(self, argv: list[str], *, workdir: Path, home: Path, network: bool, ro_binds: list[Path],
             read_only: list[Path] = (), pass_fds: tuple[int, ...] = (), ports: tuple[int, ...] = ()) -> list[str]:
        if not LocalBackend._warned:
            warnings.warn(
                "sandbox backend 'local' gives the agent no isolation: it can read hidden tests and "
                "gold. Use it for development only; install bubblewrap for real runs.",
                stacklevel=3,
            )
            LocalBackend._warned = True
        return [*self.confinement(workdir), sys.executable, "-I", "-S", "-B", str(REAPER), "--", *argv]
