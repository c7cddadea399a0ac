"""The invoking user's cache of what every process would otherwise redo (docs/benchmarks.md#a-trials-own-overhead).

``$SPECSNAP_CACHE``, else ``~/.cache/specsnap``: under the user's HOME, which no sandbox can see, so
nothing an agent wrote is ever read back from it. Each entry is named by the content (or version)
it stands for, so a change makes a new entry instead of trusting an old one; losing the directory
costs only time.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from sdcs_bench.core.fsutil import atomic_write


def cache_dir(kind: str) -> Path:
    return Path(os.environ.get("SPECSNAP_CACHE") or Path.home() / ".cache" / "specsnap") / kind


def stamp_key(*parts: Any) -> str:
    """SHA-256 of ``parts`` as canonical JSON (bytes as their hex)."""
    def encode(value: Any) -> Any:
        return value.hex() if isinstance(value, bytes) else value

    text = json.dumps([encode(p) for p in parts], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def has_stamp(kind: str, key: str) -> bool:
    """Was ``key`` stamped (a check it names passed) by an earlier process?"""
    return (cache_dir(kind) / key).is_file()


def stamp(kind: str, key: str) -> None:
    """Record that the check ``key`` names passed (a cache that cannot be written is no error)."""
    try:
        path = cache_dir(kind) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, "ok\n")
    except OSError:
        pass
