# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
import more_itertools as mi


def test_reversed_empty_ranges():
    assert list(reversed(mi.numeric_range(0))) == []
    assert list(reversed(mi.numeric_range(5, 1))) == []
    assert list(reversed(mi.numeric_range(1.0, 1.0, 0.5))) == []
    assert list(reversed(mi.numeric_range(3, 0, -1))) == [1, 2, 3]
