# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler(module):
    mod = importlib.import_module(f"payments.handlers.{module}")
    found = [value for name, value in vars(mod).items() if callable(value) and _key(name) == "handle" + _key(module)]
    assert found, f"payments.handlers.{module} defines no handler"
    return found[0]


def _respond(module, payload):
    return {_key(k): v for k, v in _handler(module)(payload).items()}


def _rejected(module, payload):
    try:
        out = _handler(module)(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_invoice_paid_settles_the_amount_less_the_card_fee():
    out = _respond("invoice_paid", {"amount_cents": 10_000, "reference": "INV-1"})
    assert out["feecents"] == 290
    assert out["settledcents"] == 9_710
    assert out["reference"] == "INV-1"
    assert out["status"] == "paid"


def test_invoice_paid_records_a_missing_reference():
    out = _respond("invoice_paid", {"amount_cents": 1_000, "reference": None})
    assert out["feecents"] == 29
    assert out["reference"] == "none"


def test_invoice_paid_rejects_a_zero_amount():
    assert _rejected("invoice_paid", {"amount_cents": 0, "reference": None})


def test_payout_sent_splits_the_amount_less_the_fee():
    out = _respond("payout_sent", {"amount_cents": 40_000, "batch_size": 4, "memo": "weekly"})
    assert out["feecents"] == 100
    assert out["transfercents"] == 9_975
    assert out["memo"] == "weekly"
    assert out["status"] == "sent"


def test_payout_sent_records_a_missing_memo():
    out = _respond("payout_sent", {"amount_cents": 20_000, "batch_size": 1, "memo": None})
    assert out["feecents"] == 50
    assert out["transfercents"] == 19_950
    assert out["memo"] == "none"


def test_payout_sent_rejects_an_empty_batch():
    assert _rejected("payout_sent", {"amount_cents": 20_000, "batch_size": 0, "memo": None})
