# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.wire_received")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handlewirereceived"]
    assert found, "payments.handlers.wire_received defines no handler of the wire.received event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_fee_below_the_cap():
    out = _respond({"amount_cents": 100_000, "sender": "ACME"})
    assert out["feecents"] == 400
    assert out["creditedcents"] == 99_600
    assert out["sender"] == "ACME"


def test_the_cap_applies():
    out = _respond({"amount_cents": 1_000_000, "sender": "ACME"})
    assert out["feecents"] == 2_500
    assert out["creditedcents"] == 997_500


def test_missing_sender_is_unknown():
    out = _respond({"amount_cents": 625_000, "sender": None})
    assert out["feecents"] == 2_500
    assert out["sender"] == "unknown"
    assert out["status"] == "credited"


def test_a_zero_wire_is_rejected():
    assert _rejected({"amount_cents": 0, "sender": None})


def test_responds_with_the_processing_time():
    out = _respond({"amount_cents": 100_000, "sender": "ACME"})
    assert isinstance(out["processedat"], str)
