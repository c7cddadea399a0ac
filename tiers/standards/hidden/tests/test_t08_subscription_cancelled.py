# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.subscription_cancelled")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handlesubscriptioncancelled"]
    assert found, "payments.handlers.subscription_cancelled defines no handler of the subscription.cancelled event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_a_third_of_the_month_used():
    out = _respond({"monthly_cents": 3_000, "days_used": 10, "days_in_month": 30, "feedback": "price"})
    assert out["unusedcents"] == 2_000
    assert out["feecents"] == 70
    assert out["refundcents"] == 1_930
    assert out["feedback"] == "price"


def test_nothing_used():
    out = _respond({"monthly_cents": 6_200, "days_used": 0, "days_in_month": 31, "feedback": "moving"})
    assert out["unusedcents"] == 6_200
    assert out["feecents"] == 217
    assert out["refundcents"] == 5_983


def test_missing_feedback_is_none():
    out = _respond({"monthly_cents": 2_000, "days_used": 20, "days_in_month": 20, "feedback": None})
    assert out["unusedcents"] == 0
    assert out["refundcents"] == 0
    assert out["feedback"] == "none"
    assert out["status"] == "cancelled"


def test_a_month_without_days_is_rejected():
    assert _rejected({"monthly_cents": 2_000, "days_used": 0, "days_in_month": 0, "feedback": None})


def test_responds_with_the_processing_time():
    out = _respond({"monthly_cents": 3_000, "days_used": 10, "days_in_month": 30, "feedback": "price"})
    assert isinstance(out["processedat"], str)
