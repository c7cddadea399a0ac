# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.order_discounted")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handleorderdiscounted"]
    assert found, "payments.handlers.order_discounted defines no handler of the order.discounted event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_ten_items_get_the_bulk_discount():
    out = _respond({"price_cents": 2_000, "quantity": 10, "coupon": "SPRING"})
    assert out["subtotalcents"] == 20_000
    assert out["discountcents"] == 950
    assert out["totalcents"] == 19_050
    assert out["coupon"] == "SPRING"


def test_nine_items_get_no_discount():
    out = _respond({"price_cents": 2_000, "quantity": 9, "coupon": "SPRING"})
    assert out["subtotalcents"] == 18_000
    assert out["discountcents"] == 0
    assert out["totalcents"] == 18_000


def test_missing_coupon_is_none():
    out = _respond({"price_cents": 400, "quantity": 25, "coupon": None})
    assert out["subtotalcents"] == 10_000
    assert out["discountcents"] == 475
    assert out["coupon"] == "none"
    assert out["status"] == "priced"


def test_zero_quantity_is_rejected():
    assert _rejected({"price_cents": 400, "quantity": 0, "coupon": None})


def test_responds_with_the_processing_time():
    out = _respond({"price_cents": 2_000, "quantity": 10, "coupon": "SPRING"})
    assert isinstance(out["processedat"], str)
