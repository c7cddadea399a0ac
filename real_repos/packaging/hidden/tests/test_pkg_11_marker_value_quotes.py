# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
from packaging.markers import Marker
from packaging.requirements import Requirement


def test_value_with_double_quote_is_written_in_single_quotes():
    marker = Marker("platform_version == 'build \"42\"'")
    assert str(marker) == "platform_version == 'build \"42\"'"


def test_marker_round_trips_through_its_string():
    marker = Marker("implementation_version != 'x\"y' and os_name == \"nt\"")
    again = Marker(str(marker))
    assert again == marker
    env = {"implementation_version": 'x"y', "os_name": "nt"}
    assert again.evaluate(env) is False
    assert marker.evaluate(env) is False


def test_requirement_marker_with_double_quote_in_value():
    req = Requirement("demo>=1; platform_release == '5.15 \"lts\"'")
    assert str(req) == "demo>=1; platform_release == '5.15 \"lts\"'"
    assert Requirement(str(req)) == req
    # ordinary values keep their double quotes
    assert str(Marker("os_name == 'posix'")) == 'os_name == "posix"'
