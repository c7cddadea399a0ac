# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.interest_accrued")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handleinterestaccrued"]
    assert found, "payments.handlers.interest_accrued defines no handler of the interest.accrued event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_twenty_days_of_interest():
    out = _respond({"balance_cents": 100_000, "days": 20, "account": "A-1"})
    assert out["interestcents"] == 1_000
    assert out["newbalancecents"] == 101_000
    assert out["account"] == "A-1"


def test_a_hundred_days_of_interest():
    out = _respond({"balance_cents": 36_500, "days": 100, "account": "A-2"})
    assert out["interestcents"] == 1_825
    assert out["newbalancecents"] == 38_325


def test_no_days_no_interest_and_missing_account():
    out = _respond({"balance_cents": 5_000, "days": 0, "account": None})
    assert out["interestcents"] == 0
    assert out["account"] == "unknown"
    assert out["status"] == "accrued"


def test_negative_days_are_rejected():
    assert _rejected({"balance_cents": 5_000, "days": -1, "account": None})


def test_responds_with_the_processing_time():
    out = _respond({"balance_cents": 100_000, "days": 20, "account": "A-1"})
    assert isinstance(out["processedat"], str)
