# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
from datetime import datetime, timedelta
from fractions import Fraction

import more_itertools as mi

SLICES = [
    slice(None, None, -1),
    slice(None, None, -2),
    slice(3, None, -1),
    slice(None, 1, -1),
    slice(4, 0, -3),
    slice(-1, -4, -1),
    slice(10, None, -1),
    slice(None, -10, -1),
    slice(1, 4, -1),
    slice(1, 4, 2),
]


def test_reversing_slice():
    assert list(mi.numeric_range(0, 10, 2)[::-1]) == [8, 6, 4, 2, 0]
    assert list(mi.numeric_range(5, 0, -1)[::-2]) == [1, 3, 5]


def test_negative_step_slices_match_list_slices():
    ranges = [
        mi.numeric_range(0, 10, 2),
        mi.numeric_range(10, -3, -3),
        mi.numeric_range(Fraction(1), Fraction(6), Fraction(1, 2)),
        mi.numeric_range(datetime(2020, 1, 1), datetime(2020, 1, 3), timedelta(hours=7)),
    ]
    for r in ranges:
        for s in SLICES:
            assert list(r[s]) == list(r)[s], (r, s)
