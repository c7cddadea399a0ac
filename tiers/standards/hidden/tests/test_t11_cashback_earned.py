# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.cashback_earned")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handlecashbackearned"]
    assert found, "payments.handlers.cashback_earned defines no handler of the cashback.earned event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_cashback_and_points():
    out = _respond({"spend_cents": 25_000, "card": "travel"})
    assert out["cashbackcents"] == 400
    assert out["points"] == 250
    assert out["card"] == "travel"


def test_a_small_spend():
    out = _respond({"spend_cents": 1_500, "card": "travel"})
    assert out["cashbackcents"] == 24
    assert out["points"] == 15


def test_missing_card_is_primary():
    out = _respond({"spend_cents": 0, "card": None})
    assert out["cashbackcents"] == 0
    assert out["points"] == 0
    assert out["card"] == "primary"
    assert out["status"] == "earned"


def test_a_negative_spend_is_rejected():
    assert _rejected({"spend_cents": -100, "card": None})


def test_responds_with_the_processing_time():
    out = _respond({"spend_cents": 25_000, "card": "travel"})
    assert isinstance(out["processedat"], str)
