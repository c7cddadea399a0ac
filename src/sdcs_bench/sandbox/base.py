"""What a sandbox backend must do: start a process group inside the sandbox and prove isolation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, ClassVar, NamedTuple

from sdcs_bench.core.paths import default_work_root, installed_checkout, project_root
from sdcs_bench.sandbox import confine
from sdcs_bench.sandbox.limits import Limits
from sdcs_bench.sandbox.owner import Handover



class SandboxLeak(RuntimeError):
    """Hidden tests or gold reached, or could reach, an agent's sandbox."""


def base_env(home: Path) -> dict[str, str]:
    """The whole environment an agent or scorer starts with: nothing of ours leaks through."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }


def hidden_roots() -> list[Path]:
    """What no agent may see: the invoking user's HOME (credentials, harness histories), the project
    tree (workloads, hidden tests, gold, results; also the clone the package is installed from) and
    the scratch area of other trials' sandboxes."""
    roots = [Path.home(), project_root(), default_work_root()]
    own = installed_checkout()  # the package's own clone, when a study runs in another one
    return roots if own is None or own == project_root() else [*roots, own]


def runtime_roots() -> list[Path]:
    """What must stay readable for our own interpreter (and pytest) to start inside the sandbox."""
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sysconfig.get_paths()["purelib"])}
    roots |= {Path(__file__).resolve().parents[1]}  # the sdcs_bench package itself (editable installs)
    return sorted(r.resolve() for r in roots)


