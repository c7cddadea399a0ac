from datetime import date

import pytest

from patients.records import Patient
from pharmacy.dosing import allergy_conflict, units_for_dose, weight_based_dose_mg
from pharmacy.formulary import Drug, Formulary
from pharmacy.stock import OutOfStock, StockLedger

AMOX = Drug("AMX500", "Amoxicillin", 500, 3_000)


def test_dosing():
    assert weight_based_dose_mg(12.5, 20.3) == 253
    assert units_for_dose(AMOX, 750) == 2
    assert allergy_conflict(Patient("P1", "A", "B", date(2000, 1, 1), allergies=("amoxicillin",)), AMOX)


def test_formulary_lookup():
    f = Formulary([AMOX])
    assert f.get("AMX500").name == "Amoxicillin"
    with pytest.raises(KeyError):
        f.get("NOPE")


def test_stock_moves():
    s = StockLedger()
    s.receive("AMX500", 20)
    s.dispense("AMX500", 5)
    assert s.on_hand("AMX500") == 15
    with pytest.raises(OutOfStock):
        s.dispense("AMX500", 16)
