from datetime import date

from payroll.payslip import make_payslip, payroll_run, withholding
from payroll.rates import round_half_up, weekly_pay
from roster.schedule import Schedule
from roster.shifts import Shift
from roster.staff import Employee, StaffDirectory


def test_round_half_up():
    assert round_half_up(5, 2) == 3
    assert round_half_up(7, 3) == 2


def test_weekly_pay_without_overtime():
    assert weekly_pay(2_400, 1_500) == 60_000


def test_withholding_below_band():
    assert withholding(10_000) == 1_000


def test_payslip_for_one_week():
    anna = Employee("E100", "Anna", 1_200)
    schedule = Schedule([Shift("E100", date(2024, 5, 7), 540, 1020, 30)])
    slip = make_payslip(anna, schedule, date(2024, 5, 9))
    assert slip.week_start == date(2024, 5, 6)
    assert (slip.paid_minutes, slip.gross_cents, slip.withholding_cents) == (450, 9_000, 900)
    assert slip.net_cents == 8_100


def test_payroll_run_skips_idle_staff():
    directory = StaffDirectory([Employee("E100", "Anna", 1_200), Employee("E101", "Ben", 1_300)])
    schedule = Schedule([Shift("E101", date(2024, 5, 8), 600, 720)])
    assert [p.emp_id for p in payroll_run(directory, schedule, date(2024, 5, 8))] == ["E101"]
