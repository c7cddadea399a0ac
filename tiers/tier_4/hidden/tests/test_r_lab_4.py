# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest


def test_gap_without_potassium():
    from labs.calculations import anion_gap

    assert anion_gap(140, 104, 24) == 12.0


def test_gap_with_potassium_rounded_to_one_decimal():
    from labs.calculations import anion_gap

    assert anion_gap(138.4, 101.2, 23.9, potassium=4.26) == 17.6
    assert anion_gap(140, 100, 25.04) == 15.0


def test_negative_inputs_rejected():
    from labs.calculations import anion_gap

    for args, kwargs in (((-1, 100, 24), {}), ((140, 100, 24), {"potassium": -0.1})):
        with pytest.raises(ValueError) as err:
            anion_gap(*args, **kwargs)
        assert str(err.value) == "anion_gap: concentrations must not be negative"


def test_band_lower_edge():
    from labs.calculations import gap_band

    assert gap_band(7.9) == "low"
    assert gap_band(8) == "normal"


def test_band_upper_edge_is_excluded_at_twelve():
    from labs.calculations import gap_band

    assert gap_band(11.9) == "normal"
    assert gap_band(12) == "high"


def test_between_twelve_and_sixteen_is_high():
    from labs.calculations import gap_band

    assert gap_band(14.5) == "high"
    assert gap_band(16) == "high"


def test_potassium_is_keyword_only():
    from labs.calculations import anion_gap

    with pytest.raises(TypeError):
        anion_gap(140, 104, 24, 4.0)
