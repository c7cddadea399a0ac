"""bubblewrap: read-only root, only the sandbox (and a private HOME and /tmp) writable, the
project tree and other sandboxes invisible, network off unless the agent needs its endpoint."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path

from sdcs_bench.sandbox.base import Backend, hidden_roots, runtime_roots


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class BwrapBackend(Backend):
    name = "bwrap"
    isolated = True
    enforces_read_only = True

    @classmethod
    @cache
    def available(cls) -> bool:
        exe = shutil.which("bwrap")
        if exe is None:
            return False
        probe = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "true"]
        return subprocess.run(probe, capture_output=True).returncode == 0

    def wrap(self, argv: list[str], *, workdir: Path, home: Path, network: bool, ro_binds: list[Path],
             read_only: list[Path] = (), pass_fds: tuple[int, ...] = (), ports: tuple[int, ...] = ()) -> list[str]:
        workdir, home = workdir.resolve(), home.resolve()
        cmd = [
            shutil.which("bwrap") or "bwrap",
            "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        ]
        if not network:
            cmd.append("--unshare-net")
        # /tmp is replaced by a private tmpfs; the hidden roots by empty ones.
        masked = [Path("/tmp").resolve()]
        for root in (h.resolve() for h in hidden_roots() if h.exists()):
            if not any(_within(root, m) for m in masked):
                masked.append(root)
                cmd += ["--tmpfs", str(root)]
        # Re-admit, read-only, what must run (our interpreter, the policy script) if it was masked.
        for path in [*runtime_roots(), *(p.resolve() for p in ro_binds)]:
            if path.exists() and any(_within(path, m) for m in masked):
                cmd += ["--ro-bind", str(path), str(path)]
        cmd += ["--bind", str(workdir), str(workdir), "--bind", str(home), str(home)]
        for path in (p.resolve() for p in read_only):  # bound after the workdir, so they stay read-only
            cmd += ["--ro-bind", str(path), str(path)]
        cmd += ["--chdir", str(workdir)]
        return [*cmd, "--", *argv]
