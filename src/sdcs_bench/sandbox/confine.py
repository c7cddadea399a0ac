"""Put a command under its sandbox's limits before it starts anything.

    python -I -S -B confine.py [--cgroup DIR]... [--rlimit NAME=VALUE]... [--seccomp FILE] [--map-uid UID] -- ARGV...

Joins each cgroup (the sandbox's own, which :mod:`sdcs_bench.sandbox.cgroup` made and wrote the
limits into), sets each resource limit (soft and hard: the agent cannot raise it back), then execs
ARGV; everything ARGV starts inherits both. Standard library only, run as a file: it imports
nothing of sdcs_bench. A cgroup it cannot join is said on stderr and skipped (the session record
says which limits the kernel enforced).

``--seccomp FILE``: FILE (a compiled system-call filter, :mod:`sdcs_bench.sandbox.syscalls`) is
opened and its descriptor's number put where ARGV says ``{seccomp-fd}`` (bubblewrap's ``--seccomp``).

``--map-uid UID`` (run as root, ARGV a bubblewrap command line holding ``{info-fd}`` and
``{block-fd}`` for its ``--info-fd`` and ``--userns-block-fd``): instead of exec'ing, start ARGV,
and while bubblewrap waits, map the sandbox's uid and gid 1000 to UID on the host (and 0 to 0, which
bubblewrap needs to build the root; nothing inside can become it: no capability, no new
privileges), and forbid any further user namespace in the sandbox's (its ``max_user_namespaces``
set to 0, as bubblewrap's ``--disable-userns`` would, which cannot be combined with a map made by
another process). So the agent's processes are UID on the host, not root: a file readable by root
alone is not readable by them, wherever it is. Then wait for it and exit as it did.
"""

from __future__ import annotations

import os
import resource
import sys

RLIMITS = {"fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE,
           "nproc": resource.RLIMIT_NPROC, "as": resource.RLIMIT_AS}


def main(argv: list[str]) -> int:
    try:
        i = argv.index("--")
    except ValueError:
        print("usage: confine.py [--cgroup DIR]... [--rlimit NAME=VALUE]... -- ARGV...", file=sys.stderr)
        return 2
    opts, command = argv[:i], argv[i + 1:]
    if not command or len(opts) % 2:
        print("usage: confine.py [--cgroup DIR]... [--rlimit NAME=VALUE]... -- ARGV...", file=sys.stderr)
        return 2
    map_uid = None
    for flag, value in zip(opts[::2], opts[1::2]):
        if flag == "--map-uid":
            map_uid = int(value)
        elif flag == "--seccomp":
            try:
                fd = os.open(value, os.O_RDONLY)
            except OSError as exc:
                print(f"confine: cannot read the system-call filter {value}: {exc.strerror}", file=sys.stderr)
                return 125
            os.set_inheritable(fd, True)
            command = [a.replace("{seccomp-fd}", str(fd)) for a in command]
        elif flag == "--cgroup":
            try:
                with open(os.path.join(value, "cgroup.procs"), "w") as fh:
                    fh.write(str(os.getpid()))
            except OSError as exc:
                print(f"confine: cannot join cgroup {value}: {exc.strerror}", file=sys.stderr)
        elif flag == "--rlimit":
            name, _, number = value.partition("=")
            limit = int(number)
            soft, hard = resource.getrlimit(RLIMITS[name])
            if hard != resource.RLIM_INFINITY and limit > hard:
                limit = hard  # (never raised: only lowered)
            resource.setrlimit(RLIMITS[name], (limit, limit))
        else:
            print(f"confine: unknown option {flag}", file=sys.stderr)
            return 2
    if map_uid is not None:
        return _mapped(command, map_uid)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"confine: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


def _mapped(command: list[str], uid: int) -> int:
    # (Only what the start needs is imported: this runs before every sandbox, and the subprocess,
    # json and signal modules cost it twice the interpreter's own start.)
    import ctypes

    import _signal

    # We stay between the runner and bubblewrap, whose --die-with-parent now watches us: we die with
    # the runner (a killed study), so the sandbox dies with it as before.
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, _signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # (the runner died before the signal was armed)
        return 137
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    argv = [a.replace("{info-fd}", str(info_w)).replace("{block-fd}", str(block_r)) for a in command]
    # What our caller passed down (the scorer's verdict pipe) is inheritable and goes on to the
    # command, with bubblewrap's two pipe ends; everything else of ours is close-on-exec.
    os.set_inheritable(info_w, True)
    os.set_inheritable(block_r, True)
    try:
        pid_bwrap = os.posix_spawnp(argv[0], argv, os.environ)
    except OSError as exc:
        print(f"confine: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    os.close(info_w)
    os.close(block_r)
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, lambda signum, _frame: os.kill(pid_bwrap, signum))
    pid = _child_pid(info_r)
    if pid is None:  # (it failed before making its namespaces: say how it ended)
        return _wait(pid_bwrap)
    try:
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(f"0 0 1\n1000 {uid} 1\n")
        child = os.fork()
        if child == 0:  # (setns needs a single thread: a child of our own)
            try:
                fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
                if libc.setns(fd, 0x10000000) != 0:  # CLONE_NEWUSER
                    os._exit(3)
                with open("/proc/sys/user/max_user_namespaces", "w") as fh:
                    fh.write("0")
                os._exit(0)
            except BaseException:  # noqa: BLE001 - any failure: the parent refuses to go on
                os._exit(4)
        _, status = os.waitpid(child, 0)
        if status != 0:
            raise OSError(f"could not forbid user namespaces in the sandbox (status {status})")
    except OSError as exc:
        print(f"confine: cannot map the sandbox's user: {exc}", file=sys.stderr)
        os.kill(pid_bwrap, _signal.SIGKILL)
        _wait(pid_bwrap)
        return 125
    os.write(block_w, b"1")
    os.close(block_w)
    return _wait(pid_bwrap)


def _child_pid(fd: int) -> int | None:
    """Bubblewrap's first word on its info pipe, ``{"child-pid": N, ...}``: N (None if it closed the
    pipe first, or said something else). Read by hand: a json parser costs the start 14 ms."""
    data = b""
    while len(data) < 65536:
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        _, key, rest = data.partition(b'"child-pid"')
        rest = rest.lstrip()
        if not key or not rest.startswith(b":"):
            continue
        digits = rest[1:].lstrip()
        n = len(digits) - len(digits.lstrip(b"0123456789"))
        if 0 < n < len(digits):  # (a number, and what follows it: it is whole)
            return int(digits[:n])
    return None


def _wait(pid: int) -> int:
    return _status(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))


def _status(code: int) -> int:
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
