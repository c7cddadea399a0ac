"""Plain-text exports of report rows."""

from __future__ import annotations

from typing import Mapping, Sequence

from ledger.money import format_cents

__all__ = ["to_csv", "money_column"]


def _csv_field(value: object, delimiter: str) -> str:
    text = "" if value is None else str(value)
    if delimiter in text or '"' in text or "\n" in text:
        text = '"' + text.replace('"', '""') + '"'
    return text


def to_csv(rows: Sequence[Mapping[str, object]], columns: Sequence[str], *, delimiter: str = ",") -> str:
    """Header plus one line per row; every line ends with a newline."""
    lines = [delimiter.join(_csv_field(c, delimiter) for c in columns)]
    for row in rows:
        lines.append(delimiter.join(_csv_field(row.get(c), delimiter) for c in columns))
    return "\n".join(lines) + "\n"


def money_column(rows: Sequence[Mapping[str, object]], column: str) -> list[dict[str, object]]:
    """Copies of ``rows`` with integer cents in ``column`` formatted as money."""
    out = []
    for row in rows:
        copy = dict(row)
        if isinstance(copy.get(column), int):
            copy[column] = format_cents(copy[column])
        out.append(copy)
    return out
