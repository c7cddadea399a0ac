# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


@pytest.mark.parametrize(
    "first,second",
    [
        (Version(3, 1, 4, prerelease=""), Version(3, 1, 4)),
        (Version(0, 2, 0, prerelease="\u0665"), Version(0, 2, 0, prerelease="5")),
        (
            Version(9, 9, 9, prerelease="beta.\u0968.x"),
            Version(9, 9, 9, prerelease="beta.2.x"),
        ),
    ],
)
def test_versions_that_compare_equal_hash_equal(first, second):
    assert (first == second) == True
    assert (hash(first) == hash(second)) == True
    assert len({first, second}) == 1
    assert {first: "hit"}.get(second) == "hit"


def test_hash_still_separates_different_prereleases_and_ignores_build():
    assert len({Version(1, 0, 0, prerelease=""), Version(1, 0, 0, build="b")}) == 1
    assert len({Version(1, 0, 0, prerelease="rc.1"), Version(1, 0, 0, prerelease="rc.2")}) == 2
