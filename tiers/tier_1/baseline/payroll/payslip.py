"""Withholding and weekly payslips."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from payroll.rates import weekly_pay
from roster.schedule import Schedule, week_start
from roster.staff import Employee, StaffDirectory

__all__ = [
    "HIGH_RATE_BP",
    "LOW_RATE_BP",
    "WITHHOLDING_BAND_CENTS",
    "Payslip",
    "make_payslip",
    "payroll_run",
    "withholding",
]

WITHHOLDING_BAND_CENTS = 50_000
LOW_RATE_BP = 1000  # 10 %
HIGH_RATE_BP = 2000  # 20 %


def withholding(gross_cents: int) -> int:
    """Tax withheld from a week's gross pay, rounded down to a cent."""
    raise NotImplementedError


@dataclass(frozen=True)
class Payslip:
    emp_id: str
    week_start: date
    paid_minutes: int
    gross_cents: int
    withholding_cents: int

    @property
    def net_cents(self) -> int:
        raise NotImplementedError


def make_payslip(employee: Employee, schedule: Schedule, week_of: date) -> Payslip:
    """The payslip of ``employee`` for the ISO week containing ``week_of``."""
    raise NotImplementedError


def payroll_run(directory: StaffDirectory, schedule: Schedule, week_of: date) -> list[Payslip]:
    """Payslips for every employee who worked in that week, in directory order."""
    raise NotImplementedError
