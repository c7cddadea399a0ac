# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
import pytest

from packaging.requirements import InvalidRequirement, Requirement


def test_requirement_with_trailing_newline_is_rejected():
    with pytest.raises(InvalidRequirement):
        Requirement("attrs>=23.1\n")


def test_other_forms_with_trailing_newline_are_rejected():
    rejected = 0
    for text in [
        "attrs\n",
        "attrs[tests]\n",
        'attrs; python_version >= "3.8"\n',
        "attrs (>=23.1, <24)\n",
    ]:
        try:
            Requirement(text)
        except InvalidRequirement:
            rejected += 1
    assert rejected == 4


def test_trailing_blanks_are_still_accepted():
    assert str(Requirement("attrs>=23.1  ")) == "attrs>=23.1"
    with pytest.raises(InvalidRequirement):
        Requirement("attrs>=23.1 \n")
