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

import dataclasses
import errno
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.core import safefs, secretscan
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_path

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


# -- snapshots of an agent's tree: written and restored within caps ---------------------------------
# Every byte of a sandbox is the agent's: a name may be a link to anywhere, a FIFO, a sparse file of
# terabytes, a path deeper than PATH_MAX, a million entries. A snapshot is walked by directory
# descriptors (core/safefs.BoundedWalk), reads regular files only, no file whose apparent size is past
# a cap (a sparse file is not read at all), and stops adding at the caps: it is still written, with
# what fits, and its record says what was left out and why. The caps (defaults here; a study may set
# its own through ``Caps``):
MAX_TOTAL = 1 << 30  # bytes of file content one snapshot holds (uncompressed)
MAX_FILE = 256 << 20  # a file larger than this (its apparent size: a sparse file counts whole) is left out, unread
MAX_ENTRIES = 200_000  # files, links and directories one snapshot holds
MAX_DEPTH = 256  # directories nested deeper than this are left out
MAX_INFLATE_STREAM = 256 << 20  # with a key to look for: one compressed stream (a git object) is inflated this far
MAX_INFLATE_TOTAL = 1 << 30  # ... and all of a snapshot's compressed data this far; past either, the file is left out
LEFT_OUT_SHOWN = 50  # entries listed in a record's ``left_out`` (all are counted)
_SPARSE_BLOCK = 1 << 16  # a restored file's all-zero blocks of this size stay holes
_OWN_DISK = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}  # a failure of the results' own disk, not the agent's doing


@dataclass(frozen=True)
class Caps:
    total_bytes: int = MAX_TOTAL
    file_bytes: int = MAX_FILE
    entries: int = MAX_ENTRIES
    depth: int = MAX_DEPTH
    inflate_stream: int = MAX_INFLATE_STREAM
    inflate_total: int = MAX_INFLATE_TOTAL

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class _Record:
    def __init__(self, caps: Caps, scan: secretscan.Scanner | None) -> None:
        self.caps, self.scan = caps, scan
        self.left_out: list[dict[str, str]] = []
        self.left_count = 0
        self.limits: set[str] = set()
        self.leaks: list[str] = []
        self.redacted: list[str] = []
        self.entries = self.bytes = 0

    def shown(self, path: str) -> str:
        """A path as a record may hold it: a key in it masked."""
        return self.scan.redact_text(path)[0] if self.scan is not None else path

    def leave(self, path: str, why: str, limit: str | None = None) -> None:
        self.left_count += 1
        if limit:
            self.limits.add(limit)
        if len(self.left_out) < LEFT_OUT_SHOWN:
            self.left_out.append({"path": self.shown(path), "why": why})

    def result(self, **extra: Any) -> dict[str, Any]:
        limits = sorted(self.limits)
        out: dict[str, Any] = {"entries": self.entries, "bytes": self.bytes, "left_out": self.left_out,
                               "left_out_count": self.left_count, "limits": limits, "caps": self.caps.as_dict(), **extra}
        if limits:
            out["limit"] = "disk"
            out["detail"] = (f"caps reached ({', '.join(limits)}): {self.left_count} entr"
                             f"{'y' if self.left_count == 1 else 'ies'} left out")
        return out


class _FdReader:
    """Exactly ``size`` bytes of a descriptor (zeros past its end, if it shrank since its ``stat``)."""

    def __init__(self, fd: int, size: int) -> None:
        self.read_at, self.left = safefs.read_fd(fd), size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        parts, got = [], 0
        while got < n and (data := self.read_at(n - got)):
            parts.append(data)
            got += len(data)
        data = b"".join(parts) + bytes(n - got)
        self.left -= len(data)
        return data


def _git_bound(rel: str) -> bool:
    """A file of git's own binary stores (objects, packs, the index): redacting would corrupt it."""
    parts = rel.split("/")
    return ".git" in parts and ("objects" in parts[parts.index(".git") + 1:] or parts[-1] == "index")


