"""bubblewrap: a root made of only what a command needs, read-only; only the sandbox (and a private
HOME and /tmp) writable; every capability dropped; a network namespace of its own.

The sandbox's root is built from an allowlist, not by hiding parts of the host's: the system's
programs and libraries (``/usr`` and the top-level links into it, ``/opt``), a minimal ``/etc``
(the public files programs need, a ``passwd`` and ``group`` of the sandbox's own: no ``shadow``,
no ssh or TLS private keys, no cluster or engine configuration), our own interpreter and package,
and the paths a harness or the scorer names, each read-only at its host path. Nothing else of the
host exists inside: not the project tree, the user's HOME, other sandboxes, ``/var`` or ``/run``
(so no unix socket of the host's, such as a Docker engine's or munge's, can be reached). A hidden
root that lies inside an allowed tree (a project under ``/opt``) is covered by an empty tmpfs. In
a user namespace of its own, ``--cap-drop ALL`` empties every capability set, the bounding set
included, bubblewrap sets no-new-privileges, and no further user namespace can be made inside; so
a process inside, whoever runs SpecSnap (root included), cannot mount, remount, or gain a
capability back from a set-uid program. Inside, the command runs as uid 1000 (``agent``), never 0;
run as root, SpecSnap also makes it a uid of its own on the host (:mod:`.owner`), so files readable
by root alone are unreadable inside wherever they are (docs/sandboxes.md).

The network namespace is always the sandbox's own (``--unshare-net``): a loopback of its own and
nothing else, so no host port, no other trial's proxy and no abstract unix socket of the host is
reachable. A command that needs its model proxy gets exactly that: :mod:`.relay` listens on the
proxy's port inside and carries each connection through a unix socket bound in from the host.

Limits (:mod:`.limits`): the sandbox's cgroups and resource limits are set by :mod:`.confine`
before bubblewrap starts; ``/tmp`` and ``/dev/shm`` are tmpfs of ``limits.tmp`` bytes each.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from functools import cache
from pathlib import Path

from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.core.paths import default_work_root
from sdcs_bench.sandbox import relay, syscalls
from sdcs_bench.sandbox.base import Backend, hidden_roots, relay_scratch, runtime_roots, sandbox_marker
from sdcs_bench.sandbox.owner import account_files, host_uid

SYSTEM_ROOTS = ("/usr", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# A user namespace of its own (mapped to whoever runs SpecSnap, so files keep their owners), in
# which every capability is dropped, the bounding set included (run as root without a user
# namespace, bubblewrap keeps the bounding set); no further user namespace can be made inside; a
# network namespace of its own (a loopback only).
ISOLATION = ["--die-with-parent", "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc",
             "--unshare-uts", "--unshare-cgroup-try", "--unshare-net", "--cap-drop", "ALL"]
AGENT_UID = 1000  # who the command is inside (never 0)
# With a mapped user, bubblewrap starts the command as the namespace's root and this drops it to the
# sandbox's user: uid and gid 1000, no supplementary group, no capability (the bounding set
# emptied), no new privileges; whatever the command starts inherits all of it.
DROP = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--inh-caps=-all", "--ambient-caps=-all",
        "--bounding-set=-all", "--no-new-privs", "--"]


# The /etc a sandbox sees: public files programs need (the dynamic linker's cache, alternatives'
# links, time zone, certificates' public half, MIME and protocol tables), each bound only if no
# part of it is private (readable by its owner or group alone). Never: shadow, gshadow, sudoers,
# ssh, ssl/private, munge, slurm, docker, the host's passwd and group (the sandbox has its own).
ETC_PUBLIC = ("alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "debian_version", "gai.conf",
              "host.conf", "inputrc", "issue", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias", "localtime",
              "magic", "magic.mime", "mime.types", "nsswitch.conf", "os-release", "profile", "protocols", "python3",
              "services", "shells", "ssl/certs", "ssl/openssl.cnf", "terminfo", "timezone", "xattr.conf")
ETC_MAX_ENTRIES = 20_000  # a public directory larger than this is not bound (no host-side walk is unbounded)


def _within(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or lies below it (both absolute: compared part by part, as ``root in
    path.parents`` would, without making every parent)."""
    parts = root.parts
    return path.parts[: len(parts)] == parts


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


