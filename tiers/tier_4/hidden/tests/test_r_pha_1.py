# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest


def test_default_reference_is_68_kg():
    from pharmacy.dosing import paediatric_dose_mg

    assert paediatric_dose_mg(500, 34) == 250


def test_exact_halves_round_up():
    from pharmacy.dosing import paediatric_dose_mg

    assert paediatric_dose_mg(100, 17, reference_kg=40.0) == 43


def test_below_half_rounds_down():
    from pharmacy.dosing import paediatric_dose_mg

    assert paediatric_dose_mg(100, 17.1, reference_kg=70.0) == 24


def test_capped_at_adult_dose():
    from pharmacy.dosing import paediatric_dose_mg

    assert paediatric_dose_mg(500, 80, reference_kg=70.0) == 500
    assert paediatric_dose_mg(500, 70, reference_kg=70.0) == 500


def test_validation_order_and_messages():
    from pharmacy.dosing import paediatric_dose_mg

    with pytest.raises(ValueError) as err:
        paediatric_dose_mg(0, -1)
    assert str(err.value) == "paediatric_dose_mg: adult dose must be positive"
    with pytest.raises(ValueError) as err:
        paediatric_dose_mg(10, 0)
    assert str(err.value) == "paediatric_dose_mg: weight must be positive"


def test_reference_is_keyword_only():
    from pharmacy.dosing import paediatric_dose_mg

    with pytest.raises(TypeError):
        paediatric_dose_mg(100, 10, 50.0)
