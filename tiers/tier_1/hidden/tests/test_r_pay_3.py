# SPECSNAP-CANARY tier_1 309872f7-59db-4001-824c-930a6fe607df
from datetime import date

import pytest

from payroll.payslip import Payslip
from roster.staff import Employee, StaffDirectory

MON = date(2024, 6, 3)


def _directory():
    return StaffDirectory(
        [
            Employee("E100", "Al", 1_500, "crew"),
            Employee("E200", "Bo", 1_600, "barista"),
            Employee("E300", "Cy", 1_500, "crew"),
            Employee("E400", "Di", 2_200, "chef"),
        ]
    )


def _slip(emp_id, gross, week=MON):
    return Payslip(emp_id, week, 600, gross, 0)


def test_cost_per_role_most_expensive_first():
    from payroll.reports import labour_cost_by_role

    slips = [_slip("E100", 10_000), _slip("E200", 30_000), _slip("E300", 5_000)]
    assert labour_cost_by_role(_directory(), slips) == [("barista", 32_295), ("crew", 16_148)]


def test_ties_broken_by_role_name():
    from payroll.reports import labour_cost_by_role

    slips = [_slip("E100", 10_000), _slip("E200", 10_000), _slip("E400", 20_000)]
    assert labour_cost_by_role(_directory(), slips) == [("chef", 21_530), ("barista", 10_765), ("crew", 10_765)]


def test_contribution_rounded_half_up_on_role_total():
    from payroll.reports import labour_cost_by_role

    slips = [_slip("E100", 100), _slip("E300", 100)]
    assert labour_cost_by_role(_directory(), slips) == [("crew", 215)]
    assert labour_cost_by_role(_directory(), [_slip("E100", 1)], employer_rate_bp=5_000) == [("crew", 2)]
    weeks = [_slip("E200", 100), _slip("E200", 100, date(2024, 6, 10))]
    assert labour_cost_by_role(_directory(), weeks) == [("barista", 215)]


def test_unknown_employee_raises_key_error():
    from payroll.reports import labour_cost_by_role

    with pytest.raises(KeyError, match="unknown employee: E999"):
        labour_cost_by_role(_directory(), [_slip("E100", 100), _slip("E999", 100)])


def test_rate_validation_and_keyword_only():
    from payroll.reports import labour_cost_by_role

    assert labour_cost_by_role(_directory(), [_slip("E100", 1_234)], employer_rate_bp=0) == [("crew", 1_234)]
    with pytest.raises(ValueError) as err:
        labour_cost_by_role(_directory(), [], employer_rate_bp=-1)
    assert str(err.value) == "labour_cost_by_role: negative rate -1"
    with pytest.raises(TypeError):
        labour_cost_by_role(_directory(), [], 765)


def test_no_payslips_and_all_listing():
    import payroll.reports
    from payroll.reports import labour_cost_by_role

    assert labour_cost_by_role(_directory(), []) == []
    assert "labour_cost_by_role" in payroll.reports.__all__
