"""Unpack a tar archive an agent's files went into, refusing what would land outside its directory.

Python's extraction filters exist only from 3.11.4 (an older 3.11, such as Debian 12's 3.11.2 in
the job image, has none and unpacks ``../x`` as asked), so the same rules are applied here on
every interpreter, and a snapshot restores the same way everywhere:

- ``tar`` (restoring a sandbox snapshot, faithfully): a leading ``/`` is stripped; a name that
  would land outside, or a hard link to outside, is refused; set-uid, set-gid and sticky bits are
  cleared. A symbolic link is restored as it was, wherever it points (it did so in the sandbox).
- ``data`` (unpacking a downloaded source): also a link that is absolute or points outside, and
  any special file, is refused.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

from sdcs_bench.core.errors import SpecSnapError

POLICIES = ("tar", "data")


def safe_extract(tar: tarfile.TarFile, dest: Path, policy: str = "tar") -> None:
    if policy not in POLICIES:
        raise ValueError(f"unknown extraction policy {policy!r}")
    tar.extractall(dest, members=list(checked_members(tar, dest, data=policy == "data")))


def checked_members(tar: tarfile.TarFile, dest: Path, data: bool = False):
    root = os.path.realpath(dest)

    def inside(path: str) -> bool:
        return os.path.commonpath([root, os.path.realpath(path)]) == root

    for member in tar.getmembers():
        member.name = member.name.lstrip("/")
        if not member.name or not inside(os.path.join(root, member.name)):
            raise SpecSnapError(f"archive member {member.name!r} would land outside {dest}")
        if member.islnk():
            target = member.linkname.lstrip("/")
            if not inside(os.path.join(root, target)):
                raise SpecSnapError(f"archive hard link {member.name!r} points outside {dest} ({member.linkname!r})")
            member.linkname = target
        if data:
            if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
                raise SpecSnapError(f"archive member {member.name!r} is a special file")
            if member.issym() and (os.path.isabs(member.linkname) or not inside(
                    os.path.join(root, os.path.dirname(member.name), member.linkname))):
                raise SpecSnapError(f"archive link {member.name!r} points outside {dest} ({member.linkname!r})")
        if member.mode is not None:
            member.mode &= 0o777
        yield member
