# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
from datetime import date

import pytest


def test_leftover_cents_go_to_earliest():
    from billing.installments import split_installments

    plan = split_installments(1_000, 3, first_due=date(2024, 5, 1))
    assert [amount for _, amount in plan] == [334, 333, 333]
    plan = split_installments(1_003, 4, first_due=date(2024, 5, 1))
    assert [amount for _, amount in plan] == [251, 251, 251, 250]


def test_default_interval_is_fourteen_days():
    from billing.installments import split_installments

    plan = split_installments(900, 3, first_due=date(2024, 5, 1))
    assert [d for d, _ in plan] == [date(2024, 5, 1), date(2024, 5, 15), date(2024, 5, 29)]


def test_first_due_is_keyword_only():
    from billing.installments import split_installments

    with pytest.raises(TypeError):
        split_installments(900, 3, date(2024, 5, 1))


def test_twelve_parts_allowed_thirteen_rejected():
    from billing.installments import split_installments

    plan = split_installments(1_200, 12, first_due=date(2024, 1, 1), interval_days=7)
    assert len(plan) == 12 and plan[-1] == (date(2024, 3, 18), 100)
    with pytest.raises(ValueError) as err:
        split_installments(1_300, 13, first_due=date(2024, 1, 1))
    assert str(err.value) == "split_installments: parts must be 1..12, got 13"


def test_zero_parts_rejected():
    from billing.installments import split_installments

    with pytest.raises(ValueError) as err:
        split_installments(100, 0, first_due=date(2024, 1, 1))
    assert str(err.value) == "split_installments: parts must be 1..12, got 0"


def test_negative_total_rejected():
    from billing.installments import split_installments

    with pytest.raises(ValueError) as err:
        split_installments(-5, 2, first_due=date(2024, 1, 1))
    assert str(err.value) == "split_installments: negative total"
