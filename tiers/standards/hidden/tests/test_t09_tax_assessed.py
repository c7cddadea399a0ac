# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.tax_assessed")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handletaxassessed"]
    assert found, "payments.handlers.tax_assessed defines no handler of the tax.assessed event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_tax_above_the_exemption():
    out = _respond({"net_cents": 11_000, "region": "north"})
    assert out["taxcents"] == 825
    assert out["grosscents"] == 11_825
    assert out["region"] == "north"


def test_no_tax_within_the_exemption():
    out = _respond({"net_cents": 800, "region": "south"})
    assert out["taxcents"] == 0
    assert out["grosscents"] == 800


def test_missing_region_is_domestic():
    out = _respond({"net_cents": 21_000, "region": None})
    assert out["taxcents"] == 1_650
    assert out["region"] == "domestic"
    assert out["status"] == "assessed"


def test_a_negative_sale_is_rejected():
    assert _rejected({"net_cents": -5, "region": None})


def test_responds_with_the_processing_time():
    out = _respond({"net_cents": 11_000, "region": "north"})
    assert isinstance(out["processedat"], str)
