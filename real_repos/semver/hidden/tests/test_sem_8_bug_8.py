# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


@pytest.mark.parametrize(
    "start,expected",
    [
        ("1.2.3-rc9", "1.2.4-rc10"),
        ("0.4.0-beta9", "0.4.1-beta10"),
        ("3.0.0-b99", "3.0.1-b100"),
    ],
)
def test_next_prerelease_never_goes_backwards(start, expected):
    original = Version.parse(start)
    following = original.next_version("prerelease")
    assert str(following) == expected
    assert (following > original) == True


def test_next_prerelease_keeps_patch_when_counter_still_sorts_higher():
    assert str(Version.parse("2.0.0-rc3").next_version("prerelease")) == "2.0.0-rc4"
    assert str(Version.parse("1.0.0-alpha.9").next_version("prerelease")) == "1.0.0-alpha.10"
    assert str(Version.parse("7.7.7-dev9").next_version("prerelease")) == "7.7.8-dev10"
