"""Weekly pay, withholding and payslips for the staff in ``roster``."""

from payroll.payslip import Payslip, make_payslip, payroll_run, withholding
from payroll.rates import round_half_up, weekly_pay

__all__ = ["Payslip", "make_payslip", "payroll_run", "round_half_up", "weekly_pay", "withholding"]
