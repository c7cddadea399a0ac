"""The invoking user's cache of what every process would otherwise redo (docs/benchmarks.md#a-trials-own-overhead).

``$SPECSNAP_CACHE``, else ``~/.cache/specsnap``: under the user's HOME, which neither isolated
backend (bwrap, docker) shows an agent, so nothing an agent wrote is ever read back from it (the
``local`` backend isolates nothing, as always). Each entry is named by the content (or version)
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
    """SHA-256 of ``parts`` in a canonical form that keeps every value's type: a date and the
    string of its text, or 1 and "1", never share a key, and a mapping's order (its keys of any
    types) does not matter."""
    return hashlib.sha256(json.dumps(_canonical(list(parts)), separators=(",", ":")).encode()).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        items = [[_canonical(k), _canonical(v)] for k, v in value.items()]
        return ["dict", sorted(items, key=lambda kv: json.dumps(kv[0]))]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_canonical(v) for v in value]]
    if value is None or isinstance(value, (bool, str)):
        return [type(value).__name__, value]
    if isinstance(value, (int, float)):
        return [type(value).__name__, repr(value)]
    if isinstance(value, bytes):
        return ["bytes", value.hex()]
    return [f"{type(value).__module__}.{type(value).__qualname__}", repr(value)]


def has_stamp(kind: str, key: str) -> bool:
    """Was ``key`` stamped (a check it names passed) by an earlier process?"""
    return (cache_dir(kind) / key).is_file()


def stamp(kind: str, key: str) -> None:
    """Record that the check ``key`` names passed (a cache that cannot be written is no error)."""
    try:
        atomic_write(cache_dir(kind) / key, "ok\n")  # (atomic_path makes the directory)
    except OSError:
        pass
