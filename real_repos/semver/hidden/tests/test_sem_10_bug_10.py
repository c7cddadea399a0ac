# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


class Position:
    """An integer-like object, as numpy scalars are (it has __index__)."""

    def __init__(self, n):
        self.n = n

    def __index__(self):
        return self.n


def test_subscript_with_index_protocol_objects():
    ver = Version.parse("8.6.4-rc.2+b7")
    assert ver[Position(0)] == 8
    assert ver[Position(3)] == "rc.2"
    assert ver[Position(1):Position(3)] == (6, 4)
    with pytest.raises(IndexError):
        ver[Position(-2)]


@pytest.mark.parametrize("key", ["0", 1.5, None, object()])
def test_subscript_with_wrong_key_type_raises_type_error(key):
    with pytest.raises(TypeError):
        Version.parse("8.6.4")[key]
