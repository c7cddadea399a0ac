# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
import pytest

from packaging.markers import InvalidMarker, Marker


def test_text_after_a_parenthesised_marker_is_rejected():
    with pytest.raises(InvalidMarker):
        Marker('(os_name == "posix") plus some words')


def test_trailing_garbage_after_marker_is_rejected():
    rejected = []
    for text in [
        'sys_platform == "win32" sys_platform == "linux"',
        'python_version < "3.9" ;',
        'implementation_name == "cpython" )',
        'platform_machine == "x86_64" and (os_name == "nt") extra',
    ]:
        try:
            Marker(text)
        except InvalidMarker:
            rejected.append(text)
    assert len(rejected) == 4


def test_whole_marker_still_parses_with_surrounding_blanks():
    marker = Marker('  (os_name == "posix" or os_name == "nt")  ')
    assert str(marker) == 'os_name == "posix" or os_name == "nt"'
    with pytest.raises(InvalidMarker):
        Marker('  (os_name == "posix")  trailing')
