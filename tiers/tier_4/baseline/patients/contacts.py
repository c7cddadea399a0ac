"""Contact details: phone numbers and e-mail addresses."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Contact", "normalise_phone", "is_valid_email"]

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")


def normalise_phone(raw: str) -> str:
    """The ten digits of a North American number, without punctuation.

    A leading country code ``1`` on an eleven-digit number is dropped.
    """
    digits = "".join(ch for ch in raw if ch.isdigit())
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    if len(digits) != 10:
        raise ValueError(f"bad phone number: {raw!r}")
    return digits


def is_valid_email(address: str) -> bool:
    return bool(_EMAIL.match(address.strip()))


@dataclass(frozen=True)
class Contact:
    patient_id: str
    phone: str
    email: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "phone", normalise_phone(self.phone))
        if self.email is not None and not is_valid_email(self.email):
            raise ValueError(f"{self.patient_id}: bad e-mail address {self.email!r}")
