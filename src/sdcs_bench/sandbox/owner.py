"""Who a sandbox's processes are on the host.

Run as root, every sandbox gets a host uid of its own from a range no account of a host is expected
to use (:func:`host_uid`): bwrap maps the agent's uid 1000 to it, docker (no user namespace) runs the
container as it. Files readable by root alone are then unreadable inside, wherever they are, and no
sandbox owns another's files. The sandbox's work tree and HOME are handed over to that uid while a
command runs (:func:`hand_over`) and handed back when it is reaped: git refuses to work in a
repository another user owns, and every host-side step after a session is SpecSnap's own. Run as
anyone else, the sandbox is that user (the kernel lets no one else change it) and nothing is handed.
"""

from __future__ import annotations

import os
from pathlib import Path

from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.core.paths import default_work_root

HOST_UID_BASE, HOST_UID_SPAN = 1_600_000_000, 1_000_000


def host_uid(marker: str) -> int | None:
    """The host uid (and gid) of the processes of the sandbox with this marker (its opaque id,
    ``base.sandbox_marker``) when SpecSnap runs as root; None otherwise."""
    if os.geteuid() != 0:
        return None
    return HOST_UID_BASE + int(marker[:12], 16) % HOST_UID_SPAN


def account_files(uid: int) -> dict[str, Path]:
    """``passwd`` and ``group`` files naming ``uid`` ``agent`` (and root and nobody, nothing of the
    host's accounts), for a sandbox's /etc: programs that look their user up (git, Node's
    ``os.userInfo``) find one. Written once per uid, world-readable."""
    texts = {
        "passwd": f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nagent:x:{uid}:{uid}:agent:/home/agent:/bin/sh\n"
                  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nagent:x:{uid}:\nnogroup:x:65534:\n",
    }
    files = {}
    for name, text in texts.items():
        target = default_work_root() / ".etc" / str(uid) / name
        if not target.is_file() or target.read_text() != text:
            atomic_write(target, text)
            target.chmod(0o644)
            target.parent.chmod(0o755)
        files[name] = target
    return files


def hand_over(root: Path, uid: int, limit: int) -> int:
    """Make ``root`` and everything under it (at most ``limit`` entries; links themselves, never
    followed; any depth, by directory descriptors) owned by ``uid``. Returns the entries changed.
    (A tree past ``limit`` entries has hit the session's ``files`` limit: the rest keeps its owner.)"""
    done = seen = 0
    try:
        os.chown(root, uid, uid, follow_symlinks=False)
    except OSError:
        return 0
    for _top, dirs, files, fd in os.fwalk(root, follow_symlinks=False):
        for name in dirs + files:
            seen += 1
            if seen > limit:
                return done
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if st.st_uid != uid or st.st_gid != uid:
                    os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)
                    done += 1
            except OSError:
                continue
    return done


class Handover:
    """The trees each live sandbox's user owns right now, to hand back at reap."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._handed: dict[str, set[str]] = {}

    def give(self, workdir: Path, uid: int, roots: list[Path]) -> None:
        mine = self._handed.setdefault(str(Path(workdir).resolve()), set())
        for root in roots:
            hand_over(Path(root), uid, self.limit)
            mine.add(str(root))

    def take_back(self, workdir: Path) -> None:
        for root in self._handed.pop(str(Path(workdir).resolve()), ()):
            if Path(root).is_dir():
                hand_over(Path(root), os.geteuid(), self.limit)
