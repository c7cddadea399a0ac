"""The harness state a ``resume`` or ``compact`` continuation carries from one private HOME to the
next (docs/protocol.md#continuation-modes): exactly the files the harness names, nothing else.

The HOME was the agent's to write, so every byte of it is treated as an attacker's: a file is read
through :mod:`sdcs_bench.core.safefs` (no link followed anywhere on its path, regular files only,
at most :data:`MAX_FILE` bytes), a name outside the HOME or a glob is refused, and the archive is
unpacked with the same member checks as a snapshot. The record says what crossed, with sizes and
digests, and what was asked for but could not cross (and why). A key found in the state by the
session's redaction pass (:func:`redact_state`) is masked there, and the record says where.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import tarfile
from pathlib import Path
from typing import Any

from sdcs_bench.core import safefs, secretscan
from sdcs_bench.core.archive import safe_extract
from sdcs_bench.core.fsutil import atomic_path

MAX_FILE = 32 << 20  # a harness's session file larger than this does not cross
MAX_TOTAL = 64 << 20  # nor a file that would take the whole state past this
MAX_FILES = 64


def _clean(rel: str) -> str | None:
    norm = posixpath.normpath(rel)
    if not rel or rel.startswith("/") or norm.startswith("..") or norm == "." or any(c in rel for c in "*?[\0"):
        return None
    return norm


def pack_state(home: Path, wanted: list[str], dest: Path) -> dict[str, Any]:
    """Write ``dest`` (a tar.gz, empty when nothing is wanted) with the files ``wanted`` (relative to
    ``home``); return the record of what crossed and what did not."""
    files: dict[str, bytes] = {}
    missing: list[dict[str, Any]] = ([{"path": f"({len(wanted) - MAX_FILES} more)", "why": f"more than {MAX_FILES} files"}]
                                     if len(wanted) > MAX_FILES else [])
    for raw in wanted[:MAX_FILES]:
        rel = _clean(raw)
        if rel is None:
            missing.append({"path": str(raw)[:200], "why": "not a plain path inside the HOME"})
            continue
        try:
            data = safefs.read_file(home, rel, limit=MAX_FILE)
        except safefs.TooLarge:
            missing.append({"path": rel, "why": f"larger than {MAX_FILE} bytes"})
            continue
        if data is None:  # a link (anywhere on its path), a FIFO, a directory: never followed or read
            missing.append({"path": rel, "why": "absent, or not a regular file reached without a link"})
            continue
        if sum(map(len, files.values())) + len(data) > MAX_TOTAL:
            missing.append({"path": rel, "why": f"the carried state would pass {MAX_TOTAL} bytes"})
            continue
        files[rel] = data
    return {**write_state(files, dest), "not_carried": missing}


def unpack_state(archive: Path, home: Path) -> list[str]:
    """Unpack a carried state into a fresh HOME; the paths it placed."""
    with tarfile.open(archive) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
        safe_extract(tar, home, "tar")
    return sorted(names)


def read_state(archive: Path) -> dict[str, bytes]:
    """The carried files by path (what the handoff stage compacts for a reference policy)."""
    out: dict[str, bytes] = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile() and _clean(member.name) and member.size <= MAX_FILE:
                handle = tar.extractfile(member)
                if handle is not None:
                    out[_clean(member.name)] = handle.read()
    return out


def write_state(files: dict[str, bytes], dest: Path, secrets: list[str] | None = None) -> dict[str, Any]:
    """An archive of ``files`` (path -> bytes), as :func:`pack_state` writes one, and its record. With
    ``secrets``, every key in them (core/secretscan.py: raw and encoded) is masked first, a file whose
    name holds one or whose compressed content does is left out, and the record's ``credential_leak``
    names them."""
    files, leaks = _redacted(files, secrets)
    with atomic_path(dest) as tmp, tarfile.open(tmp, "w:gz") as tar:
        for rel, data in sorted(files.items()):
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.mtime = len(data), 0o600, 0
            tar.addfile(info, io.BytesIO(data))
    return {"files": [{"path": rel, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                      for rel, data in sorted(files.items())], "not_carried": [],
            **({"credential_leak": leaks} if secrets else {})}


def redact_state(archive: Path, secrets: list[str]) -> dict[str, Any] | None:
    """Mask every key in a carried state already written (what the session's redaction pass does to
    ``carry.tar.gz``): rewritten only when a key was found. The record (``files``, ``credential_leak``),
    or None when there is no key to look for or no archive."""
    if secretscan.scanner(secrets) is None or not Path(archive).is_file():
        return None
    files = read_state(archive)
    kept, leaks = _redacted(files, secrets)
    if not leaks:
        return {"files": None, "credential_leak": []}
    return {**write_state(kept, archive), "credential_leak": leaks}


def _redacted(files: dict[str, bytes], secrets: list[str] | None) -> tuple[dict[str, bytes], list[str]]:
    scan = secretscan.scanner(secrets)
    if scan is None:
        return files, []
    out: dict[str, bytes] = {}
    leaks: list[str] = []
    budget = secretscan.InflateBudget(MAX_FILE, MAX_TOTAL)
    for rel, data in files.items():
        if scan.found(rel.encode()):
            leaks.append(scan.redact_text(rel)[0])
            continue
        with io.BytesIO(data) as fh:
            raw_hit, kind, verdict = secretscan.examine(fh, scan, budget)
        if kind is not None and (raw_hit or verdict.status != "clean"):
            if raw_hit or verdict.status == "hit":
                leaks.append(rel)
            continue  # compressed content holding a key, or past the caps: not carried
        if raw_hit:
            data, _ = scan.redact(data)
            leaks.append(rel)
        out[rel] = data
    return out, sorted(leaks)
