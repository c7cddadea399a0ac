"""Finding an API key in what an agent wrote: raw, in the encodings a key is commonly written in, in
parts, and inside compressed data (git's objects and packs), reading in bounded chunks.

Every key is looked for in these forms (its *forms*):

- its text (UTF-8), its text reversed, and its JSON- and URL-percent-escaped text (where they differ);
- hexadecimal, lower and upper case; every byte percent-encoded (``%73%6B…``), upper and lower case;
- base64, standard and URL-safe, at each of the three alignments a key can start at inside a longer
  encoded text (``base64("x" + key)`` holds a different string than ``base64(key)``): the characters
  that depend on the key alone.

A form is found whole, or *split*: any run of a form long enough to carry :data:`WINDOW` of the key's
characters (16 characters of the text, 32 hex digits, 48 of ``%XX``, 22 of base64) is a match, so a
key written in two halves, wrapped over lines (``base64`` and ``xxd -p`` wrap theirs) or cut short is
still found; a key shorter than that is found only whole. A match is extended to as much of the form
as is there, and redaction replaces it by :func:`mask`.

Data is scanned in chunks of :data:`CHUNK` with an overlap as long as the longest form, so a match
across a chunk boundary is found and memory stays bounded. With no key there is nothing to look for:
:func:`scanner` returns None, and callers skip every pass.

The search is one regular expression over fixed blocks of every form (a trie, so each position costs
a few comparisons), each hit verified and extended by comparing with the form. What it does not find:
a key cut into parts shorter than a window, or transformed otherwise (encrypted, XORed, in a zip, an
xz or bzip2 stream, or a zlib stream that does not start a file).
"""

from __future__ import annotations

import base64
import functools
import json
import math
import tempfile
import urllib.parse
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO

WINDOW = 16  # a part of a form that carries this many of a key's characters is a match
CHUNK = 1 << 20  # bytes read (or inflated) at a time
MEMORY_LIMIT = 8 << 20  # a file up to this size is checked in memory; a larger one through a temporary file

_B64_URL = bytes.maketrans(b"+/", b"-_")


def mask(secret: str) -> str:
    """What replaces a key (or a part of one) wherever it is found."""
    return f"[REDACTED:{len(secret)} chars]"