def write_tree(root: Path, target: Path, *, caps: Caps | None = None, secrets: list[str] | None = None,
               skip_dirs: frozenset[str] = frozenset({"__pycache__"})) -> dict[str, Any]:
    """Write ``target`` (a tar.gz) with the tree under ``root``, within ``caps``; return its record:
    ``entries``, ``bytes`` (file content archived), ``left_out`` (the first :data:`LEFT_OUT_SHOWN`
    of ``{path, why}``) and ``left_out_count``, ``limits`` (the caps reached; with any, ``limit:
    "disk"`` and a one-line ``detail``), ``caps``, and with ``secrets``: ``credential_leak`` (every
    path where a key was found, masked), ``redacted`` (those archived with the key masked, and
    masked in the tree too) and ``inflated`` (bytes of compressed data inflated to be checked).

    With ``secrets``, every file's content is checked (core/secretscan.py) before it is archived: a
    key in a plain file is masked (in the archive and in the tree); a key inside git's objects, packs
    or index, or inside compressed data, leaves the file out; so does a key in a name or a link's
    target, and compressed data that cannot be checked within the inflation caps. Links are archived
    as links (never followed), hard links as links to the first name, special files never opened."""
    caps = caps or Caps()  # (gzip's own default level 6: less time than tarfile's 9, a percent or two larger)
    scan = secretscan.scanner(secrets)
    budget = secretscan.InflateBudget(caps.inflate_stream, caps.inflate_total) if scan else None
    rec = _Record(caps, scan)
    walk = safefs.BoundedWalk(root, max_depth=caps.depth, max_entries=caps.entries, skip_dirs=skip_dirs)
    links: dict[tuple[int, int], str] = {}
    with atomic_path(target) as tmp, tarfile.open(tmp, "w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
        tar.copybufsize = secretscan.CHUNK
        for entry in walk:
            try:
                if not _archive_entry(tar, entry, rec, scan, budget, links) and stat.S_ISDIR(entry.st.st_mode):
                    walk.prune()  # a directory left out (its name holds a key): nothing under it either
            except OSError as exc:
                if exc.errno in _OWN_DISK:
                    raise
                rec.leave(entry.rel, f"could not be read: {exc.strerror or exc}")
        for path, why in walk.left_out:
            rec.leave(path, why)
        rec.limits |= walk.limits
    leaks = sorted(set(rec.leaks))
    return rec.result(credential_leak=leaks[:LEFT_OUT_SHOWN], credential_leak_count=len(leaks),
                      redacted=sorted(set(rec.redacted))[:LEFT_OUT_SHOWN],
                      **({"inflated": budget.used} if budget is not None else {}))


def _info(entry: safefs.TreeEntry, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(entry.rel)
    info.type, info.mode, info.mtime = kind, entry.st.st_mode & 0o777, entry.st.st_mtime
    info.uid, info.gid = entry.st.st_uid, entry.st.st_gid
    return info


def _archive_entry(tar: tarfile.TarFile, entry: safefs.TreeEntry, rec: _Record, scan: secretscan.Scanner | None,
                   budget: secretscan.InflateBudget | None, links: dict[tuple[int, int], str]) -> bool:
    """Archive one entry (True), or record why it is left out (False)."""
    st, rel = entry.st, entry.rel
    if scan is not None and scan.found(entry.name.encode("utf-8", "surrogateescape")):
        rec.leaks.append(rec.shown(rel))
        rec.leave(rel, "its name holds a key")
        return False
    if stat.S_ISDIR(st.st_mode):
        tar.addfile(_info(entry, tarfile.DIRTYPE))
        rec.entries += 1
        return True
    if stat.S_ISLNK(st.st_mode):
        info = _info(entry, tarfile.SYMTYPE)
        info.linkname = os.readlink(entry.name, dir_fd=entry.dir_fd)
        if scan is not None and scan.found(info.linkname.encode("utf-8", "surrogateescape")):
            rec.leaks.append(rec.shown(rel))
            rec.leave(rel, "the link's target holds a key")
            return False
        tar.addfile(info)
        rec.entries += 1
        return True
    if not stat.S_ISREG(st.st_mode):
        rec.leave(rel, "a special file (FIFO, socket or device): never opened")
        return False
    ident = (st.st_dev, st.st_ino)
    if st.st_nlink > 1 and ident in links:
        info = _info(entry, tarfile.LNKTYPE)
        info.linkname = links[ident]
        tar.addfile(info)
        rec.entries += 1
        return True
    if st.st_size > rec.caps.file_bytes:
        rec.leave(rel, f"larger than {rec.caps.file_bytes} bytes ({st.st_size}, apparent): not read", "file_bytes")
        return False
    if rec.bytes + st.st_size > rec.caps.total_bytes:
        rec.leave(rel, f"the snapshot would pass {rec.caps.total_bytes} bytes", "total_bytes")
        return False
    fd = safefs.open_entry(entry)
    if fd is None:
        rec.leave(rel, "not the regular file it was listed as")
        return False
    info = _info(entry, tarfile.REGTYPE)
    redacted = False
    try:
        if scan is None:
            info.size = st.st_size
            tar.addfile(info, _FdReader(fd, st.st_size))
        else:
            with secretscan.load(safefs.read_fd(fd), st.st_size) as src:
                raw_hit, kind, verdict = secretscan.examine(src, scan, budget)
                if verdict.status == "unchecked":
                    rec.leave(rel, f"compressed data not checked for a key: {verdict.why}", "inflate")
                    return False
                if raw_hit or verdict.status == "hit":
                    rec.leaks.append(rel)
                    if _git_bound(rel) or kind is not None:
                        rec.leave(rel, "holds a key inside git's objects or compressed data")
                        return False
                    red, _ = secretscan.redacted_copy(src, scan)
                    with red:
                        info.size = red.seek(0, 2)
                        red.seek(0)
                        tar.addfile(info, red)
                        red.seek(0)
                        safefs.replace_at(entry.dir_fd, entry.name, iter(lambda: red.read(secretscan.CHUNK), b""),
                                          st.st_mode)
                    rec.redacted.append(rel)
                    redacted = True
                else:
                    info.size = src.seek(0, 2)
                    src.seek(0)
                    tar.addfile(info, src)
    finally:
        os.close(fd)
    rec.entries += 1
    rec.bytes += info.size
    if st.st_nlink > 1 and not redacted:
        links[ident] = rel
    return True


class _Cursor:
    """The directory a restored member goes into, reached from the root one descriptor at a time
    (created as needed; never through a link), keeping the chain of the last member's directories."""

    def __init__(self, root_fd: int) -> None:
        self.root, self.stack = root_fd, []

    def goto(self, parts: list[str]) -> int:
        same = 0
        while same < len(self.stack) and same < len(parts) and self.stack[same][0] == parts[same]:
            same += 1
        while len(self.stack) > same:
            os.close(self.stack.pop()[1])
        for part in parts[same:]:
            parent = self.stack[-1][1] if self.stack else self.root
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=parent)
                fd = os.open(part, _DIR_FLAGS, dir_fd=parent)
            except OSError as exc:
                raise safefs.Unsafe(exc.errno, f"{part} is not a directory") from None
            self.stack.append((part, fd))
        return self.stack[-1][1] if self.stack else self.root

    def close(self) -> None:
        while self.stack:
            os.close(self.stack.pop()[1])


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def restore_tree(archive: Path, dest: Path, *, caps: Caps | None = None) -> dict[str, Any]:
    """Unpack a snapshot :func:`write_tree` wrote into ``dest``, within the same caps: by directory
    descriptors (a path deeper than ``PATH_MAX`` is restored), never through a link (a member under a
    name a link took is refused), a hard link only to a file restored before it, no special file, no
    set-uid bit, and every all-zero block of a file left a hole (nothing is made dense). Returns
    ``entries``, ``bytes`` and what was left out (``left_out``, ``left_out_count``, ``limits``)."""
    caps = caps or Caps()
    rec = _Record(caps, None)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    root_fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    cursor = _Cursor(root_fd)
    dirs: list[tuple[str, int, float]] = []
    files: set[str] = set()
    try:
        with tarfile.open(archive, "r|gz") as tar:
            while (member := tar.next()) is not None:
                tar.members.clear()  # (kept by tarfile for lookups this restore never makes)
                if rec.entries >= caps.entries:
                    rec.leave(member.name, f"more than {caps.entries} entries", "entries")
                    break
                try:
                    _restore_member(tar, member, dest, cursor, rec, dirs, files)
                except OSError as exc:
                    if exc.errno in _OWN_DISK:
                        raise
                    rec.leave(member.name, f"not restored: {exc.strerror or exc}")
        cursor.close()
        for rel, mode, mtime in reversed(dirs):  # deepest first: a read-only directory is made so last
            try:
                with safefs.open_dir(dest, rel) as fd:
                    os.fchmod(fd, mode)
                    os.utime(fd, (mtime, mtime))
            except OSError:
                continue
    finally:
        cursor.close()
        os.close(root_fd)
    return rec.result()


def _restore_member(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, cursor: _Cursor, rec: _Record,
                    dirs: list[tuple[str, int, float]], files: set[str]) -> None:
    parts = [p for p in member.name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        rec.leave(member.name, "not a plain relative name: refused")
        return
    rel = "/".join(parts)
    if len(parts) > rec.caps.depth + (0 if member.isdir() else 1):
        rec.leave(rel, f"deeper than {rec.caps.depth} directories", "depth")
        return
    if member.isreg() and member.size > rec.caps.file_bytes:
        rec.leave(rel, f"larger than {rec.caps.file_bytes} bytes", "file_bytes")
        return
    if member.isreg() and rec.bytes + member.size > rec.caps.total_bytes:
        rec.leave(rel, f"the restore would pass {rec.caps.total_bytes} bytes", "total_bytes")
        return
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        rec.leave(rel, "a special file: not restored")
        return
    parent = cursor.goto(parts[:-1])
    leaf = parts[-1]
    mode = (member.mode or 0) & 0o777
    if member.isdir():
        try:
            st = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                safefs.remove_entry(parent, leaf)
                raise FileNotFoundError
        except FileNotFoundError:
            os.mkdir(leaf, 0o755, dir_fd=parent)
        dirs.append((rel, mode, member.mtime))
    elif member.issym():
        safefs.remove_entry(parent, leaf)
        os.symlink(member.linkname, leaf, dir_fd=parent)
    elif member.islnk():
        target = "/".join(p for p in member.linkname.split("/") if p not in ("", "."))
        if target not in files:
            rec.leave(rel, "a hard link to a file not restored before it")
            return
        tparent, _, tleaf = target.rpartition("/")
        safefs.remove_entry(parent, leaf)
        with safefs.open_dir(dest, tparent) as tfd:
            os.link(tleaf, leaf, src_dir_fd=tfd, dst_dir_fd=parent, follow_symlinks=False)
    else:
        safefs.remove_entry(parent, leaf)
        fd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent)
        try:
            src = tar.extractfile(member)
            zero, pos = bytes(_SPARSE_BLOCK), 0
            while src is not None and (chunk := src.read(secretscan.CHUNK)):
                for i in range(0, len(chunk), _SPARSE_BLOCK):
                    block = chunk[i:i + _SPARSE_BLOCK]
                    if block != zero[:len(block)]:
                        view = memoryview(block)
                        at = pos + i
                        while view:
                            n = os.pwrite(fd, view, at)
                            view, at = view[n:], at + n
                pos += len(chunk)
            os.ftruncate(fd, pos)
            os.fchmod(fd, mode)
            os.utime(fd, (member.mtime, member.mtime))
        finally:
            os.close(fd)
        files.add(rel)
        rec.bytes += member.size
    rec.entries += 1