def _public(path: Path) -> bool:
    """Whether every file under ``path`` may be read by anyone (a link counts as public: what it
    points to is bound only if public itself)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return True
    if stat.S_ISREG(st.st_mode):
        return bool(st.st_mode & stat.S_IROTH)
    if not stat.S_ISDIR(st.st_mode) or (st.st_mode & 0o005) != 0o005:
        return False
    seen = 0
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            seen += 1
            if seen > ETC_MAX_ENTRIES:
                return False
            try:
                child = os.lstat(os.path.join(top, name))
            except OSError:
                return False
            if stat.S_ISLNK(child.st_mode):
                continue
            need = 0o005 if stat.S_ISDIR(child.st_mode) else 0o004
            if (child.st_mode & need) != need:
                return False
    return True


def public_etc() -> tuple[str, ...]:
    """The bubblewrap arguments that show the public entries of :data:`ETC_PUBLIC`: a walk of the
    host's /etc, done again only when an entry's own status changed (so once per run, by the warm
    job server, sdcs_bench/warm.py, whose jobs inherit it)."""
    status = []
    for name in ETC_PUBLIC:
        try:
            st = os.lstat(Path("/etc") / name)
            status.append((st.st_mode, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            status.append(None)
    return _public_etc(tuple(status))


@cache
def _public_etc(_status: tuple) -> tuple[str, ...]:
    args = ["--perms", "0755", "--dir", "/etc"]
    made = {Path("/etc")}
    for name in ETC_PUBLIC:
        path = Path("/etc") / name
        for parent in reversed(path.parents):  # (open to the sandbox's user, whatever bubblewrap would copy)
            if parent not in made and parent != Path("/") and Path("/etc") in parent.parents:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        if os.path.lexists(path) and _public(path):
            args += (["--symlink", os.readlink(path), str(path)] if path.is_symlink() else
                     ["--ro-bind", str(path), str(path)])
    return tuple(args)


@cache
def etc_binds() -> tuple[str, ...]:
    """The bubblewrap arguments of the sandbox's /etc: the public entries of :data:`ETC_PUBLIC`
    and ``passwd``, ``group``, ``hosts`` and ``hostname`` of the sandbox's own."""
    own = default_work_root() / ".etc"
    public = {"hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n", "hostname": "specsnap\n"}
    args = list(public_etc())
    for name, text in public.items():
        target = own / name
        if not target.is_file() or target.read_text() != text:
            atomic_write(target, text)
            target.chmod(0o644)
        args += ["--ro-bind", str(target), f"/etc/{name}"]
    for name, target in account_files(AGENT_UID).items():
        args += ["--ro-bind", str(target), f"/etc/{name}"]
    return tuple(args)


