# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


class NotANumber:
    def __int__(self):
        raise TypeError("NotANumber cannot become an int")


def test_replace_keeps_constructor_type_error_for_known_part():
    with pytest.raises(TypeError) as excinfo:
        Version(1, 4, 2).replace(minor=NotANumber())
    assert str(excinfo.value) == "NotANumber cannot become an int"


def test_replace_none_for_numeric_part_is_not_reported_as_unknown_keyword():
    with pytest.raises(TypeError) as excinfo:
        Version(1, 4, 2).replace(patch=None)
    assert ("unexpected keyword" in str(excinfo.value)) == False

