"""The scaffold record and session records kept inside the sandbox's .git, so a sandbox scored later (even by hand with
evaluate-sandbox) still knows what each session did and where session 1 was cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError

META = Path(".git") / "specsnap" / "sandbox.json"
SESSIONS_DIR = Path(".git") / "specsnap" / "sessions"


def remember_session(workdir: Path, record: dict) -> None:
    folder = workdir / SESSIONS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{record['index']:02d}-{record['session']}.json").write_text(json.dumps(record, indent=2))


def session_records(workdir: Path) -> list[dict]:
    folder = workdir / SESSIONS_DIR
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def sandbox_meta(path: Path) -> dict[str, Any]:
    """The scaffold record of a sandbox, or a clear error if ``path`` is not a SpecSnap sandbox."""
    meta = path / META
    if not path.is_dir():
        raise SpecSnapError(f"{path} is not a directory")
    if not meta.is_file():
        raise SpecSnapError(
            f"{path} is not a SpecSnap sandbox (no {META.as_posix()}); create one with `specsnap scaffold-sandbox`"
        )
    return json.loads(meta.read_text())
