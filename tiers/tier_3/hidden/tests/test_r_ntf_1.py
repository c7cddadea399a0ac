# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from notify.templates import placeholders, render


def test_upper_and_lower():
    assert render("{name|upper} {name|lower}", {"name": "Ana Lu"}) == "ANA LU ana lu"


def test_money_filter():
    assert render("{a|money}", {"a": 123_456_789}) == "1,234,567.89"
    assert render("{a|money}", {"a": 5}) == "0.05"
    assert render("{a|money}", {"a": 0}) == "0.00"
    assert render("{a|money}", {"a": -120_050}) == "-1,200.50"


def test_default_then_chained_filter():
    template = "{x|default:n/a|upper}"
    assert render(template, {}) == "N/A"
    assert render(template, {"x": None}) == "N/A"
    assert render(template, {"x": ""}) == "N/A"
    assert render(template, {"x": "ok"}) == "OK"


def test_missing_value_without_default_still_raises_key_error():
    with pytest.raises(KeyError, match="missing placeholder: x"):
        render("{x|upper}", {})
    with pytest.raises(KeyError, match="missing placeholder: y"):
        render("{y}", {})


def test_unknown_filter():
    with pytest.raises(ValueError) as err:
        render("{x|shout}", {"x": "hi"})
    assert str(err.value) == "unknown filter: shout"


def test_placeholders_strip_filters_and_escapes_still_work():
    assert placeholders("{a|money} {b|default:x|upper} {a}") == ["a", "b"]
    assert render("{{x}} {y|money}", {"y": 100}) == "{x} 1.00"
