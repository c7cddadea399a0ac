# SPECSNAP-CANARY standards 3c9d2f61-8b4e-4a7f-9d05-6e1b2c7a4f38
import importlib
import re

from payments.errors import ValidationError


def _key(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _handler():
    module = importlib.import_module("payments.handlers.installment_scheduled")
    found = [value for name, value in vars(module).items() if callable(value) and _key(name) == "handleinstallmentscheduled"]
    assert found, "payments.handlers.installment_scheduled defines no handler of the installment.scheduled event"
    return found[0]


def _respond(payload):
    return {_key(k): v for k, v in _handler()(payload).items()}


def _rejected(payload):
    try:
        out = _handler()(payload)
    except ValidationError:
        return True
    return isinstance(out, dict) and "error" in out


def test_four_installments():
    out = _respond({"principal_cents": 200_000, "installments": 4, "plan": "gold"})
    assert out["feecents"] == 3_980
    assert out["installmentcents"] == 50_995
    assert out["totalcents"] == 203_980
    assert out["plan"] == "gold"


def test_five_installments():
    out = _respond({"principal_cents": 200_000, "installments": 5, "plan": "gold"})
    assert out["installmentcents"] == 40_796


def test_missing_plan_is_standard():
    out = _respond({"principal_cents": 100_000, "installments": 1, "plan": None})
    assert out["feecents"] == 1_990
    assert out["installmentcents"] == 101_990
    assert out["plan"] == "standard"
    assert out["status"] == "scheduled"


def test_zero_installments_are_rejected():
    assert _rejected({"principal_cents": 100_000, "installments": 0, "plan": None})


def test_responds_with_the_processing_time():
    out = _respond({"principal_cents": 200_000, "installments": 4, "plan": "gold"})
    assert isinstance(out["processedat"], str)
