"""Reading and writing inside a tree an agent wrote, without following anything it planted.

A sandbox is the agent's: any name in it may be a symbolic link to anywhere on the host, a hard
link, a FIFO or a huge file. The host's own code (the runner, the watcher, the guard's installer,
the injection) reads and writes there as whoever runs SpecSnap, so every access here walks the path
one component at a time with ``O_NOFOLLOW`` from a directory we trust (the sandbox root), reads
regular files only, up to a limit, and writes by creating a new file and renaming it into place
(a rename replaces a planted link, never writes through it).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_LIMIT = 16 << 20  # no file SpecSnap reads back from a sandbox is legitimately larger


class Unsafe(OSError):
    """A path in the agent's tree is not what SpecSnap put there (a link, a file for a directory)."""


class TooLarge(Unsafe):
    """A file in the agent's tree is larger than the reader's limit."""


def _parts(rel: str | PurePosixPath) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if any(p == ".." or "/" in p for p in parts):
        raise Unsafe(errno.EINVAL, f"not a plain relative path: {rel}")
    return parts


@contextmanager
def open_dir(root: Path, rel: str | PurePosixPath = "", *, create: bool = False, replace: bool = False) -> Iterator[int]:
    """A descriptor of the directory ``root/rel``, reached without following a link. ``create`` makes
    missing directories; ``replace`` also removes whatever else stands where a directory should
    (a planted link or file). Otherwise a component that is not a real directory raises ``Unsafe``."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in _parts(rel):
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or not replace:
                    raise Unsafe(exc.errno, f"{root / rel}: {part} is not a directory") from None
                remove_entry(fd, part)
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def remove_entry(dir_fd: int, name: str) -> None:
    """Remove ``name`` in the directory ``dir_fd``, whatever it is, without following it."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)  # fd-based on Linux: immune to links planted inside
    else:
        os.unlink(name, dir_fd=dir_fd)


def write_file(root: Path, rel: str, data: bytes, mode: int = 0o644, *, replace_dirs: bool = False) -> None:
    """Write ``root/rel`` atomically: a new file beside it, renamed over whatever is there (a link
    is replaced, not followed). Missing directories are made; ``replace_dirs`` also replaces a
    planted link or file where a directory should be, and a directory where the file should be."""
    parent, name = str(PurePosixPath(rel).parent), PurePosixPath(rel).name
    with open_dir(root, "" if parent == "." else parent, create=True, replace=replace_dirs) as fd:
        tmp = f".{name}.{os.getpid()}.specsnap-tmp"
        remove_entry(fd, tmp)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        try:
            with os.fdopen(out, "wb", closefd=False) as fh:
                fh.write(data)
            os.fchmod(out, mode)
        finally:
            os.close(out)
        try:
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except IsADirectoryError:
            if not replace_dirs:
                os.unlink(tmp, dir_fd=fd)
                raise
            remove_entry(fd, name)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)


@contextmanager
def open_regular(root: Path, rel: str) -> Iterator[object | None]:
    """A binary file object of the regular file ``root/rel`` (None when it is missing, a link or not
    a regular file), reached without following a link: for reading files of any size in blocks."""
    parent, name = str(PurePosixPath(rel).parent), PurePosixPath(rel).name
    fh = None
    try:
        with open_dir(root, "" if parent == "." else parent) as fd:
            f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            if stat.S_ISREG(os.fstat(f).st_mode):
                fh = os.fdopen(f, "rb")
            else:
                os.close(f)
    except OSError:
        fh = None
    try:
        yield fh
    finally:
        if fh is not None:
            fh.close()


def read_file(root: Path, rel: str, limit: int = READ_LIMIT) -> bytes | None:
    """The bytes of the regular file ``root/rel``, or None when it is missing, a link, not a regular
    file, or under a component that is not a real directory. Larger than ``limit``: ``TooLarge``."""
    parent, name = str(PurePosixPath(rel).parent), PurePosixPath(rel).name
    try:
        with open_dir(root, "" if parent == "." else parent) as fd:
            try:
                f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            except OSError:
                return None
            try:
                st = os.fstat(f)
                if not stat.S_ISREG(st.st_mode):
                    return None
                if st.st_size > limit:
                    raise TooLarge(errno.EFBIG, f"{root / rel} is larger than {limit} bytes")
                chunks, total = [], 0
                while chunk := os.read(f, 1 << 20):
                    chunks.append(chunk)
                    total += len(chunk)
                    if total > limit:
                        raise TooLarge(errno.EFBIG, f"{root / rel} is larger than {limit} bytes")
                return b"".join(chunks)
            finally:
                os.close(f)
    except TooLarge:
        raise
    except OSError:
        return None


