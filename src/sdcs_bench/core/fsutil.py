"""Writing files so that a reader never sees half of one and a failure leaves nothing behind.

Every result file is written to a temporary file beside its target and renamed over it; if the
write fails (a full disk, a read-only file system, a kill), the temporary file is removed, and
the target keeps its old content (or stays absent)."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TMP_PREFIX = ".specsnap-tmp."
_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path``, on any error
    it is removed and the error propagates."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # an ordinary file's mode, not mkstemp's private 0600
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def remove_stale_temporaries(directory: Path) -> list[str]:
    """Temporary files a killed process left in ``directory`` (never a finished result)."""
    removed = []
    if directory.is_dir():
        for leftover in directory.glob(f"{TMP_PREFIX}*"):
            leftover.unlink(missing_ok=True)
            removed.append(leftover.name)
    return removed


# Errors of the file system itself (not of SpecSnap's input): reported in one line naming the
# path and what to do, never as a traceback.
DISK_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


def disk_error_message(exc: OSError, writing: Path | str | None = None) -> str | None:
    """One line for a file-system error (full disk, read-only, no permission), or None. ``writing``
    names what was being written when the error itself names no file (a failed ``write()``)."""
    what = DISK_ERRNOS.get(exc.errno or 0)
    if what is None:
        return None
    where = exc.filename or (f"into {writing}" if writing else "a result file")
    hint = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space"}.get(exc.errno or 0, "make it writable")
    return f"cannot write {where}: {what}; {hint} and rerun (what finished is kept)"


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
