"""Clinicians and the staff directory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

__all__ = ["ROLES", "Clinician", "StaffDirectory"]

ROLES = ("doctor", "nurse", "technician")


@dataclass(frozen=True)
class Clinician:
    staff_id: str
    name: str
    role: str
    specialties: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"{self.staff_id}: unknown role {self.role!r}")


class StaffDirectory:
    def __init__(self, clinicians: list[Clinician] | None = None) -> None:
        self._staff: dict[str, Clinician] = {}
        for clinician in clinicians or []:
            self.add(clinician)

    def add(self, clinician: Clinician) -> None:
        if clinician.staff_id in self._staff:
            raise ValueError(f"duplicate staff id: {clinician.staff_id}")
        self._staff[clinician.staff_id] = clinician

    def get(self, staff_id: str) -> Clinician:
        try:
            return self._staff[staff_id]
        except KeyError:
            raise KeyError(f"unknown staff member: {staff_id}") from None

    def __contains__(self, staff_id: object) -> bool:
        return staff_id in self._staff

    def __iter__(self) -> Iterator[Clinician]:
        return iter(sorted(self._staff.values(), key=lambda c: c.staff_id))

    def by_role(self, role: str) -> list[Clinician]:
        return [c for c in self if c.role == role]
