"""Employees and the staff directory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

__all__ = ["EMP_ID_PATTERN", "Employee", "StaffDirectory"]

EMP_ID_PATTERN = re.compile(r"E\d{3}")


@dataclass(frozen=True)
class Employee:
    """One member of staff, paid by the hour."""

    emp_id: str
    name: str
    hourly_rate_cents: int
    role: str = "crew"

    def __post_init__(self) -> None:
        raise NotImplementedError


class StaffDirectory:
    """Employees by id; iterates in ascending id order."""

    def __init__(self, employees: Iterable[Employee] = ()) -> None:
        raise NotImplementedError

    def add(self, employee: Employee) -> None:
        raise NotImplementedError

    def get(self, emp_id: str) -> Employee:
        raise NotImplementedError

    def by_role(self, role: str) -> list[Employee]:
        raise NotImplementedError

    def __contains__(self, emp_id: object) -> bool:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Employee]:
        raise NotImplementedError
