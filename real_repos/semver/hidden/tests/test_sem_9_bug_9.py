# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


@pytest.mark.parametrize(
    "start,part,expected",
    [
        ("4.1.9+ci.77", "patch", "4.1.10"),
        ("2.3.0+sha.1f2e", "minor", "2.4.0"),
        ("6.0.0+nightly", "major", "7.0.0"),
        ("0.0.0+b", "patch", "0.0.1"),
    ],
)
def test_next_version_of_build_only_version_moves_forward(start, part, expected):
    original = Version.parse(start)
    following = original.next_version(part)
    assert str(following) == expected
    assert (following > original) == True


def test_next_version_with_prerelease_and_build_still_finalizes():
    assert str(Version.parse("4.1.9+ci.77").next_version("patch")) == "4.1.10"
    assert str(Version.parse("4.1.9-rc.2+ci.77").next_version("patch")) == "4.1.9"
