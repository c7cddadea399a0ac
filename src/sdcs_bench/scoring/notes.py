"""How big the agent's notes are, in tokens of a real tokenizer, against the arm's cap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdcs_bench.core.tokens import TOKENIZER, count_tokens

__all__ = ["TOKENIZER", "count_tokens", "notes_size"]


def notes_size(sandbox: Path, notes_file: str | None, cap_tokens: int | None) -> dict[str, Any] | None:
    if not notes_file:
        return None
    from sdcs_bench.core import safefs

    try:  # the agent's file, read without following a link it put there
        data = safefs.read_file(sandbox, notes_file)
    except (safefs.Unsafe, ValueError):
        data = None
    text = data.decode(errors="replace") if data is not None else ""
    tokens = count_tokens(text, keep=True)  # (one notes file per score: a bounded cache entry)
    return {
        "file": notes_file,
        "exists": data is not None,
        "bytes": len(text.encode()),
        "tokens": tokens,
        "tokenizer": TOKENIZER,
        "cap_tokens": cap_tokens,
        "cap_exceeded": bool(cap_tokens) and tokens > cap_tokens,
    }
