# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest


def test_national_style_is_the_default():
    from patients.contacts import format_phone

    assert format_phone("555.010.2030") == "(555) 010-2030"
    assert format_phone("+1 555 010 2030", style="national") == "(555) 010-2030"


def test_international_style():
    from patients.contacts import format_phone

    assert format_phone("(555) 010-2030", style="international") == "+1 555 010 2030"


def test_dotted_style():
    from patients.contacts import format_phone

    assert format_phone("1-555-010-2030", style="dotted") == "555.010.2030"


def test_unknown_style_checked_before_the_number():
    from patients.contacts import format_phone

    with pytest.raises(ValueError) as err:
        format_phone("123", style="E164")
    assert str(err.value) == "format_phone: unknown style 'E164'"


def test_bad_numbers_propagate_normalise_error():
    from patients.contacts import format_phone

    with pytest.raises(ValueError) as err:
        format_phone("555-0102", style="dotted")
    assert str(err.value) == "bad phone number: '555-0102'"


def test_style_is_keyword_only():
    from patients.contacts import format_phone

    with pytest.raises(TypeError):
        format_phone("5550102030", "dotted")
