# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""ordinal(), apnumber(), intword() and fractional() must not crash on NaN or infinity."""
from __future__ import annotations

import math

import humanize


def test_ordinal_and_apnumber_of_infinity() -> None:
    assert humanize.ordinal(math.inf) == "+Inf"
    assert humanize.ordinal(-math.inf) == "-Inf"
    assert humanize.apnumber(float("-inf")) == "-Inf"


def test_intword_of_infinity() -> None:
    assert humanize.intword(float("inf")) == "+Inf"
    assert humanize.intword(-math.inf, "%.2f") == "-Inf"


def test_fractional_of_nan_and_infinity() -> None:
    assert humanize.fractional(math.nan) == "NaN"
    assert humanize.fractional(math.inf) == "+Inf"
    assert humanize.fractional("-inf") == "-Inf"


def test_ordinal_of_nan() -> None:
    assert humanize.ordinal(float("nan")) == "NaN"
