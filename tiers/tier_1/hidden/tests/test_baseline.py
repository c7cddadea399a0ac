# SPECSNAP-CANARY tier_1 309872f7-59db-4001-824c-930a6fe607df
from datetime import date

import pytest

from payroll.payslip import make_payslip, payroll_run, withholding
from payroll.rates import round_half_up, weekly_pay
from roster.schedule import Schedule, week_start
from roster.shifts import Shift, format_clock, parse_clock, parse_shift
from roster.staff import Employee, StaffDirectory

MON = date(2024, 6, 3)


def test_employee_id_checked_before_rate():
    for bad in ("E07", "e007", "E0071"):
        with pytest.raises(ValueError) as err:
            Employee(bad, "Nobody", 0)
        assert str(err.value) == f"bad employee id: {bad!r}"
    with pytest.raises(ValueError) as err:
        Employee("E007", "Bond", 0)
    assert str(err.value) == "E007: hourly rate must be positive"


def test_directory_lookup_and_roles():
    directory = StaffDirectory(
        [Employee("E300", "Cy", 1_600, "barista"), Employee("E100", "Al", 1_500), Employee("E200", "Bo", 1_550, "barista")]
    )
    assert [e.emp_id for e in directory.by_role("barista")] == ["E200", "E300"]
    assert directory.by_role("chef") == []
    assert directory.get("E100").name == "Al"
    with pytest.raises(KeyError, match="unknown employee: E999"):
        directory.get("E999")
    with pytest.raises(ValueError, match="^duplicate employee: E200$"):
        directory.add(Employee("E200", "Bo", 1_550))


def test_shift_bounds_and_break_messages():
    Shift("E100", MON, 0, 1440, 1439)
    with pytest.raises(ValueError, match="^E100: bad shift times 600-600$"):
        Shift("E100", MON, 600, 600)
    with pytest.raises(ValueError, match="^E100: bad shift times 0-1441$"):
        Shift("E100", MON, 0, 1441)
    with pytest.raises(ValueError, match="^E100: bad break 60$"):
        Shift("E100", MON, 540, 600, 60)
    with pytest.raises(ValueError, match="^E100: bad break -1$"):
        Shift("E100", MON, 540, 600, -1)


def test_overlap_is_per_employee_and_day_and_half_open():
    a = Shift("E100", MON, 480, 720)
    assert a.overlaps(Shift("E100", MON, 719, 800))
    assert not a.overlaps(Shift("E100", MON, 720, 800))
    assert not a.overlaps(Shift("E200", MON, 500, 600))
    assert not a.overlaps(Shift("E100", date(2024, 6, 4), 500, 600))


def test_parse_clock_strict_format():
    assert parse_clock("00:00") == 0
    assert parse_clock("23:59") == 1439
    assert parse_clock("24:00", allow_24=True) == 1440
    for bad in ("24:00", "7:05", "12:60", "1200", "12:00 "):
        with pytest.raises(ValueError) as err:
            parse_clock(bad)
        assert str(err.value) == f"bad clock time: {bad!r}"


def test_format_clock_range():
    assert format_clock(0) == "00:00"
    assert format_clock(1440) == "24:00"
    with pytest.raises(ValueError, match="^bad minute: 1441$"):
        format_clock(1441)


def test_parse_shift_errors():
    assert parse_shift("E100", MON, "18:00-24:00").end_minute == 1440
    with pytest.raises(ValueError) as err:
        parse_shift("E100", MON, "09:00")
    assert str(err.value) == "bad shift: '09:00'"
    with pytest.raises(ValueError, match="^E100: bad shift times 1320-360$"):
        parse_shift("E100", MON, "22:00-06:00")
    with pytest.raises(ValueError, match="^bad clock time: '24:00'$"):
        parse_shift("E100", MON, "24:00-24:00")


def test_failed_add_leaves_schedule_unchanged():
    schedule = Schedule([Shift("E100", MON, 480, 720)])
    with pytest.raises(ValueError, match="^E100: overlapping shifts on 2024-06-03$"):
        schedule.add(Shift("E100", MON, 600, 900))
    schedule.add(Shift("E200", MON, 600, 900))
    assert len(schedule) == 2
    assert schedule.shifts_for("E100") == [Shift("E100", MON, 480, 720)]


