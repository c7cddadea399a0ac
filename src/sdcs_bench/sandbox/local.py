"""Plain subprocesses: no isolation at all. For development only; every use warns.

Each command runs under :mod:`.reaper`, so nothing it starts outlives it or the session runner, and
(where a cgroup can be made, :mod:`.cgroup`) in a cgroup of its sandbox's, which the end of the
session kills whole: a process that left the group, its parent and its environment included."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from sdcs_bench.sandbox import cgroup
from sdcs_bench.sandbox.base import Backend, sandbox_marker

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
        group = cgroup.create(sandbox_marker(workdir))
        return [sys.executable, "-I", "-B", str(REAPER), *(["--cgroup", str(group)] if group else []), "--", *argv]

    def reap(self, workdir: Path) -> list[str]:
        """Kill whatever is left in the sandbox's cgroup (a daemon that escaped the supervisor's
        kill, or outlived a supervisor that was killed) and remove the cgroup."""
        return [f"pid {p}" for p in cgroup.kill(sandbox_marker(workdir))]

    def run(self, argv, *, workdir, home, env, timeout, **kw):
        try:
            return super().run(argv, workdir=workdir, home=home, env=env, timeout=timeout, **kw)
        finally:
            self.reap(workdir)