def list_dir(fd: int, most: int | None = None) -> list[tuple[str, os.stat_result]]:
    """``(name, lstat)`` of the entries of the directory ``fd`` (at most ``most``); an entry gone
    between the listing and its stat is skipped. Raises ``OSError`` if the directory cannot be listed."""
    out = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                out.append((entry.name, entry.stat(follow_symlinks=False)))
            except OSError:
                continue
            if most is not None and len(out) >= most:
                break
    return out


def walk(root: Path, skip_dirs: frozenset[str] | set[str] = frozenset(), top_skip: frozenset[str] | set[str] = frozenset(),
         rel: str = "", errors: list[str] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """``(relative path, lstat)`` of every entry under ``root/rel`` that is not a directory (regular
    files, links, anything else), never descending into a link. ``skip_dirs`` are directory names
    left out at any depth, ``top_skip`` names left out at the top only (``.git``).

    Each directory is reached from ``root`` one component at a time with ``O_NOFOLLOW`` and listed
    through its descriptor: no path is ever longer than one name (a tree deeper than ``PATH_MAX`` is
    walked whole), and a directory swapped for a link mid-walk is not followed. A directory that
    cannot be opened or listed is skipped; with ``errors`` given, its path and the reason are added
    there (a check that must see everything treats that as failing)."""
    stack = [str(PurePosixPath(rel)) if rel not in ("", ".") else ""]
    base = stack[0]
    while stack:
        here = stack.pop()
        try:
            with open_dir(root, here) as fd:
                entries = list_dir(fd)
        except OSError as exc:
            if errors is not None and not (here == base and isinstance(exc, FileNotFoundError)):
                errors.append(f"{here or '.'}: {exc.strerror or exc}")
            continue
        inner = here[len(base):].lstrip("/") if base else here
        for name, st in entries:
            path = f"{inner}/{name}" if inner else name
            if stat.S_ISDIR(st.st_mode):
                if name in skip_dirs or (not inner and name in top_skip):
                    continue
                stack.append(f"{here}/{name}" if here else name)
            else:
                yield path, st


# -- bounded walks by directory descriptors ----------------------------------------------------------

class TreeEntry:
    """One entry of a bounded walk: its path relative to the root, its name, the descriptor of the
    directory holding it (valid until the walk moves on), its ``lstat`` and its depth (1: in the root)."""

    __slots__ = ("rel", "name", "dir_fd", "st", "depth")

    def __init__(self, rel: str, name: str, dir_fd: int, st: os.stat_result, depth: int) -> None:
        self.rel, self.name, self.dir_fd, self.st, self.depth = rel, name, dir_fd, st, depth


class BoundedWalk:
    """Every entry under ``root`` (directories before what they hold, names sorted), reached from
    the root's descriptor one directory descriptor at a time with ``O_NOFOLLOW``: no path is ever
    longer than one name, so a tree deeper than ``PATH_MAX`` is walked, and no link is followed.
    At most ``max_entries`` entries are yielded, and nothing deeper than ``max_depth`` directories
    (their contents are left out); ``skip_dirs`` (at any depth) and ``top_skip`` (in the root only)
    name directories left out silently. What the caps left out is in ``left_out`` (``(path, why)``)
    and which caps were reached in ``limits``. At most ``max_depth + 1`` descriptors are open."""

    def __init__(self, root: Path, *, max_depth: int, max_entries: int,
                 skip_dirs: frozenset[str] | set[str] = frozenset(), top_skip: frozenset[str] | set[str] = frozenset()) -> None:
        self.root, self.max_depth, self.max_entries = Path(root), max_depth, max_entries
        self.skip_dirs, self.top_skip = skip_dirs, top_skip
        self.left_out: list[tuple[str, str]] = []
        self.limits: set[str] = set()
        self.count = 0
        self._prune = False

    def prune(self) -> None:
        """Do not descend into the directory just yielded."""
        self._prune = True

    def __iter__(self) -> Iterator[TreeEntry]:
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            self.left_out.append((".", exc.strerror or str(exc)))
            return
        stack: list[tuple[int, str, list[tuple[str, os.stat_result]], int]] = []
        try:
            listed = self._list(root_fd, "")
            if listed is None:
                return
            stack.append((root_fd, "", listed, 1))
            root_fd = -1
            while stack:
                fd, rel, names, depth = stack[-1]
                if not names:
                    os.close(fd)
                    stack.pop()
                    continue
                name, st = names.pop()
                path = f"{rel}/{name}" if rel else name
                is_dir = stat.S_ISDIR(st.st_mode)
                if is_dir and (name in self.skip_dirs or (depth == 1 and name in self.top_skip)):
                    continue
                if self.count >= self.max_entries:
                    self.limits.add("entries")
                    self.left_out.append((path, f"the snapshot holds at most {self.max_entries} entries; "
                                                "this and what follows are left out"))
                    return
                self.count += 1
                self._prune = False
                yield TreeEntry(path, name, fd, st, depth)
                if not is_dir or self._prune:
                    continue
                if depth >= self.max_depth:
                    self.limits.add("depth")
                    self.left_out.append((path + "/", f"deeper than {self.max_depth} directories"))
                    continue
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    self.left_out.append((path + "/", exc.strerror or str(exc)))
                    continue
                got = os.fstat(child)
                if (got.st_dev, got.st_ino) != (st.st_dev, st.st_ino):  # swapped since it was listed
                    os.close(child)
                    self.left_out.append((path + "/", "changed while it was read"))
                    continue
                listed = self._list(child, path)
                if listed is None:
                    os.close(child)
                    continue
                stack.append((child, path, listed, depth + 1))
        finally:
            if root_fd >= 0:
                os.close(root_fd)
            for fd, *_ in stack:
                os.close(fd)

    def _list(self, fd: int, rel: str) -> list[tuple[str, os.stat_result]] | None:
        """The entries of one directory, sorted in reverse (popped from the end), at most as many
        as the walk may still yield (and one more, to tell that there were more)."""
        room = self.max_entries - self.count + 1
        try:
            out = list_dir(fd, room)
        except OSError as exc:
            self.left_out.append(((rel or ".") + "/", exc.strerror or str(exc)))
            return None
        out.sort(key=lambda e: e[0], reverse=True)
        return out


def open_entry(entry: TreeEntry) -> int | None:
    """A read descriptor of the regular file ``entry`` names, opened without following a link and
    without blocking (a FIFO put in its place is not waited on); None when it is not the regular
    file the walk saw there."""
    try:
        fd = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=entry.dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (entry.st.st_dev, entry.st.st_ino):
        os.close(fd)
        return None
    return fd


_HOLE = 1 << 16


def replace_at(dir_fd: int, name: str, chunks: Iterator[bytes] | list[bytes], mode: int) -> None:
    """Write ``name`` in the directory ``dir_fd`` atomically: a new file beside it, renamed over
    whatever is there (a link is replaced, never written through); blocks of zeros are left holes."""
    tmp = f".{name[:200]}.{os.getpid()}.specsnap-tmp"
    remove_entry(dir_fd, tmp)
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            pos = 0
            for chunk in chunks:
                for i in range(0, len(chunk), _HOLE):
                    block = chunk[i:i + _HOLE]
                    if block.count(0) == len(block):  # all zeros: left a hole (a sparse file stays sparse)
                        continue
                    view, at = memoryview(block), pos + i
                    while view:
                        n = os.pwrite(out, view, at)
                        view, at = view[n:], at + n
                pos += len(chunk)
            os.ftruncate(out, pos)
            os.fchmod(out, mode & 0o777)
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def read_fd(fd: int, offset: int = 0) -> Callable[[int], bytes]:
    """A ``read(n)`` over the descriptor ``fd`` from ``offset`` (by ``pread``: the descriptor's own
    position is left alone)."""
    pos = offset

    def read(n: int) -> bytes:
        nonlocal pos
        data = os.pread(fd, n, pos)
        pos += len(data)
        return data

    return read
