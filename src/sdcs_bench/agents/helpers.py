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
