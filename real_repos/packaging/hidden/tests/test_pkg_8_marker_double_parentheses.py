# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
from packaging.markers import Marker
from packaging.requirements import Requirement


def test_doubly_parenthesised_group_keeps_its_parentheses():
    marker = Marker(
        'python_version >= "3.10" and ((sys_platform == "darwin" or sys_platform == "win32"))'
    )
    assert str(marker) == (
        'python_version >= "3.10" and (sys_platform == "darwin" or sys_platform == "win32")'
    )


def test_round_trip_keeps_the_meaning():
    text = '((os_name == "nt" or os_name == "java")) and platform_machine == "arm64"'
    again = Marker(str(Marker(text)))
    env = {"os_name": "nt", "platform_machine": "x86_64"}
    assert Marker(text).evaluate(env) is False
    assert again.evaluate(env) is False


def test_requirement_marker_with_redundant_parentheses():
    req = Requirement(
        'pywin32>=306; ((platform_system == "Windows" or os_name == "nt")) '
        'and python_version < "3.13"'
    )
    assert str(req.marker) == (
        '(platform_system == "Windows" or os_name == "nt") and python_version < "3.13"'
    )
    # a redundant pair around the whole marker is still dropped
    assert str(Marker('((os_name == "nt" or os_name == "posix"))')) == (
        'os_name == "nt" or os_name == "posix"'
    )
