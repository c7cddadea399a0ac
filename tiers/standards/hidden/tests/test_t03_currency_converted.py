# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.currency_converted")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handlecurrencyconverted"]
    assert found, "payments.handlers.currency_converted defines no handler of the currency.converted event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_conversion_and_markup():
    out = _respond({"amount_cents": 25_000, "quote_ppm": 800_000, "memo": "eur"})
    assert out["convertedcents"] == 20_000
    assert out["markupcents"] == 190
    assert out["payablecents"] == 19_810
    assert out["memo"] == "eur"


def test_a_quote_above_parity():
    out = _respond({"amount_cents": 50_000, "quote_ppm": 1_200_000, "memo": "gbp"})
    assert out["convertedcents"] == 60_000
    assert out["markupcents"] == 570
    assert out["payablecents"] == 59_430


def test_missing_memo_is_none():
    out = _respond({"amount_cents": 10_000, "quote_ppm": 1_000_000, "memo": None})
    assert out["convertedcents"] == 10_000
    assert out["memo"] == "none"
    assert out["status"] == "converted"


def test_a_zero_quote_is_rejected():
    assert _rejected({"amount_cents": 10_000, "quote_ppm": 0, "memo": None})


def test_responds_with_the_processing_time():
    out = _respond({"amount_cents": 25_000, "quote_ppm": 800_000, "memo": "eur"})
    assert isinstance(out["processedat"], str)
