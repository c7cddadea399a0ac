# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
from datetime import date

import pytest

from ledger.journal import Posting, make_entry


def _entry(entry_id: str = "J1"):
    return make_entry(
        entry_id,
        date(2024, 3, 15),
        "rent",
        [
            Posting("6100", debit_cents=1_500),
            Posting("1000", credit_cents=1_000),
            Posting("2000", credit_cents=500),
        ],
    )


def test_postings_swapped_in_same_order():
    from ledger.journal import reverse_entry

    rev = reverse_entry(_entry())
    assert [(p.account, p.debit_cents, p.credit_cents) for p in rev.postings] == [
        ("6100", 0, 1_500),
        ("1000", 1_000, 0),
        ("2000", 500, 0),
    ]


def test_default_id_suffix_and_memo():
    from ledger.journal import reverse_entry

    rev = reverse_entry(_entry())
    assert rev.entry_id == "J1-REV"
    assert rev.memo == "Reversal of J1"


def test_date_defaults_to_original_entry_date():
    from ledger.journal import reverse_entry

    assert reverse_entry(_entry()).on == date(2024, 3, 15)


def test_explicit_date_and_suffix():
    from ledger.journal import reverse_entry

    rev = reverse_entry(_entry(), on=date(2024, 4, 1), suffix="/R")
    assert rev.on == date(2024, 4, 1)
    assert rev.entry_id == "J1/R"


def test_reversing_a_reversal_is_rejected():
    from ledger.journal import reverse_entry

    with pytest.raises(ValueError) as err:
        reverse_entry(_entry("J1-REV"))
    assert str(err.value) == "J1-REV is already a reversal"


def test_entry_and_reversal_net_to_zero():
    from ledger.balances import account_balances
    from ledger.journal import reverse_entry

    entry = _entry()
    balances = account_balances([entry, reverse_entry(entry)])
    assert balances == {"6100": 0, "1000": 0, "2000": 0}
