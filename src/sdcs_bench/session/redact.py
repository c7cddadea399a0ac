"""The redaction pass (docs/architecture.md): no API key text survives in a transcript, log or result file.

Keys reach a harness only through its environment; a harness may still print one (a debug
dump, an error message echoing a header), or an agent may write one into the repository. After
every session each file the session produced is rewritten with every key's text replaced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from sdcs_bench.core.timing import timed


def mask(secret: str) -> str:
    return f"[REDACTED:{len(secret)} chars]"


@timed("redaction")
def redact_record(record: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
    """The same record with every secret's text masked in every string it holds."""
    if not secrets:
        return record
    text = json.dumps(record)
    for secret in secrets:
        text = text.replace(json.dumps(secret)[1:-1], mask(secret))
    return json.loads(text)


@timed("redaction")
def redact_files(roots: Iterable[Path], secrets: list[str], skip_dirs: tuple[str, ...] = (".git",)) -> list[str]:
    """Replace each secret in every file under ``roots``; return the files that held one."""
    if not secrets:
        return []
    needles = [(s.encode(), mask(s).encode()) for s in secrets]
    touched = []
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        for path in files:
            if root.is_dir() and any(part in skip_dirs for part in path.relative_to(root).parts):
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue
            new = data
            for needle, masked in needles:
                new = new.replace(needle, masked)
            if new != data:
                path.write_bytes(new)
                touched.append(str(path))
    return touched
