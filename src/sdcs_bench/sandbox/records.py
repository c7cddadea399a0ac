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
    """A copy of the session record in the sandbox (written without following a link the agent
    planted there; the pipeline itself reads the stage record, outside the sandbox)."""
    from sdcs_bench.core import safefs

    rel = (SESSIONS_DIR / f"{record['index']:02d}-{record['session']}.json").as_posix()
    safefs.write_file(workdir, rel, json.dumps(record, indent=2).encode(), replace_dirs=True)


def session_records(workdir: Path) -> list[dict]:
    folder = workdir / SESSIONS_DIR
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def sandbox_meta(path: Path) -> dict[str, Any]:
    """The scaffold record of a sandbox, or a clear error if ``path`` is not a SpecSnap sandbox. (It
    lies in the agent's tree: read without following a link, and trusted only where nothing better
    is known, as when a sandbox is scored by hand.)"""
    from sdcs_bench.core import safefs

    if not path.is_dir():
        raise SpecSnapError(f"{path} is not a directory")
    try:
        data = safefs.read_file(path, META.as_posix())
    except OSError:
        data = None
    if data is None:
        raise SpecSnapError(
            f"{path} is not a SpecSnap sandbox (no {META.as_posix()}); create one with `specsnap scaffold-sandbox`"
        )
    try:
        meta = json.loads(data)
    except ValueError:
        raise SpecSnapError(f"{path}: {META.as_posix()} is not a SpecSnap scaffold record (not JSON)") from None
    if not isinstance(meta, dict):
        raise SpecSnapError(f"{path}: {META.as_posix()} is not a SpecSnap scaffold record")
    return meta
