# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
import pytest

import more_itertools as mi


def test_negative_n_raises():
    for n in (-1, -2, -7):
        with pytest.raises(ValueError):
            list(mi.sliced('ABCDEFG', n))
        with pytest.raises(ValueError):
            list(mi.sliced([1, 2, 3, 4, 5], n, strict=True))
    assert list(mi.sliced('ABCDE', 2)) == ['AB', 'CD', 'E']