def test_schedule_orderings():
    tue = date(2024, 6, 4)
    schedule = Schedule(
        [Shift("E200", tue, 600, 700), Shift("E300", MON, 600, 700), Shift("E100", MON, 600, 700), Shift("E200", MON, 300, 400)]
    )
    assert [(s.emp_id, s.day) for s in schedule] == [("E200", MON), ("E100", MON), ("E300", MON), ("E200", tue)]
    assert [s.emp_id for s in schedule.on_day(MON)] == ["E200", "E100", "E300"]
    assert [s.day for s in schedule.shifts_for("E200")] == [MON, tue]


def test_paid_minutes_inclusive_range():
    schedule = Schedule([Shift("E100", MON, 540, 600, 10), Shift("E100", date(2024, 6, 5), 540, 600)])
    assert schedule.paid_minutes("E100", MON, MON) == 50
    assert schedule.paid_minutes("E100", MON, date(2024, 6, 5)) == 110
    assert schedule.paid_minutes("E100", date(2024, 6, 4), date(2024, 6, 4)) == 0
    with pytest.raises(ValueError, match="^paid_minutes: end before start$"):
        schedule.paid_minutes("E100", MON, date(2024, 6, 2))


def test_week_start_boundaries():
    assert week_start(MON) == MON
    assert week_start(date(2024, 6, 9)) == MON
    assert week_start(date(2024, 1, 3)) == date(2024, 1, 1)
    assert week_start(date(2023, 1, 1)) == date(2022, 12, 26)


def test_round_half_up_on_exact_halves():
    assert round_half_up(1, 2) == 1
    assert round_half_up(3, 2) == 2
    assert round_half_up(149, 100) == 1
    assert round_half_up(0, 7) == 0


def test_weekly_pay_rounds_half_up():
    assert weekly_pay(1, 1_530) == 26
    assert weekly_pay(1, 1_470) == 25
    assert weekly_pay(0, 1_500) == 0
    with pytest.raises(ValueError, match="^weekly_pay: negative minutes$"):
        weekly_pay(-1, 1_500)


def test_weekly_pay_overtime_above_forty_hours():
    assert weekly_pay(2_400, 1_500) == 60_000
    assert weekly_pay(2_460, 1_500) == 62_250
    assert weekly_pay(2_401, 1_001) == 40_065


def test_withholding_bands_round_down():
    assert withholding(99) == 9
    assert withholding(50_000) == 5_000
    assert withholding(50_001) == 5_000
    assert withholding(50_005) == 5_001
    assert withholding(80_000) == 11_000
    with pytest.raises(ValueError, match="^withholding: negative gross$"):
        withholding(-1)


def test_payslip_week_is_monday_to_sunday():
    emp = Employee("E100", "Al", 1_200)
    schedule = Schedule(
        [
            Shift("E100", date(2024, 6, 2), 600, 720),
            Shift("E100", MON, 600, 720),
            Shift("E100", date(2024, 6, 9), 600, 660),
            Shift("E100", date(2024, 6, 10), 600, 720),
        ]
    )
    slip = make_payslip(emp, schedule, date(2024, 6, 9))
    assert slip.week_start == MON
    assert slip.paid_minutes == 180
    assert slip.gross_cents == 3_600


def test_payroll_run_with_overtime_and_withholding():
    directory = StaffDirectory([Employee("E200", "Bo", 2_000), Employee("E100", "Al", 1_500), Employee("E300", "Cy", 1_000)])
    shifts = [Shift("E200", MON.replace(day=3 + i), 360, 1020) for i in range(5)]
    shifts.append(Shift("E100", MON, 540, 600))
    slips = payroll_run(directory, Schedule(shifts), MON)
    assert [s.emp_id for s in slips] == ["E100", "E200"]
    bo = slips[1]
    assert (bo.paid_minutes, bo.gross_cents) == (3_300, 125_000)
    assert bo.withholding_cents == 20_000
    assert bo.net_cents == 105_000
