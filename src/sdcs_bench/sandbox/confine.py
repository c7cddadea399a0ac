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
    import ctypes
    import json
    import signal
    import subprocess

    # We stay between the runner and bubblewrap, whose --die-with-parent now watches us: we die with
    # the runner (a killed study), so the sandbox dies with it as before.
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # (the runner died before the signal was armed)
        return 137
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    argv = [a.replace("{info-fd}", str(info_w)).replace("{block-fd}", str(block_r)) for a in command]
    inherited = []  # what our caller passed down (the scorer's verdict pipe) goes on to the command
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                inherited.append(fd)
        except OSError:
            continue
    try:
        proc = subprocess.Popen(argv, pass_fds=(info_w, block_r, *inherited))
    except OSError as exc:
        print(f"confine: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    os.close(info_w)
    os.close(block_r)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    data = b""
    while len(data) < 65536:  # bubblewrap's first word: the sandbox's pid, as JSON
        chunk = os.read(info_r, 4096)
        if not chunk:
            break
        data += chunk
        try:
            pid = int(json.loads(data)["child-pid"])
            break
        except (ValueError, KeyError, TypeError):
            continue
    else:
        pid = None
    if not data or pid is None:  # (it failed before making its namespaces: say how it ended)
        return _status(proc.wait())
    try:
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(f"0 0 1\n1000 {uid} 1\n")
        child = os.fork()
        if child == 0:  # (setns needs a single thread: a child of our own)
            try:
                libc = ctypes.CDLL(None, use_errno=True)
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
        proc.kill()
        proc.wait()
        return 125
    os.write(block_w, b"1")
    os.close(block_w)
    return _status(proc.wait())


def _status(code: int) -> int:
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