class Backend(ABC):
    name: ClassVar[str]
    isolated: ClassVar[bool]
    enforces_read_only: ClassVar[bool] = False

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._relays: dict[str, list] = {}
        self._enforced: dict[str, list[str]] = {}  # per sandbox: the limits its cgroups enforce
        self._handover = Handover(self.limits.files)

    def sandbox_uid(self, workdir: Path) -> int | None:
        """The host uid this sandbox's processes run as, when it is not whoever runs SpecSnap
        (:mod:`.owner`); its work tree and HOME are handed over to it while a command runs."""
        return None

    def confinement(self, workdir: Path, extra: list[str] = ()) -> list[str]:
        """The command line that puts what follows under this sandbox's limits (its cgroups, made
        now with the limits written into them, and its resource limits): :mod:`.confine`, with
        ``extra`` options of its own."""
        from sdcs_bench.sandbox import cgroup

        group = cgroup.create(sandbox_marker(workdir), self.limits)
        self._enforced[sandbox_marker(workdir)] = group.enforced
        args = [sys.executable, "-I", "-S", "-B", confine.__file__]
        for where in group.dirs:
            args += ["--cgroup", str(where)]
        args += ["--rlimit", f"fsize={self.limits.file_size}", "--rlimit", f"nofile={self.limits.open_files}",
                 "--rlimit", "core=0", *extra]
        return [*args, "--"]

    def enforced(self, workdir: Path) -> list[str]:
        """The limits the kernel enforces for this sandbox's last command (its cgroups, as
        :meth:`confinement` made them, and its resource limits); the session runner watches the rest."""
        return [*self._enforced.get(sandbox_marker(workdir), []), "file_size", "open_files"]

    def limit_events(self, workdir: Path) -> dict[str, int]:
        """What the kernel stopped in this sandbox so far: ``oom_kills``, ``fork_refusals``."""
        from sdcs_bench.sandbox import cgroup

        return cgroup.events(sandbox_marker(workdir))

    def memory_now(self, workdir: Path) -> int | None:
        """The memory this sandbox holds now, where the kernel counts it (else None)."""
        from sdcs_bench.sandbox import cgroup

        return cgroup.memory_current(sandbox_marker(workdir))

    @classmethod
    @abstractmethod
    def available(cls) -> bool: ...

    @abstractmethod
    def wrap(
        self, argv: list[str], *, workdir: Path, home: Path, network: bool, ro_binds: list[Path],
        read_only: list[Path] = (), pass_fds: tuple[int, ...] = (), ports: tuple[int, ...] = (),
    ) -> list[str]:
        """The command line that runs ``argv`` inside the sandbox. ``read_only`` are paths inside
        ``workdir`` the process must not change (the scorer's test tree); a backend that cannot
        enforce it says so (``enforces_read_only``) and the scorer checks them by hash instead.
        ``pass_fds`` are file descriptors the process inherits (at the same numbers) for writing,
        such as the scorer's verdict pipe. ``ports``, with ``network``: the ports on 127.0.0.1 the
        command needs (its model proxy); a backend that can confine it to them does (docker), the
        others give it the host's network."""

    def spawn(
        self,
        argv: list[str],
        *,
        workdir: Path,
        home: Path,
        env: dict[str, str],
        network: bool = False,
        ro_binds: list[Path] | None = None,
        read_only: list[Path] | None = None,
        pass_fds: tuple[int, ...] = (),
        ports: tuple[int, ...] = (),
        stdin: int | IO | None = subprocess.DEVNULL,
        stdout: int | IO | None = None,
        stderr: int | IO | None = None,
    ) -> subprocess.Popen:
        """Start ``argv`` as the leader of a new process group (so one kill ends all of it)."""
        uid = self.sandbox_uid(Path(workdir).resolve())
        if uid is not None:  # the work tree and HOME are the sandbox user's while it runs (see reap)
            self._handover.give(Path(workdir), uid, [Path(workdir), Path(home)])
        cmd = self.wrap(argv, workdir=workdir, home=home, network=network, ro_binds=list(ro_binds or []),
                        read_only=list(read_only or []), pass_fds=tuple(pass_fds), ports=tuple(ports))
        return confine.launch(  # (a confined bubblewrap is started and confined from here: no interpreter between)
            cmd, cwd=workdir, env=env, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True,
            pass_fds=pass_fds,
        )

    def run(
        self,
        argv: list[str],
        *,
        workdir: Path,
        home: Path,
        env: dict[str, str],
        timeout: float,
        network: bool = False,
        ro_binds: list[Path] | None = None,
        read_only: list[Path] | None = None,
        pass_fds: tuple[int, ...] = (),
        ports: tuple[int, ...] = (),
    ) -> tuple[int | None, bytes, bytes]:
        """Run to completion; on timeout kill the whole group and return ``None`` as exit code."""
        try:
            proc = self.spawn(
                argv, workdir=workdir, home=home, env=env, network=network, ro_binds=ro_binds,
                read_only=read_only, pass_fds=pass_fds, ports=ports, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except BaseException:
            self.reap(workdir)  # (a start that failed: what it set up goes, as after any command)
            raise
        try:
            out, err = proc.communicate(timeout=timeout)
            return proc.returncode, out, err
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            self.reap(workdir)
            out, err = proc.communicate()
            return None, out, err
        finally:
            self.reap(workdir)  # nothing it started outlives it; its cgroups go

    def reap(self, workdir: Path) -> list[str]:
        """Remove what of this sandbox outlives its killed process group: every process left in
        its cgroups (killed; the cgroups removed), a container; then hand its work tree and HOME
        back to whoever runs SpecSnap (:mod:`.owner`)."""
        from sdcs_bench.sandbox import cgroup

        gone = [f"pid {p}" for p in cgroup.kill(sandbox_marker(workdir))]
        self._handover.take_back(Path(workdir))
        return gone

    def leak_probe(self, workdir: Path, home: Path, secrets: list[Path]) -> list[Path]:
        """The secret paths a process in this sandbox can see (must be empty for isolation). A probe
        that did not run to its end (no shell, a sandbox that would not start) is a failed check,
        never an empty answer. (A shell's test, not an interpreter: the probe runs before every
        session, and a Python's start cost it three times the sandbox's own.)"""
        return self.probe(workdir, home, secrets).visible

    def probe(self, workdir: Path, home: Path, secrets: list[Path], then: tuple[str, ...] = (),
              env: dict[str, str] | None = None) -> Probe:
        """:meth:`leak_probe`, and then, in the same sandbox (one start for both: the guard's check
        before a cut session, :mod:`sdcs_bench.sandbox.guard_install`), the command ``then``, whose
        exit status and stderr are returned with what was visible. The probe's answer is complete
        once it has said so (``then`` starts after that, and output is only appended); how ``then``
        ended is None when it did not say (it hung, killed the shell, garbled the last line: it may
        run the agent's own hook), which its caller judges, never a failed probe."""
        try:
            code, out, err = self.run(
                ["/bin/sh", "-c", _PROBE, "probe", str(len(secrets)), *map(str, secrets), *then],
                workdir=workdir, home=home, env=env or base_env(home), timeout=60 if not then else 180,
            )
        except OSError as exc:
            raise SandboxLeak(f"the leak probe did not run in the sandbox: {exc}") from None
        lines = out.decode(errors="replace").splitlines()
        said = err.decode(errors="replace")
        done = lines.index(_PROBE_DONE) if _PROBE_DONE in lines else None
        if done is None or (not then and (code != 0 or done != len(lines) - 1)):
            raise SandboxLeak(f"the leak probe did not run in the sandbox (exit status {code}): "
                              f"{said.strip()[-300:] or 'no output'}")
        last = lines[-1].removeprefix(_THEN_DONE) if lines[-1].startswith(_THEN_DONE) else ""
        status = int(last) if then and code == 0 and done < len(lines) - 1 and last.isdigit() else None
        return Probe([Path(line) for line in lines[:done] if line], status, said)


class Probe(NamedTuple):
    """What :meth:`Backend.probe` found: the secret paths visible in the sandbox, and the exit status
    of the command run after the probe (None: none was) with the sandbox's stderr."""

    visible: list[Path]
    status: int | None
    stderr: str


_PROBE_DONE = "specsnap-probe-done"
_THEN_DONE = "specsnap-then-status "
# Its arguments: how many secret paths, the paths, then the command to run after it (if any).
_PROBE = ('n=$1; shift; while [ "$n" -gt 0 ]; do if [ -e "$1" ]; then printf "%s\\n" "$1"; fi; shift; '
          f'n=$((n - 1)); done; echo {_PROBE_DONE}; if [ $# -gt 0 ]; then "$@"; echo "{_THEN_DONE}$?"; fi')

SANDBOX_MARKER = "SPECSNAP_SANDBOX"


def sandbox_marker(workdir: Path) -> str:
    """An opaque id of one live sandbox, put into the environment of everything run in it."""
    import hashlib

    return hashlib.sha256(str(Path(workdir).resolve()).encode()).hexdigest()[:16]


def relay_scratch(workdir: Path) -> Path:
    """The host-side place of a sandbox's relays (bwrap's socket directory; docker's shim makes
    directories named after it), private to whoever runs SpecSnap and removed by ``reap``."""
    import tempfile

    return Path(tempfile.gettempdir()) / f"specsnap-relay-{sandbox_marker(workdir)}"


def kill_marked(marker: str) -> list[int]:
    """SIGKILL every process whose environment carries this sandbox's marker (a process that left
    the agent's process group, or one a killed run left behind); return their pids."""
    needle = f"{SANDBOX_MARKER}={marker}".encode()
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        if needle in env:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
            except ProcessLookupError:
                pass
    return sorted(killed)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
