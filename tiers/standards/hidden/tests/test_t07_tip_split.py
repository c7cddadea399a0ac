# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.tip_split")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handletipsplit"]
    assert found, "payments.handlers.tip_split defines no handler of the tip.split event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_house_share_and_five_way_split():
    out = _respond({"tip_cents": 10_000, "staff_count": 5, "shift": "night"})
    assert out["housecents"] == 1_250
    assert out["sharecents"] == 1_750
    assert out["shift"] == "night"


def test_seven_way_split():
    out = _respond({"tip_cents": 8_000, "staff_count": 7, "shift": "day"})
    assert out["housecents"] == 1_000
    assert out["sharecents"] == 1_000


def test_missing_shift_is_day():
    out = _respond({"tip_cents": 800, "staff_count": 1, "shift": None})
    assert out["housecents"] == 100
    assert out["sharecents"] == 700
    assert out["shift"] == "day"
    assert out["status"] == "split"


def test_nobody_to_share_with_is_rejected():
    assert _rejected({"tip_cents": 800, "staff_count": 0, "shift": None})


def test_responds_with_the_processing_time():
    out = _respond({"tip_cents": 10_000, "staff_count": 5, "shift": "night"})
    assert isinstance(out["processedat"], str)
