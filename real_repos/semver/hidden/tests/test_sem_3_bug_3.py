# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


@pytest.mark.parametrize(
    "text",
    [
        "2.0.1\n",
        "0.0.7-alpha\n",
        "3.1.4+sha.abc\n",
        "1\u0662.2.3",  # ARABIC-INDIC DIGIT TWO inside major
        "1.1\u0967.0",  # DEVANAGARI DIGIT ONE inside minor
        "4.5.2\uff16",  # FULLWIDTH DIGIT SIX inside patch
        "1.0.0-rc.5\u0663",
    ],
)
def test_parse_rejects_text_outside_the_grammar(text):
    with pytest.raises(ValueError):
        Version.parse(text)
    assert Version.is_valid(text) == False


def test_optional_parts_reject_the_same_text():
    with pytest.raises(ValueError):
        Version.parse("7\n", optional_minor_and_patch=True)
    with pytest.raises(ValueError):
        Version.parse("3\u0662.1", optional_minor_and_patch=True)
    assert str(Version.parse("7.2", optional_minor_and_patch=True)) == "7.2.0"
