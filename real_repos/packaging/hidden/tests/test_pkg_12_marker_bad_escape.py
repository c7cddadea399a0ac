# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
import pytest

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement


def test_marker_with_malformed_escape_raises_invalid_marker():
    with pytest.raises(InvalidMarker):
        Marker('os_name == "\\x4"')


def test_requirement_with_malformed_escape_raises_invalid_requirement():
    with pytest.raises(InvalidRequirement):
        Requirement("tool>=2; sys_platform == 'li\\N{nux'")
    with pytest.raises(InvalidRequirement):
        Requirement("tool>=2; platform_release >= '\\u00e'")


def test_error_names_the_string_and_valid_escapes_still_work():
    message = ""
    try:
        Marker("platform_machine == '\\xZZ' and os_name == 'nt'")
    except InvalidMarker as exc:
        message = str(exc)
    assert ("\\xZZ" in message) == True
    assert str(Marker("os_name == 'n\\x74'")) == 'os_name == "nt"'
