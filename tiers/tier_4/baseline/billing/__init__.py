"""Fee schedule, charges, insurance coverage and patient statements."""

from billing.charges import Charge
from billing.coverage import Policy, patient_share
from billing.fee_schedule import FEES, fee_for

__all__ = ["FEES", "Charge", "Policy", "fee_for", "patient_share"]
