# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
from semver import Version

# Longer than CPython's default limit for int <-> str conversion (4300 digits).
NINES = "9" * 5000
TEN_POWER = "1" + "0" * 5000


def test_long_numeric_prerelease_identifiers_compare():
    small = Version(1, 0, 0, prerelease=NINES)
    big = Version(1, 0, 0, prerelease=TEN_POWER)
    assert (small < big) == True
    assert big.compare(small) == 1
    assert max([big, small]) is big


def test_long_numeric_identifier_equality_and_mixed_kinds():
    left = Version(3, 2, 1, prerelease="build." + "4" * 4400)
    right = Version(3, 2, 1, prerelease="build." + "4" * 4400)
    assert (left == right) == True
    # a numeric identifier always sorts below an alphanumeric one
    assert (Version(3, 2, 1, prerelease=NINES) < Version(3, 2, 1, prerelease="a")) == True
