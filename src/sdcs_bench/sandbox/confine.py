"""Put a command under its sandbox's limits before it starts anything.

    python -I -S -B confine.py [--cgroup DIR]... [--rlimit NAME=VALUE]... -- ARGV...

Joins each cgroup (the sandbox's own, which :mod:`sdcs_bench.sandbox.cgroup` made and wrote the
limits into), sets each resource limit (soft and hard: the agent cannot raise it back), then execs
ARGV; everything ARGV starts inherits both. Standard library only, run as a file: it imports
nothing of sdcs_bench. A cgroup it cannot join is said on stderr and skipped (the session record
says which limits the kernel enforced).
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
    for flag, value in zip(opts[::2], opts[1::2]):
        if flag == "--cgroup":
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
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"confine: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
