"""Put a command under its sandbox's limits before it starts anything.

    python -I -S -B confine.py [--cgroup DIR]... [--rlimit NAME=VALUE]... [--seccomp FILE] -- ARGV...

Joins each cgroup (the sandbox's own, which :mod:`sdcs_bench.sandbox.cgroup` made and wrote the
limits into), sets each resource limit (soft and hard: the agent cannot raise it back), then execs
ARGV; everything ARGV starts inherits both. Standard library only, run as a file: it imports
nothing of sdcs_bench. A cgroup it cannot join is said on stderr and skipped (the session record
says which limits the kernel enforced).

``--seccomp FILE``: FILE (a compiled system-call filter, :mod:`sdcs_bench.sandbox.syscalls`) is
opened and its descriptor's number put where ARGV says ``{seccomp-fd}`` (bubblewrap's ``--seccomp``).

:func:`launch` starts such a command line from a running program (a sandbox backend). With one more
option, ``--map-uid UID`` (SpecSnap run as root, ARGV a bubblewrap command line holding
``{info-fd}`` and ``{block-fd}`` for its ``--info-fd`` and ``--userns-block-fd``), no interpreter
runs in between: bubblewrap starts from the program itself, and while it waits, before anything of
ARGV runs, the program puts bubblewrap and its sandbox into the cgroups, sets the sandbox's resource
limits, maps the sandbox's uid and gid 1000 to UID on the host (and 0 to 0, which bubblewrap needs
to build the root; nothing inside can become it: no capability, no new privileges), and forbids any
further user namespace in the sandbox's (its ``max_user_namespaces`` set to 0, as bubblewrap's
``--disable-userns`` would, which cannot be combined with a map made by another process). So the
agent's processes are UID on the host, not root: a file readable by root alone is not readable by
them, wherever it is. Any step that fails kills bubblewrap before its sandbox has run anything.
"""

from __future__ import annotations

import os
import resource
import sys

RLIMITS = {"fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE,
           "nproc": resource.RLIMIT_NPROC, "as": resource.RLIMIT_AS}


USAGE = "usage: confine.py [--cgroup DIR]... [--rlimit NAME=VALUE]... [--seccomp FILE] -- ARGV..."


def parse(argv: list[str]) -> tuple[dict, list[str]]:
    """``(options, command)`` of a command line (ValueError: what is wrong with it)."""
    try:
        i = argv.index("--")
    except ValueError:
        raise ValueError(USAGE) from None
    opts, command = argv[:i], argv[i + 1:]
    if not command or len(opts) % 2:
        raise ValueError(USAGE)
    options: dict = {"cgroups": [], "rlimits": [], "seccomp": None, "map_uid": None}
    for flag, value in zip(opts[::2], opts[1::2]):
        if flag == "--cgroup":
            options["cgroups"].append(value)
        elif flag == "--rlimit":
            name, _, number = value.partition("=")
            if name not in RLIMITS:
                raise ValueError(f"confine: unknown resource limit {name!r}")
            options["rlimits"].append((RLIMITS[name], int(number)))
        elif flag == "--seccomp":
            options["seccomp"] = value
        elif flag == "--map-uid":
            options["map_uid"] = int(value)
        else:
            raise ValueError(f"confine: unknown option {flag}")
    return options, command


def _join(cgroups: list[str], pids: list[int]) -> None:
    """Move each process into each cgroup; one that cannot be joined is said on stderr and skipped
    (the session record says which limits the kernel enforced)."""
    for where in cgroups:
        for pid in pids:
            try:
                with open(os.path.join(where, "cgroup.procs"), "w") as fh:
                    fh.write(str(pid))
            except OSError as exc:
                print(f"confine: cannot move {pid} into cgroup {where}: {exc.strerror}", file=sys.stderr)


def _limit(pid: int, rlimits: list[tuple[int, int]]) -> None:
    """Set each resource limit of the process, soft and hard (never raised: only lowered)."""
    for which, limit in rlimits:
        hard = resource.prlimit(pid, which)[1]
        limit = hard if hard != resource.RLIM_INFINITY and limit > hard else limit
        resource.prlimit(pid, which, (limit, limit))


