"""Integer-cent money helpers used across the back office."""

from __future__ import annotations

__all__ = ["format_cents", "parse_cents", "split_evenly"]


def parse_cents(text: str) -> int:
    """Parse strings such as ``"12.5"``, ``"-3"`` or ``"1,204.99"`` into cents."""
    cleaned = text.strip().replace(",", "")
    negative = cleaned.startswith("-")
    if negative:
        cleaned = cleaned[1:]
    whole, dot, frac = cleaned.partition(".")
    if not whole.isdigit() or (dot and not frac.isdigit()) or len(frac) > 2:
        raise ValueError(f"parse_cents: not an amount: {text!r}")
    cents = int(whole) * 100 + int(frac.ljust(2, "0") or "0")
    return -cents if negative else cents


def format_cents(cents: int) -> str:
    """``123456`` -> ``"1,234.56"``; negative amounts get a leading minus."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d}"


def split_evenly(total_cents: int, parts: int) -> list[int]:
    """Split into ``parts`` amounts that differ by at most a cent, larger ones first."""
    if parts < 1:
        raise ValueError("split_evenly: parts must be at least 1")
    base, extra = divmod(total_cents, parts)
    return [base + 1 if i < extra else base for i in range(parts)]
