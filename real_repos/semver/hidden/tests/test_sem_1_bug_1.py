# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


class TaggedVersion(Version):
    """A subclass that adds nothing: it must compare like its base class."""


def test_subclass_equals_base_instance():
    tagged = TaggedVersion(2, 5, 0, prerelease="beta.3")
    plain = Version(2, 5, 0, prerelease="beta.3")
    assert (tagged == plain) == True
    assert (tagged != plain) == False


def test_subclass_orders_against_base_instance():
    assert (TaggedVersion(4, 0, 1) > Version(4, 0, 0)) == True
    assert (TaggedVersion(0, 9, 9) < Version(1, 0, 0)) == True
    assert (TaggedVersion(3, 3, 3) >= Version(3, 3, 3)) == True
    assert sorted([TaggedVersion(1, 2, 0), Version(1, 1, 9)])[0] == Version(1, 1, 9)

