# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


@pytest.mark.parametrize(
    "start,expected",
    [
        ("5.0.2+nightly", "5.0.2+nightly.0"),
        ("0.9.0-rc.2+exp.sha", "0.9.0-rc.2+exp.sha.0"),
        ("1.1.1+linux-x", "1.1.1+linux-x.0"),
    ],
)
def test_bump_build_without_digits_changes_build(start, expected):
    original = Version.parse(start)
    bumped = original.bump_build()
    assert str(bumped) == expected
    assert (bumped.build != original.build) == True


def test_bump_build_word_only_then_numeric():
    v = Version.parse("2.2.2+ci").bump_build().bump_build()
    assert v.build == "ci.1"