class BwrapBackend(Backend):
    name = "bwrap"
    isolated = True
    enforces_read_only = True

    def sandbox_uid(self, workdir: Path) -> int | None:
        # (the user map gives the agent's uid 1000 that uid on the host, nsenter forbids user namespaces
        # inside: confine.py; setpriv then drops to that uid inside)
        return host_uid(sandbox_marker(workdir)) if shutil.which("setpriv") and shutil.which("nsenter") else None

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
        tmp = str(self.limits.tmp)
        uid = self.sandbox_uid(workdir)
        rules = syscalls.filter_file()  # (confine.py opens it for bubblewrap)
        confine = ["--seccomp", str(rules)] if rules else []
        if uid is None:
            head = [*self.confinement(workdir, confine), shutil.which("bwrap") or "bwrap", *ISOLATION]
        else:  # (confine.py maps the user while bubblewrap waits, and forbids nested user namespaces)
            head = [*self.confinement(workdir, [*confine, "--map-uid", str(uid)]), shutil.which("bwrap") or "bwrap",
                    *(a for a in ISOLATION if a not in ("--disable-userns", "--cap-drop", "ALL")),
                    "--info-fd", "{info-fd}", "--userns-block-fd", "{block-fd}"]
            argv = [*DROP, *argv]
        if rules:
            head += ["--seccomp", "{seccomp-fd}"]
        who = ["--uid", str(AGENT_UID), "--gid", str(AGENT_UID)] if uid is None else []  # (else: DROP)
        cmd = [*head, *who, *system, *etc_binds(), "--dev", "/dev", "--perms", "1777", "--size", tmp,
               "--tmpfs", "/dev/shm", "--proc", "/proc", "--perms", "1777", "--size", tmp, "--tmpfs", "/tmp"]
        # A hidden root inside an allowed tree is covered by an empty tmpfs.
        masked = [Path("/tmp").resolve()]
        for root in (h.resolve() for h in hidden_roots() if h.exists()):
            if any(_within(root, b) for b in bound) and not any(_within(root, m) for m in masked):
                masked.append(root)
                cmd += ["--tmpfs", str(root)]
        # What must run (our interpreter, the policy script, a harness's install), read-only at its
        # host path, unless the system's part already shows it.
        binds: list[tuple[str, str, str]] = []
        for path in [*runtime_roots(), *(p.resolve() for p in ro_binds)]:
            if not path.exists():
                continue
            shown = any(_within(path, b) for b in bound) and not any(_within(path, m) for m in masked)
            if not shown:
                binds.append(("--ro-bind", str(path), str(path)))
        binds += [("--bind", str(workdir), str(workdir)), ("--bind", str(home), str(home))]
        for path in (p.resolve() for p in read_only):  # bound after the workdir, so they stay read-only
            binds.append(("--ro-bind", str(path), str(path)))
        # The model proxy's port, and nothing else of the host's network: through a unix socket.
        inside = []
        if network:
            for port in ports:
                binds.append(("--bind", str(relay_scratch(workdir) / f"port-{port}.sock"), f"/run/specsnap/port-{port}.sock"))
                inside += ["--listen", f"{port}=/run/specsnap/port-{port}.sock"]
        # The directories above each mount point, made first and open to the sandbox's user (left to
        # bubblewrap, they copy the host's modes: a private temporary directory's 0700 would shut it out).
        dests = [Path(dest) for _, _, dest in binds]
        above = {parent for dest in dests for parent in dest.parents
                 if parent != Path("/") and not any(_within(parent, d) for d in dests)
                 and not (any(_within(parent, b) for b in bound) and not any(_within(parent, m) for m in masked))}
        for parent in sorted(above, key=lambda q: len(q.parts)):
            cmd += ["--perms", "0755", "--dir", str(parent)]
        for flag, src, dest in binds:
            cmd += [flag, src, dest]
        # The root itself (a tmpfs holding the mount points bubblewrap made) is read-only too.
        cmd += ["--remount-ro", "/", "--chdir", str(workdir)]
        if inside:
            argv = [sys.executable, "-I", "-S", "-B", relay.__file__, *inside, "--", *argv]
        return [*cmd, "--", *argv]

    def spawn(self, argv: list[str], *, workdir: Path, network: bool = False, ports: tuple[int, ...] = (), **kw):
        """Start the host side of the relay to the model proxy (a unix socket per port, served by a
        thread of this process until :meth:`reap`), then the sandbox."""
        if network and ports:
            self._open_relays(Path(workdir).resolve(), ports)
        return super().spawn(argv, workdir=workdir, network=network, ports=ports, **kw)

    def _open_relays(self, workdir: Path, ports: tuple[int, ...]) -> None:
        self._close_relays(workdir)
        where = relay_scratch(workdir)
        where.mkdir(mode=0o700)
        self._relays[str(workdir)] = [relay.host_side(str(where / f"port-{port}.sock"), port) for port in ports]

    def _close_relays(self, workdir: Path) -> None:
        for server in self._relays.pop(str(workdir), []):
            server.close()
        shutil.rmtree(relay_scratch(workdir), ignore_errors=True)

    def reap(self, workdir: Path) -> list[str]:
        """Besides what every backend reaps: the relays closed."""
        self._close_relays(Path(workdir).resolve())
        return super().reap(workdir)
