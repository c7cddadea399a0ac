# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest

from pharmacy.formulary import Drug

AMX = Drug("AMX500", "Amoxicillin", 500, 3_000)
SYR = Drug("PCM24", "Paracetamol syrup", 24, 960, form="ml")


def test_plural_label():
    from pharmacy.labels import label_text

    assert label_text(AMX, 2, 3, days=1) == "Take 2 tablets three times daily for 1 day.\nQuantity: 6 tablets"


def test_singular_words():
    from pharmacy.labels import label_text

    assert label_text(AMX, 1, 1, days=1) == "Take 1 tablet once daily for 1 day.\nQuantity: 1 tablet"
    assert label_text(SYR, 5, 4, days=7) == "Take 5 mls four times daily for 7 days.\nQuantity: 140 mls"


def test_frequency_words_and_unsupported():
    from pharmacy.labels import label_text

    assert "twice daily" in label_text(AMX, 1, 2, days=5)
    for bad in (0, 5):
        with pytest.raises(ValueError) as err:
            label_text(AMX, 1, bad, days=5)
        assert str(err.value) == f"label_text: unsupported frequency {bad}"


def test_units_and_days_must_be_positive():
    from pharmacy.labels import label_text

    for units, days in ((0, 5), (1, 0)):
        with pytest.raises(ValueError) as err:
            label_text(AMX, units, 2, days=days)
        assert str(err.value) == "label_text: units and days must be at least 1"
    with pytest.raises(ValueError) as err:
        label_text(AMX, 0, 9, days=0)
    assert str(err.value) == "label_text: unsupported frequency 9"


def test_daily_maximum_is_checked():
    from pharmacy.labels import label_text

    assert label_text(AMX, 2, 3, days=2).startswith("Take 2 tablets")
    with pytest.raises(ValueError) as err:
        label_text(AMX, 2, 4, days=2)
    assert str(err.value) == "label_text: AMX500 exceeds the daily maximum"


def test_days_is_keyword_only_and_no_trailing_newline():
    from pharmacy.labels import label_text

    assert not label_text(AMX, 1, 2, days=3).endswith("\n")
    with pytest.raises(TypeError):
        label_text(AMX, 1, 2, 3)
