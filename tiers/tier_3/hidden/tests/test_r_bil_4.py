# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date

import pytest

from billing.invoices import Invoice, InvoiceLine


def _invoice() -> Invoice:
    return Invoice(
        "77",
        "acme",
        date(2024, 5, 1),
        [InvoiceLine("PIPE", 5, 1_400), InvoiceLine("CAP", 10, 70), InvoiceLine("PIPE", 1, 999)],
        tax_bp=700,
    )


def test_fee_and_tax():
    from billing.credit_notes import credit_for_return

    assert credit_for_return(_invoice(), "PIPE", 3) == 3_820


def test_minimum_restocking_fee():
    from billing.credit_notes import credit_for_return

    assert credit_for_return(_invoice(), "CAP", 10) == 214


def test_credit_never_negative():
    from billing.credit_notes import credit_for_return

    assert credit_for_return(_invoice(), "CAP", 5) == 0


def test_fee_rounds_half_up():
    from billing.credit_notes import credit_for_return

    assert credit_for_return(_invoice(), "PIPE", 5, restocking_bp=1_015) == 6_729


def test_first_line_for_the_sku_is_used():
    from billing.credit_notes import credit_for_return

    assert credit_for_return(_invoice(), "PIPE", 5, restocking_bp=0) == 6_955
    with pytest.raises(ValueError) as err:
        credit_for_return(_invoice(), "PIPE", 6)
    assert str(err.value) == "cannot return 6 x PIPE"


def test_bad_quantity_and_unknown_sku():
    from billing.credit_notes import credit_for_return

    with pytest.raises(ValueError) as err:
        credit_for_return(_invoice(), "CAP", 0)
    assert str(err.value) == "cannot return 0 x CAP"
    with pytest.raises(KeyError) as err:
        credit_for_return(_invoice(), "BOLT", 1)
    assert err.value.args[0] == "BOLT is not on invoice 77"
