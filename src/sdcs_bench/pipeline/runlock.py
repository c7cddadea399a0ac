"""One run at a time per study directory.

The process that plans a study directory (Snakemake's main process, or ``specsnap plan``) takes
an exclusive ``flock`` on ``<study dir>/.run.lock`` and keeps it until it exits: the kernel drops
it when the process ends in any way, ``kill -9`` included, so a lock is never stale. A second run
finds it taken *before* it writes anything. Snakemake's own lock comes later (after the
Snakefile is parsed, when the plan would already have been rewritten), so it cannot do this.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import IO

from sdcs_bench.core.errors import SpecSnapError

LOCK_FILE = ".run.lock"
_held: dict[Path, IO[str]] = {}  # study dir -> the open lock file (kept for the process's lifetime)


class StudyBusy(SpecSnapError):
    """Another live process is running this study directory."""


def hold_study_lock(run_dir: Path) -> None:
    """Take the study directory's run lock for the rest of this process, or raise :class:`StudyBusy`
    naming the process that holds it. Taking it again in the same process is a no-op."""
    run_dir = Path(run_dir).resolve()
    if run_dir in _held:
        return
    lock_path = run_dir / LOCK_FILE
    if lock_path.is_file():
        # Look before creating anything: a busy directory must not be touched at all.
        with open(lock_path) as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StudyBusy(f"{run_dir} is in use by another run ({_holder(lock_path)})") from None
            fcntl.flock(probe, fcntl.LOCK_UN)
    run_dir.mkdir(parents=True, exist_ok=True)
    fh = open(lock_path, "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise StudyBusy(f"{run_dir} is in use by another run ({_holder(lock_path)})") from None
    fh.seek(0)
    fh.truncate()
    fh.write(json.dumps({"pid": os.getpid(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
    fh.flush()
    _held[run_dir] = fh


def _holder(lock_path: Path) -> str:
    try:
        info = json.loads(lock_path.read_text())
        return f"pid {info['pid']}, since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that is still running"