def main(argv: list[str]) -> int:
    try:
        options, command = parse(argv)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if options["map_uid"] is not None:
        print("confine: --map-uid is for launch(), from the program that waits for the sandbox", file=sys.stderr)
        return 2
    if options["seccomp"] is not None:
        try:
            fd = os.open(options["seccomp"], os.O_RDONLY)
        except OSError as exc:
            print(f"confine: cannot read the system-call filter {options['seccomp']}: {exc.strerror}", file=sys.stderr)
            return 125
        os.set_inheritable(fd, True)
        command = [a.replace("{seccomp-fd}", str(fd)) for a in command]
    _join(options["cgroups"], [os.getpid()])
    _limit(os.getpid(), options["rlimits"])
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"confine: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


def launch(argv: list[str], **popen):
    """Start ``argv`` (a command line of this script: ``[python, options..., this file, options,
    "--", command...]``) with ``subprocess.Popen(**popen)``; returns the process to wait for. Without
    ``--map-uid``: the script runs it. With it: bubblewrap, started and confined from here (see the
    module's doc); ``popen``'s ``pass_fds`` reach bubblewrap as they would have the script."""
    import subprocess

    script = argv.index(__file__) if __file__ in argv else None
    if script is None or "--map-uid" not in argv[script + 1:argv.index("--", script)]:
        return subprocess.Popen(argv, **popen)
    options, command = parse(argv[script + 1:])
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    opened = [info_r, info_w, block_r, block_w]
    proc = pid = None
    released = False
    try:
        passed = [info_w, block_r]
        if options["seccomp"] is not None:
            seccomp = os.open(options["seccomp"], os.O_RDONLY)
            opened.append(seccomp)
            passed.append(seccomp)
            command = [a.replace("{seccomp-fd}", str(seccomp)) for a in command]
        command = [a.replace("{info-fd}", str(info_w)).replace("{block-fd}", str(block_r)) for a in command]
        proc = subprocess.Popen(command, **{**popen, "pass_fds": (*popen.get("pass_fds", ()), *passed)})
        for fd in passed:
            os.close(fd)
            opened.remove(fd)
        pid = _child_pid(info_r)
        if pid is None:  # (it ended before making its sandbox and says why on its stderr: killed anyway below)
            return proc
        try:
            _confine_sandbox(proc.pid, pid, options)
        except OSError as exc:
            raise OSError(f"confine: could not confine the sandbox: {exc}") from None
        os.write(block_w, b"1")
        released = True
        return proc
    finally:
        if proc is not None and not released:
            # Whatever stopped us (a failed step, an exception, an interrupt), bubblewrap and its
            # waiting sandbox are killed before the end of the pipe it waits on is closed below:
            # it would take the close for the word to go on, unconfined.
            for member in (pid, proc.pid):
                if member is not None:
                    try:
                        os.kill(member, 9)  # SIGKILL
                    except OSError:
                        pass
            proc.wait()
        for fd in opened:
            os.close(fd)


def _confine_sandbox(bwrap: int, pid: int, options: dict) -> None:
    """While bubblewrap's sandbox (``pid``) waits: its cgroups, its limits, its user map, no further
    user namespace. (OSError: one of them could not be set.)"""
    import subprocess

    _join(options["cgroups"], [bwrap, pid])  # (said on the runner's stderr, the stage's log)
    _limit(pid, options["rlimits"])
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w") as fh:
            fh.write(f"0 0 1\n1000 {options['map_uid']} 1\n")
    # (setns into a user namespace needs a process of a single thread: nsenter's, not ours)
    done = subprocess.run(["nsenter", f"--user=/proc/{pid}/ns/user", "--", "/bin/sh", "-c",
                           "echo 0 > /proc/sys/user/max_user_namespaces"],
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, stdin=subprocess.DEVNULL,
                          capture_output=True)
    if done.returncode != 0:
        raise OSError(f"could not forbid user namespaces in the sandbox (nsenter: exit {done.returncode}: "
                      f"{done.stderr.decode(errors='replace').strip()[-200:]})")


def _child_pid(fd: int) -> int | None:
    """The sandbox's pid from bubblewrap's info pipe, ``{"child-pid": N, ...}``, read whole (to its
    closing brace: bubblewrap writes it in pieces, and a piece written after we closed the pipe would
    kill it); None if it closed the pipe first, or said something else. Parsed by hand: the script
    stays free of a json parser."""
    data = b""
    while len(data) < 65536 and b"}" not in data:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    if b"}" not in data:
        return None
    _, key, rest = data.partition(b'"child-pid"')
    rest = rest.lstrip()
    if not key or not rest.startswith(b":"):
        return None
    digits = rest[1:].lstrip()
    n = len(digits) - len(digits.lstrip(b"0123456789"))
    return int(digits[:n]) if n else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
