# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


@pytest.mark.parametrize(
    "start,expected",
    [
        ("0.3.0-alpha", "0.3.0-alpha.0"),
        ("2.1.7-beta.preview", "2.1.7-beta.preview.0"),
        ("1.0.0-pre+exp.sha", "1.0.0-pre.0"),
    ],
)
def test_bump_prerelease_without_digits_moves_forward(start, expected):
    original = Version.parse(start)
    bumped = original.bump_prerelease()
    assert str(bumped) == expected
    assert (bumped > original) == True


def test_bump_prerelease_twice_from_word_only_prerelease():
    v = Version.parse("4.4.4-snapshot").bump_prerelease().bump_prerelease("ignored")
    assert str(v) == "4.4.4-snapshot.1"
