"""The redaction pass (docs/architecture.md#no-key-in-the-results): no API key's text, raw or encoded,
survives in anything a session leaves under ``results/``.

Keys reach a harness only through its environment; a harness may still print one (a debug dump, an
error message echoing a header), and an agent that can read its key may write it anywhere: into the
repository, its git objects, its HOME. After every session :func:`redact_session` scans (with
:mod:`sdcs_bench.core.secretscan`: the raw key, base64, hex, percent-encoded, reversed, and parts of
each) the session record, every file of the stage directory and the work tree, and the carried HOME
state; the snapshot is scanned as it is written (``core/archive.write_tree``). A match is replaced
by :func:`mask`; a file whose key is inside compressed data is removed from the stage directory (and
left out of the snapshot). Every hit is named in the record's ``credential_leak`` (``record:<field>``,
``stage:<path>``, ``tree:<path>``, ``carry:<path>``): the key reached the agent's world, and the trial
says so. Every walk and read is bounded (``core/archive.Caps``); with no key, nothing is done.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sdcs_bench.core import safefs, secretscan
from sdcs_bench.core.archive import Caps
from sdcs_bench.core.secretscan import mask  # noqa: F401  (the mask is named here too)
from sdcs_bench.core.timing import timed

SNAPSHOT_NAME = "snapshot.tar.gz"  # written after this pass, scanned as it is written
SHOWN = 100  # paths a record lists (redacted files, leaks); past it, ``credential_leak_count`` counts them


def redact_fields(value: Any, secrets: list[str], path: str = "") -> tuple[Any, list[str]]:
    """``value`` (a JSON-like record) with every key, in every form, masked in every string it holds
    (dictionary keys included), and the fields where one was found (``cleave.diff``; under ``path``)."""
    scan = secretscan.scanner(secrets)
    if scan is None:
        return value, []
    hits: list[str] = []

    def join(where: str, name: Any) -> str:
        return f"{where}.{name}" if where else str(name)

    def walk(x: Any, where: str) -> Any:
        if isinstance(x, str):
            new, n = scan.redact_text(x)
            if n:
                hits.append(where or ".")
            return new
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                name = k
                if isinstance(k, str):
                    name, n = scan.redact_text(k)
                    if n:
                        hits.append(join(where, name))
                out[name] = walk(v, join(where, name))
            return out
        if isinstance(x, (list, tuple)):
            return type(x)(walk(v, where) for v in x)
        return x

    new = walk(value, path)
    return new, sorted(set(hits))


@timed("redaction")
def redact_record(record: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
    """The same record with every secret, in every form the scanner knows, masked in every string."""
    return redact_fields(record, secrets)[0]


class _Pass:
    """What one pass over a directory did."""

    def __init__(self) -> None:
        self.redacted: list[str] = []
        self.leaks: list[str] = []
        self.removed: list[str] = []
        self.truncated: list[str] = []
        self.skipped: list[dict[str, str]] = []


def _redact_entry(entry: safefs.TreeEntry, scan: secretscan.Scanner, caps: Caps, result: _Pass, *,
                  stage: bool, budget: secretscan.InflateBudget | None) -> None:
    """One regular file, in place. In the stage directory (``stage``) a file larger than the cap is
    cut to it (what is kept is scanned), and one holding a key inside compressed data, or compressed
    data that cannot be checked, is removed; in the work tree a file larger than the cap, or
    compressed, is left to the snapshot (which leaves it out)."""
    size, shown = entry.st.st_size, scan.redact_text(entry.rel)[0]  # (a record never names a key, even in a path)
    if size > caps.file_bytes and not stage:
        result.skipped.append({"path": shown, "why": f"larger than {caps.file_bytes} bytes"})
        return
    fd = safefs.open_entry(entry)
    if fd is None:
        return
    try:
        with secretscan.load(safefs.read_fd(fd), min(size, caps.file_bytes)) as src:
            raw_hit, kind, verdict = secretscan.examine(src, scan, budget)
            if kind is not None and (raw_hit or verdict.status != "clean"):
                if stage:
                    os.unlink(entry.name, dir_fd=entry.dir_fd)
                    result.removed.append(shown)
                    if verdict.status == "unchecked":
                        result.skipped.append({"path": shown, "why": f"removed: {verdict.why}"})
                if raw_hit or verdict.status == "hit":
                    result.leaks.append(shown)
                return
            cut = size > caps.file_bytes
            if not raw_hit and not cut:
                return
            if raw_hit:
                red, _ = secretscan.redacted_copy(src, scan)
            else:
                src.seek(0)
                red = None
            body = red if red is not None else src
            with body:
                body.seek(0)
                safefs.replace_at(entry.dir_fd, entry.name, iter(lambda: body.read(secretscan.CHUNK), b""),
                                  entry.st.st_mode)
            if raw_hit:
                result.redacted.append(shown)
                result.leaks.append(shown)
            if cut:
                result.truncated.append(shown)
    finally:
        os.close(fd)


def _redact_tree(root: Path, scan: secretscan.Scanner, caps: Caps, *, stage: bool, skip_dirs: Iterable[str] = (),
                 skip_files: Iterable[str] = ()) -> _Pass:
    """Every regular file under ``root`` (a bounded walk by directory descriptors), in place; an entry
    whose name holds a key is a leak (in the stage directory it is removed; in the tree the snapshot
    leaves it out). ``skip_files``: names in ``root`` itself left alone."""
    result = _Pass()
    if not os.path.isdir(root):
        return result
    budget = secretscan.InflateBudget(caps.inflate_stream, caps.inflate_total) if stage else None
    skip_files = set(skip_files)
    walk = safefs.BoundedWalk(root, max_depth=caps.depth, max_entries=caps.entries, skip_dirs=frozenset(skip_dirs))
    for entry in walk:
        if entry.depth == 1 and entry.name in skip_files:
            continue
        try:
            if scan.found(entry.name.encode("utf-8", "surrogateescape")):
                result.leaks.append(scan.redact_text(entry.rel)[0])
                if stage:
                    safefs.remove_entry(entry.dir_fd, entry.name)
                    result.removed.append(scan.redact_text(entry.rel)[0])
                    walk.prune()
                    continue
            if stat.S_ISREG(entry.st.st_mode):
                _redact_entry(entry, scan, caps, result, stage=stage, budget=budget)
        except OSError as exc:
            result.skipped.append({"path": scan.redact_text(entry.rel)[0], "why": exc.strerror or str(exc)})
    result.skipped += [{"path": scan.redact_text(p)[0], "why": why} for p, why in walk.left_out]
    return result


def _redact_named(directory: Path, names: Iterable[str], scan: secretscan.Scanner, caps: Caps, result: _Pass, *,
                  stage: bool) -> None:
    """The regular files ``names`` of ``directory`` (not reached through a link), in place."""
    budget = secretscan.InflateBudget(caps.inflate_stream, caps.inflate_total) if stage else None
    with safefs.open_dir(Path(directory)) as fd:
        for name in names:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                _redact_entry(safefs.TreeEntry(name, name, fd, st, 1), scan, caps, result, stage=stage, budget=budget)


@timed("redaction")
def redact_files(roots: Iterable[Path], secrets: list[str], skip_dirs: tuple[str, ...] = (".git",)) -> list[str]:
    """Mask each secret in every file under ``roots`` (a bounded walk; directories named in
    ``skip_dirs`` left out at any depth); return the files that held one."""
    scan = secretscan.scanner(secrets)
    if scan is None:
        return []
    touched = []
    for root in map(Path, roots):
        if root.is_dir() and not root.is_symlink():
            done = _redact_tree(root, scan, Caps(), stage=False, skip_dirs=skip_dirs)
            touched += [str(root / p) for p in done.redacted]
        else:
            done = _Pass()
            _redact_named(root.parent, [root.name], scan, Caps(), done, stage=False)
            touched += [str(root.parent / p) for p in done.redacted]
    return touched


@timed("redaction")
def redact_session(stage_dir: Path, workdir: Path, secrets: list[str], record: dict[str, Any], *,
                   carry: Path | None = None, caps: Caps | None = None) -> dict[str, Any]:
    """The redaction pass at a session's end: the record, every file of ``stage_dir`` (but the
    snapshot), the work tree outside ``.git`` (git's files are the snapshot's to check) and the
    carried HOME state ``carry``. Returns the record, masked, with ``redacted_files`` (paths in the
    tree, then in the stage directory), ``credential_leak`` (every place a key was found; empty when
    none) and, when the pass removed, cut or could not read something, ``redaction``."""
    scan = secretscan.scanner(secrets)
    if scan is None:
        return {**record, "redacted_files": [], "credential_leak": []}
    caps = caps or Caps()
    record, fields = redact_fields(record, secrets)
    leaks = [f"record:{f}" for f in fields]
    stage_dir, workdir = Path(stage_dir), Path(workdir)
    own = {SNAPSHOT_NAME} | ({carry.name} if carry is not None and carry.parent.resolve() == stage_dir.resolve() else set())
    stage = _redact_tree(stage_dir, scan, caps, stage=True, skip_files=own)
    tree = _redact_tree(workdir, scan, caps, stage=False, skip_dirs={".git"})
    leaks += [f"stage:{p}" for p in stage.leaks] + [f"tree:{p}" for p in tree.leaks]
    if carry is not None:
        from sdcs_bench.session.carry import redact_state

        carried = redact_state(carry, secrets)
        if carried is not None and carried["credential_leak"]:
            leaks += [f"carry:{p}" for p in carried["credential_leak"]]
            out = (record.get("continuation") or {}).get("carried_out")
            if isinstance(out, dict):
                out["files"] = carried["files"]
    record["redacted_files"] = (tree.redacted + stage.redacted)[:SHOWN]
    record["credential_leak"] = sorted(set(leaks))[:SHOWN]
    if len(set(leaks)) > SHOWN:
        record["credential_leak_count"] = len(set(leaks))
    extra = {k: v for k, v in (("removed", stage.removed), ("truncated", stage.truncated),
                               ("not_checked", stage.skipped + tree.skipped)) if v}
    if extra:
        record["redaction"] = extra
    return record


def redact_outputs(stage_dir: Path, secrets: list[str], names: Iterable[str], fields: dict[str, Any],
                   path: str = "coherence", caps: Caps | None = None) -> tuple[dict[str, Any], list[str]]:
    """After the redaction pass, what a stage writes from the session's records (the coherence
    instruments' files ``names`` in ``stage_dir``, their record ``fields``): masked, and where a key
    was found (``stage:<name>``, ``record:<path>.<field>``)."""
    scan = secretscan.scanner(secrets)
    if scan is None:
        return fields, []
    caps = caps or Caps()
    fields, hits = redact_fields(fields, secrets, path)
    leaks = [f"record:{h}" for h in hits]
    result = _Pass()
    _redact_named(Path(stage_dir), names, scan, caps, result, stage=True)
    return fields, leaks + [f"stage:{p}" for p in result.leaks]
