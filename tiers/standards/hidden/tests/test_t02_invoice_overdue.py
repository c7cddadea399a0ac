# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.invoice_overdue")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handleinvoiceoverdue"]
    assert found, "payments.handlers.invoice_overdue defines no handler of the invoice.overdue event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_thirty_days_cost_the_full_rate():
    out = _respond({"balance_cents": 20_000, "days_late": 30, "note": "call"})
    assert out["latefeecents"] == 300
    assert out["totalduecents"] == 20_300
    assert out["note"] == "call"


def test_the_fee_is_proportional_to_the_days():
    out = _respond({"balance_cents": 40_000, "days_late": 5, "note": "x"})
    assert out["latefeecents"] == 100
    assert out["totalduecents"] == 40_100


def test_no_days_late_no_fee_and_missing_note():
    out = _respond({"balance_cents": 9_999, "days_late": 0, "note": None})
    assert out["latefeecents"] == 0
    assert out["note"] == "no note"
    assert out["status"] == "overdue"


def test_negative_days_are_rejected():
    assert _rejected({"balance_cents": 100, "days_late": -2, "note": None})


def test_responds_with_the_processing_time():
    out = _respond({"balance_cents": 20_000, "days_late": 30, "note": "call"})
    assert isinstance(out["processedat"], str)
