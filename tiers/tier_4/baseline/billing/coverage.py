"""Insurance policies and the part of a charge the patient pays."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Policy", "patient_share"]


@dataclass(frozen=True)
class Policy:
    payer: str
    copay_cents: int = 0
    coinsurance_bp: int = 0  # patient's share after the copay, in basis points
    deductible_cents: int = 0


def patient_share(policy: Policy, charge_cents: int, *, deductible_remaining_cents: int = 0) -> int:
    """What the patient owes for one charge.

    The patient pays the charge in full up to the remaining deductible; of the
    rest, the copay first, then the coinsurance share (rounded half up) of
    what is left after the copay.
    """
    if charge_cents < 0:
        raise ValueError("patient_share: negative charge")
    deductible_part = min(charge_cents, max(deductible_remaining_cents, 0))
    rest = charge_cents - deductible_part
    copay = min(rest, policy.copay_cents)
    rest -= copay
    coinsurance = (rest * policy.coinsurance_bp + 5_000) // 10_000
    return deductible_part + copay + coinsurance
