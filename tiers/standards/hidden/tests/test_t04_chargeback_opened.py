# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.chargeback_opened")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handlechargebackopened"]
    assert found, "payments.handlers.chargeback_opened defines no handler of the chargeback.opened event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_fee_above_the_minimum():
    out = _respond({"amount_cents": 100_000, "dispute_id": "D-7"})
    assert out["feecents"] == 1_800
    assert out["heldcents"] == 101_800
    assert out["disputeid"] == "D-7"


def test_the_minimum_fee_applies():
    out = _respond({"amount_cents": 10_000, "dispute_id": "D-8"})
    assert out["feecents"] == 500
    assert out["heldcents"] == 10_500


def test_missing_dispute_id_is_unassigned():
    out = _respond({"amount_cents": 50_000, "dispute_id": None})
    assert out["disputeid"] == "unassigned"
    assert out["status"] == "disputed"
    assert out["feecents"] == 900


def test_a_zero_amount_is_rejected():
    assert _rejected({"amount_cents": 0, "dispute_id": None})


def test_responds_with_the_processing_time():
    out = _respond({"amount_cents": 100_000, "dispute_id": "D-7"})
    assert isinstance(out["processedat"], str)
