"""The clinic's drug formulary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

__all__ = ["Drug", "Formulary"]


@dataclass(frozen=True)
class Drug:
    code: str
    name: str
    strength_mg: int  # per tablet or per ml
    max_daily_mg: int
    form: str = "tablet"
    controlled: bool = False

    def __post_init__(self) -> None:
        if self.strength_mg <= 0:
            raise ValueError(f"{self.code}: strength must be positive")
        if self.max_daily_mg < self.strength_mg:
            raise ValueError(f"{self.code}: max daily dose below one unit")


class Formulary:
    def __init__(self, drugs: list[Drug] | None = None) -> None:
        self._drugs: dict[str, Drug] = {}
        for drug in drugs or []:
            self.add(drug)

    def add(self, drug: Drug) -> None:
        if drug.code in self._drugs:
            raise ValueError(f"duplicate drug code: {drug.code}")
        self._drugs[drug.code] = drug

    def get(self, code: str) -> Drug:
        try:
            return self._drugs[code]
        except KeyError:
            raise KeyError(f"unknown drug: {code}") from None

    def __contains__(self, code: object) -> bool:
        return code in self._drugs

    def __iter__(self) -> Iterator[Drug]:
        return iter(sorted(self._drugs.values(), key=lambda d: d.code))

    def controlled(self) -> list[Drug]:
        return [d for d in self if d.controlled]
