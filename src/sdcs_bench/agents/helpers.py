"""Small things the harness adapters share: reading a harness's JSON-lines output, writing its
config files into the session's private HOME, the quiet environment every harness gets."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, skipping anything else (a killed writer's half line)."""
    for line in path.read_text(errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def write_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def proxy_env_flag() -> dict[str, str]:
    """Environment every real harness gets: no telemetry, no update checks, no colour."""
    return {"NO_COLOR": "1", "DO_NOT_TRACK": "1", "TERM": os.environ.get("TERM", "dumb")}


MAX_RECORD_BYTES = 64 * 1024 * 1024  # a harness record larger than this is not kept


def _inside_without_links(root: Path, path: Path) -> bool:
    """``path`` lies under ``root`` and no component between them is a symbolic link (the private
    HOME is the agent's to write: a link there could point at any file of the machine)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            return False
    return True


def copy_record(src: Path, dest: Path, within: Path, max_bytes: int = MAX_RECORD_BYTES) -> bool:
    """Copy one harness record out of the private HOME ``within``: a regular file reached without
    following any link, at most ``max_bytes``; False when it was not copied."""
    if src.is_symlink() or within.is_symlink() or not _inside_without_links(within, src) or not src.is_file():
        return False
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > max_bytes:
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        with dest.open("wb") as out:
            while chunk := fh.read(1 << 20):
                out.write(chunk)
    return True


def copy_records(home: Path, root: str, pattern: str, dest: Path) -> list[Path]:
    """Copy the files matching ``pattern`` under ``home/root`` into ``dest``, keeping their paths
    relative to ``home/root`` (see :func:`copy_record` for what is never copied)."""
    base = home / root
    if not _inside_without_links(home, base) or not base.is_dir():
        return []
    kept = []
    for src in sorted(base.glob(pattern)):
        target = dest / src.relative_to(base)
        if copy_record(src, target, home):
            kept.append(target)
    return kept


HOME_LISTED = 10_000  # entries of a directory in the agent's HOME listed at most (it is the agent's to fill)


def home_files(home: Path, root: str) -> list[str]:
    """The regular files under ``home/root``, relative to ``home``, reached without following a link
    (a planted link is never listed, nor what it points to), at most :data:`HOME_LISTED` entries
    looked at: where an adapter finds the state a resume continuation carries."""
    import itertools
    import stat

    from sdcs_bench.core import safefs

    listed = itertools.islice(safefs.walk(home, rel=root), HOME_LISTED)
    return sorted(f"{root}/{rel}" for rel, st in listed if stat.S_ISREG(st.st_mode))
