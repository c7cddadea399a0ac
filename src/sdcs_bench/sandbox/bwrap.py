"""bubblewrap: a root made of only what a command needs, read-only; only the sandbox (and a private
HOME and /tmp) writable; every capability dropped; network off unless the agent needs its endpoint.

The sandbox's root is built from an allowlist, not by hiding parts of the host's: the system's
programs and libraries (``/usr`` and the top-level links into it, ``/etc``, ``/opt``), our own
interpreter and package, and the paths a harness or the scorer names, each read-only at its host
path. Nothing else of the host exists inside: not the project tree, the user's HOME, other
sandboxes, ``/var`` or ``/run`` (so no unix socket of the host's, such as a Docker engine's, can be
reached). A hidden root that lies inside an allowed tree (a project under ``/opt``) is covered by
an empty tmpfs. In a user namespace of its own, ``--cap-drop ALL`` empties every capability set, the bounding set
included, bubblewrap sets no-new-privileges, and no further user namespace can be made inside;
so a process inside, whoever runs SpecSnap (root included), cannot mount, remount, or gain a
capability back from a set-uid program.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from sdcs_bench.sandbox.base import Backend, hidden_roots, runtime_roots

SYSTEM_ROOTS = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# A user namespace of its own (mapped to whoever runs SpecSnap, so files keep their owners), in
# which every capability is dropped, the bounding set included (run as root without a user
# namespace, bubblewrap keeps the bounding set); no further user namespace can be made inside.
ISOLATION = ["--die-with-parent", "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc",
             "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def system_binds() -> tuple[list[str], list[Path]]:
    """The bubblewrap arguments that make the system's part of the root, and the trees bound."""
    args: list[str] = []
    bound: list[Path] = []
    for root in SYSTEM_ROOTS:
        path = Path(root)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), root]  # /bin -> usr/bin on a merged /usr
        elif path.is_dir():
            args += ["--ro-bind", root, root]
            bound.append(path)
    return args, bound


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
        args, _ = system_binds()
        probe = [exe, *ISOLATION, *args, "--dev", "/dev", "--proc", "/proc", "true"]
        return subprocess.run(probe, capture_output=True).returncode == 0

    def wrap(self, argv: list[str], *, workdir: Path, home: Path, network: bool, ro_binds: list[Path],
             read_only: list[Path] = (), pass_fds: tuple[int, ...] = (), ports: tuple[int, ...] = ()) -> list[str]:
        workdir, home = workdir.resolve(), home.resolve()
        system, bound = system_binds()
        cmd = [shutil.which("bwrap") or "bwrap", *ISOLATION, *system, "--dev", "/dev", "--proc", "/proc",
               "--tmpfs", "/tmp"]
        if not network:
            cmd.append("--unshare-net")
        # A hidden root inside an allowed tree is covered by an empty tmpfs.
        masked = [Path("/tmp").resolve()]
        for root in (h.resolve() for h in hidden_roots() if h.exists()):
            if any(_within(root, b) for b in bound) and not any(_within(root, m) for m in masked):
                masked.append(root)
                cmd += ["--tmpfs", str(root)]
        # What must run (our interpreter, the policy script, a harness's install), read-only at its
        # host path, unless the system's part already shows it.
        for path in [*runtime_roots(), *(p.resolve() for p in ro_binds)]:
            if not path.exists():
                continue
            shown = any(_within(path, b) for b in bound) and not any(_within(path, m) for m in masked)
            if not shown:
                cmd += ["--ro-bind", str(path), str(path)]
        cmd += ["--bind", str(workdir), str(workdir), "--bind", str(home), str(home)]
        for path in (p.resolve() for p in read_only):  # bound after the workdir, so they stay read-only
            cmd += ["--ro-bind", str(path), str(path)]
        # The root itself (a tmpfs holding the mount points bubblewrap made) is read-only too.
        cmd += ["--remount-ro", "/", "--chdir", str(workdir)]
        return [*cmd, "--", *argv]
