# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


def test_equality_with_unusable_collections_is_false():
    ref = Version(0, 4, 2)
    assert (ref == {"major": 0, "minor": 4, "patch": 2, "flavour": "x"}) == False
    assert (ref == ()) == False
    assert (ref == [0, "four", 2]) == False
    assert (ref == (0, 4, 2, "rc.1", "b.1", "extra")) == False


def test_inequality_with_unusable_collections_is_true():
    ref = Version(5, 0, 0)
    assert (ref != {}) == True
    assert (ref != ["five", 0, 0]) == True


def test_ordering_with_unusable_collection_uses_python_type_error():
    ref = Version(1, 1, 1)
    with pytest.raises(TypeError) as excinfo:
        ref < ["x", 1, 1]
    assert "not supported between instances" in str(excinfo.value)
    with pytest.raises(TypeError) as excinfo:
        ref >= {"minor": 1}
    assert "not supported between instances" in str(excinfo.value)
    # usable collections keep working
    assert (ref < (1, 2, 0)) == True
    assert (ref == {"major": 1, "minor": 1, "patch": 1}) == True