def key_forms(secret: str) -> list[tuple[bytes, float]]:
    """Every form of ``secret`` looked for, each with how many of its characters encode one of the
    key's (what a window of :data:`WINDOW` key characters takes in that form)."""
    raw = secret.encode()
    forms: list[tuple[bytes, float]] = [(raw, 1), (raw[::-1], 1), (json.dumps(secret)[1:-1].encode(), 1),
                                        (urllib.parse.quote(secret, safe="").encode(), 1),
                                        (raw.hex().encode(), 2), (raw.hex().upper().encode(), 2),
                                        ("".join(f"%{b:02X}" for b in raw).encode(), 3),
                                        ("".join(f"%{b:02x}" for b in raw).encode(), 3)]
    for k in range(3):  # the key starting k bytes into a 3-byte group of the encoded text
        enc = base64.b64encode(bytes(k) + raw)
        stable = enc[-(-8 * k // 6):(8 * (k + len(raw))) // 6]  # characters of the key's bits alone
        forms += [(stable, 4 / 3), (stable.translate(_B64_URL), 4 / 3)]
    seen, out = set(), []
    for text, unit in forms:
        if text and text not in seen:
            seen.add(text)
            out.append((text, unit))
    return out


@dataclass(frozen=True)
class _Form:
    text: bytes
    secret: int  # index into the scanner's secrets
    need: int  # the shortest run of it that is a match


class Scanner:
    """The forms of some keys, and the search for them in bytes. Build one with :func:`scanner`."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = list(dict.fromkeys(s for s in secrets if s))
        self.masks = [mask(s).encode() for s in self.secrets]
        self.forms: list[_Form] = []
        for i, secret in enumerate(self.secrets):
            for text, unit in key_forms(secret):
                self.forms.append(_Form(text, i, min(len(text), math.ceil(WINDOW * unit))))
        # Blocks: every form cut at multiples of half its window; any matching run holds a whole block.
        self._blocks: dict[int, dict[bytes, list[tuple[int, int]]]] = {}
        for fi, form in enumerate(self.forms):
            size = max(1, form.need // 2)
            for off in range(0, len(form.text) - size + 1, size):
                self._blocks.setdefault(size, {}).setdefault(form.text[off:off + size], []).append((fi, off))
        self._sizes = sorted(self._blocks, reverse=True)
        self._rx = _trie_regex([b for table in self._blocks.values() for b in table])
        self.overlap = max(len(f.text) for f in self.forms)  # no match is longer than this

    def spans(self, buf: bytes) -> list[tuple[int, int, int]]:
        """The matches in ``buf``: ``(start, end, secret index)``, in order, not overlapping."""
        out: list[tuple[int, int, int]] = []
        pos = last = 0
        search = self._rx.search
        while (m := search(buf, pos)) is not None:
            p = m.start()
            best = None
            for size in self._sizes:
                for fi, off in self._blocks[size].get(buf[p:p + size], ()):
                    text = self.forms[fi].text
                    back = 0
                    while back < off and back < p and buf[p - back - 1] == text[off - back - 1]:
                        back += 1
                    ahead = size
                    while off + ahead < len(text) and p + ahead < len(buf) and buf[p + ahead] == text[off + ahead]:
                        ahead += 1
                    if back + ahead >= self.forms[fi].need and (best is None or back + ahead > best[1] - best[0]):
                        best = (p - back, p + ahead, self.forms[fi].secret)
            if best is None:
                pos = p + 1
                continue
            start = max(best[0], last)
            out.append((start, best[1], best[2]))
            last = pos = best[1]
        return out

    def found(self, data: bytes) -> bool:
        return bool(self.spans(data))

    def redact(self, data: bytes) -> tuple[bytes, int]:
        """``data`` with every match masked, and the number of matches."""
        spans = self.spans(data)
        if not spans:
            return data, 0
        parts, pos = [], 0
        for start, end, i in spans:
            parts += [data[pos:start], self.masks[i]]
            pos = end
        parts.append(data[pos:])
        return b"".join(parts), len(spans)

    def redact_text(self, text: str) -> tuple[str, int]:
        new, hits = self.redact(text.encode("utf-8", "surrogateescape"))
        return (new.decode("utf-8", "surrogateescape"), hits) if hits else (text, 0)

    def stream(self, read: Callable[[int], bytes], write: Callable[[bytes], object] | None = None,
               limit: int | None = None) -> int:
        """Scan what ``read(n)`` returns, up to ``limit`` bytes, in chunks; with ``write``, pass it the
        same bytes with every match masked. The number of matches (without ``write``: 0 or 1, the
        scan stops at the first)."""
        buf, hits, left, eof = b"", 0, limit, False
        while not eof:
            want = CHUNK if left is None else min(CHUNK, left)
            chunk = read(want) if want > 0 else b""
            if left is not None:
                left -= len(chunk)
            eof = not chunk
            buf += chunk
            cut = len(buf) if eof else len(buf) - self.overlap
            if cut <= 0:
                continue
            parts, pos = [], 0
            for start, end, i in self.spans(buf):
                if start >= cut:
                    break
                if write is None:
                    return 1
                parts += [buf[pos:start], self.masks[i]]
                pos = end
                hits += 1
            done = max(cut, pos)
            if write is not None:
                parts.append(buf[pos:done])
                write(b"".join(parts))
            buf = buf[done:]
        return hits

    def feed(self) -> Feed:
        return Feed(self)


class Feed:
    """Incremental detection over pieces of one stream (what an inflater produces)."""

    def __init__(self, scanner: Scanner) -> None:
        self.scanner, self.tail = scanner, b""

    def __call__(self, data: bytes) -> bool:
        buf = self.tail + data
        self.tail = buf[-self.scanner.overlap:]
        return self.scanner.found(buf)


def _trie_regex(words: Iterable[bytes]):
    import re

    trie: dict = {}
    for word in words:
        node = trie
        for byte in word:
            node = node.setdefault(byte, {})
        node[None] = True

    def emit(node: dict) -> bytes:
        alts = [re.escape(bytes([b])) + emit(sub) for b, sub in sorted((k, v) for k, v in node.items() if k is not None)]
        if not alts:
            return b""
        body = alts[0] if len(alts) == 1 and None not in node else b"(?:" + b"|".join(alts) + b")"
        return body + b"?" if None in node else body

    return re.compile(emit(trie), re.DOTALL)


@functools.lru_cache(maxsize=8)
def _cached(secrets: tuple[str, ...]) -> Scanner:
    return Scanner(secrets)


def scanner(secrets: Iterable[str] | None) -> Scanner | None:
    """The scanner of ``secrets``, or None when there is none (nothing to look for, nothing to do)."""
    keys = tuple(sorted({s for s in (secrets or ()) if s}))
    return _cached(keys) if keys else None


# -- compressed data -------------------------------------------------------------------------------
# A git object (loose: one zlib stream; packed: a sequence of them) and a gzip file hold their text
# compressed, where no form of a key is visible. Such data is inflated, a chunk at a time, and the
# output scanned. Inflating is bounded: per stream and over everything one pass inflates (a
# "zip bomb" of a few KB that inflates to gigabytes stops at the cap, unchecked).

@dataclass
class InflateBudget:
    per_stream: int
    total: int
    used: int = 0


@dataclass
class Verdict:
    status: str  # "clean", "hit", "unchecked"
    why: str = ""
    inflated: int = field(default=0)


def compressed_kind(head: bytes) -> str | None:
    """What compressed data a file's first bytes announce: a git ``pack``, ``gzip``, ``zlib`` (a git
    loose object), or None."""
    if head[:4] == b"PACK":
        return "pack"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and ((head[0] << 8) | head[1]) % 31 == 0:
        return "zlib"
    return None


class _Capped(Exception):
    pass


class _Source:
    """Sequential reads of a file object with bytes pushed back (what an inflater left unused)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh, self.pending = fh, b""

    def take(self, n: int) -> bytes:
        while len(self.pending) < n:
            more = self.fh.read(CHUNK)
            if not more:
                break
            self.pending += more
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def peek(self, n: int) -> bytes:
        out = self.take(n)
        self.pending = out + self.pending
        return out

    def chunk(self) -> bytes:
        if self.pending:
            out, self.pending = self.pending[:CHUNK], self.pending[CHUNK:]
            return out
        return self.fh.read(CHUNK)


def _inflate(src: _Source, wbits: int, feed: Feed, budget: InflateBudget) -> tuple[bool, bool]:
    """Inflate one stream from ``src`` and scan it: (a match was found, the stream ended cleanly).
    Raises ``_Capped`` past a cap. What the stream did not use is pushed back into ``src``."""
    d = zlib.decompressobj(wbits)
    produced = 0

    def take(out: bytes) -> bool:
        nonlocal produced
        produced += len(out)
        budget.used += len(out)
        if produced > budget.per_stream:
            raise _Capped(f"a compressed stream inflates past {budget.per_stream} bytes")
        if budget.used > budget.total:
            raise _Capped(f"the compressed data inflates past {budget.total} bytes in all")
        return bool(out) and feed(out)

    while not d.eof:
        data = src.chunk()
        if not data:
            return False, False  # the input ended inside the stream: what there was is checked
        for i in range(0, len(data), 1 << 16):
            piece = data[i:i + (1 << 16)]
            saved = d.copy()
            try:
                while True:
                    out = d.decompress(piece, CHUNK)
                    piece = d.unconsumed_tail
                    if take(out):
                        return True, False
                    if d.eof or (not piece and len(out) < CHUNK):
                        break
            except zlib.error:  # corrupt: inflate what comes before the fault, a byte at a time
                d = saved
                piece = data[i:i + (1 << 16)]
                try:
                    for j in range(len(piece)):
                        if take(d.decompress(piece[j:j + 1], CHUNK)):
                            return True, False
                except zlib.error:
                    pass
                return False, False
            if d.eof:
                src.pending = d.unused_data + data[i + (1 << 16):] + src.pending
                return False, True
    return False, True


def _varint_header(src: _Source) -> tuple[int, bool]:
    first = src.take(1)
    if not first:
        return -1, False
    byte = first[0]
    kind = (byte >> 4) & 7
    for _ in range(10):
        if not byte & 0x80:
            return kind, True
        more = src.take(1)
        if not more:
            return kind, False
        byte = more[0]
    return kind, False


def _scan_pack(src: _Source, feed_for: Callable[[], Feed], budget: InflateBudget) -> Verdict:
    head = src.take(12)
    if len(head) < 12 or head[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return Verdict("clean", "not a pack")
    count = int.from_bytes(head[8:12], "big")
    hash_len = 0
    for _ in range(count):
        kind, ok = _varint_header(src)
        if not ok or kind not in (1, 2, 3, 4, 6, 7):
            return Verdict("clean", "pack ends early or is corrupt")
        if kind == 6:
            for _ in range(10):
                b = src.take(1)
                if not b or not b[0] & 0x80:
                    break
        elif kind == 7:
            if not hash_len:  # SHA-1 (20) or SHA-256 (32): where the object's zlib stream starts
                ahead = src.peek(34)
                hash_len = 32 if compressed_kind(ahead[20:22]) != "zlib" and compressed_kind(ahead[32:34]) == "zlib" else 20
            src.take(hash_len)
        hit, ended = _inflate(src, zlib.MAX_WBITS, feed_for(), budget)
        if hit:
            return Verdict("hit", "in a packed object")
        if not ended:
            return Verdict("clean", "pack ends early or is corrupt")
    return Verdict("clean")


def scan_compressed(fh: IO[bytes], scan: Scanner, budget: InflateBudget) -> Verdict:
    """Inflate what the file object ``fh`` holds (from its current position), if it is compressed,
    and look for a key in it: ``clean``, ``hit``, or ``unchecked`` (a cap was reached)."""
    head = fh.read(4)
    kind = compressed_kind(head)
    if kind is None:
        return Verdict("clean")
    src = _Source(fh)
    src.pending = head
    start = budget.used
    try:
        if kind == "pack":
            verdict = _scan_pack(src, scan.feed, budget)
        else:
            hit, ended = _inflate(src, zlib.MAX_WBITS | (16 if kind == "gzip" else 0), scan.feed(), budget)
            # a gzip file may hold several members, one after another
            while kind == "gzip" and not hit and ended and src.peek(2) == b"\x1f\x8b":
                hit, ended = _inflate(src, zlib.MAX_WBITS | 16, scan.feed(), budget)
            verdict = Verdict("hit", f"in its {kind} data") if hit else Verdict("clean")
    except _Capped as exc:
        verdict = Verdict("unchecked", str(exc))
    verdict.inflated = budget.used - start
    return verdict


# -- files -----------------------------------------------------------------------------------------

def load(read: Callable[[int], bytes], size: int) -> IO[bytes]:
    """At most ``size`` bytes from ``read`` in a seekable file object: in memory up to
    :data:`MEMORY_LIMIT`, else in an anonymous temporary file (gone when closed, or on a crash)."""
    import io

    if size <= MEMORY_LIMIT:
        chunks, left = [], size
        while left > 0 and (chunk := read(min(CHUNK, left))):
            chunks.append(chunk)
            left -= len(chunk)
        return io.BytesIO(b"".join(chunks))
    out = tempfile.TemporaryFile()
    left = size
    while left > 0 and (chunk := read(min(CHUNK, left))):
        out.write(chunk)
        left -= len(chunk)
    out.seek(0)
    return out


def redacted_copy(fh: IO[bytes], scan: Scanner) -> tuple[IO[bytes], int]:
    """A new file object with ``fh``'s bytes (from the start), every match masked; and the matches."""
    import io

    fh.seek(0)
    size = fh.seek(0, 2)
    fh.seek(0)
    out: IO[bytes] = io.BytesIO() if size <= MEMORY_LIMIT else tempfile.TemporaryFile()
    hits = scan.stream(fh.read, out.write)
    out.seek(0)
    return out, hits


def examine(fh: IO[bytes], scan: Scanner, budget: InflateBudget | None) -> tuple[bool, str | None, Verdict]:
    """Look for a key in a loaded file: (a match in its bytes as they are, the compressed kind its
    bytes announce, the verdict on its inflated content: ``clean`` when it is not compressed or
    ``budget`` is None)."""
    fh.seek(0)
    raw_hit = scan.stream(fh.read) > 0
    fh.seek(0)
    kind = compressed_kind(fh.read(4))
    verdict = Verdict("clean")
    if kind is not None and budget is not None and not raw_hit:
        fh.seek(0)
        verdict = scan_compressed(fh, scan, budget)
    fh.seek(0)
    return raw_hit, kind, verdict
