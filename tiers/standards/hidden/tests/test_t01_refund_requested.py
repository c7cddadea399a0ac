# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.refund_requested")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handlerefundrequested"]
    assert found, "payments.handlers.refund_requested defines no handler of the refund.requested event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_fee_and_net_on_a_round_amount():
    out = _respond({"amount_cents": 10_000, "reason": "damaged"})
    assert out["feecents"] == 125
    assert out["netcents"] == 9_875
    assert out["reason"] == "damaged"


def test_fee_scales_with_the_amount():
    out = _respond({"amount_cents": 2_400, "reason": "late"})
    assert out["feecents"] == 30
    assert out["netcents"] == 2_370


def test_missing_reason_is_unspecified():
    out = _respond({"amount_cents": 800, "reason": None})
    assert out["reason"] == "unspecified"
    assert out["status"] == "accepted"
    assert out["feecents"] == 10


def test_negative_amount_is_rejected():
    assert _rejected({"amount_cents": -1, "reason": None})


def test_responds_with_the_processing_time():
    out = _respond({"amount_cents": 10_000, "reason": "damaged"})
    assert isinstance(out["processedat"], str)
