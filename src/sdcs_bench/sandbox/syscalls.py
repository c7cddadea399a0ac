"""The kernel surface a sandboxed command may not reach: system calls refused with EPERM.

One table, two forms: bubblewrap applies the filter (compiled by libseccomp, through ``pyseccomp``)
to the command it starts, after building the sandbox; docker gets the same rules as a seccomp
profile of the engine's JSON form (in place of its default profile, which lets io_uring through on
some engine versions). Without a capability most of these calls fail anyway; the filter closes what
an unprivileged process could still reach: kernel keyrings (shared by every process of a host uid), io_uring and
userfaultfd (frequent routes of kernel exploits), perf events and BPF, reading or writing another
process's memory, new namespaces, and mounting in any form. A call from another ABI (32-bit
``int 0x80`` on x86-64) kills the process: the filter is written for the native one.
"""

from __future__ import annotations

import errno
import hashlib
from functools import cache
from pathlib import Path

from sdcs_bench.core.fsutil import atomic_path
from sdcs_bench.core.paths import default_work_root

DENIED = (
    # kernel keyrings
    "add_key", "keyctl", "request_key",
    # exploit surface an unprivileged process can reach
    "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "perf_event_open", "bpf",
    # other processes' memory and state
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr",
    # the machine itself
    "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon",
    "swapoff", "acct", "quotactl", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "ioperm", "iopl", "uselib", "ustat", "sysfs",
    "vhangup", "fanotify_init",
)
# clone with a flag that makes a namespace (one rule per flag: refused if the flag is set), and
# clone3, whose flags sit in memory a filter cannot read: ENOSYS, so the C library falls back to clone.
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
RULES: tuple[tuple[str, int, tuple[int, int] | None], ...] = (
    *((name, errno.EPERM, None) for name in DENIED),
    *(("clone", errno.EPERM, (flag, flag)) for flag in NAMESPACE_FLAGS),
    ("clone3", errno.ENOSYS, None),
)  # (call, errno returned, (mask, value) on its first argument: refused when arg0 & mask == value)


def docker_profile() -> str:
    """:data:`RULES` as a docker seccomp profile (the engine's JSON form, every other call allowed)."""
    import json

    syscalls = []
    for name, code, arg in RULES:
        rule = {"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": code}
        if arg is not None:
            rule["args"] = [{"index": 0, "value": arg[0], "valueTwo": arg[1], "op": "SCMP_CMP_MASKED_EQ"}]
        syscalls.append(rule)
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": syscalls})


@cache
def compiled() -> bytes | None:
    """:data:`RULES` compiled by libseccomp into the BPF program bubblewrap loads; None where
    libseccomp is not usable. (Compiled once per process, and once per run by the warm job server,
    sdcs_bench/warm.py: loading libseccomp alone runs ``ldconfig`` twice.)"""
    try:
        import pyseccomp
    except (ImportError, OSError, RuntimeError):  # (pyseccomp raises RuntimeError when libseccomp is absent)
        return None
    import tempfile

    try:
        rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        for name, code, arg in RULES:
            args = [pyseccomp.Arg(0, pyseccomp.MASKED_EQ, *arg)] if arg else []
            try:
                rules.add_rule(pyseccomp.ERRNO(code), name, *args)
            except OSError:
                continue  # (a call this kernel's libseccomp does not know: nothing to refuse)
        with tempfile.TemporaryFile() as fh:
            rules.export_bpf(fh)
            fh.seek(0)
            return fh.read()
    except (OSError, RuntimeError):
        return None


@cache
def filter_file() -> Path | None:
    """The compiled filter (a BPF program bubblewrap reads from a descriptor), written once per
    content under the work root; None where libseccomp is not usable (the sandbox then runs without
    it, and docs/sandboxes.md says what that leaves open)."""
    program = compiled()
    if program is None:
        return None
    target = default_work_root() / ".seccomp" / f"{hashlib.sha256(program).hexdigest()[:16]}.bpf"
    if not target.is_file():
        with atomic_path(target) as tmp:
            tmp.write_bytes(program)
    return target
