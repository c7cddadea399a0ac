# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
import more_itertools as mi

DATA = 'AABCADEAF'  # 'A' at 0, 1, 4 and 7


def test_negative_start_on_an_iterator():
    assert list(mi.iter_index(iter(DATA), 'A', -3)) == [7]
    assert list(mi.iter_index(iter(DATA), 'A', -9)) == [0, 1, 4, 7]


def test_negative_bounds_match_the_sequence_path():
    bounds = [(0, -2), (-5, -1), (2, -3), (-1, None), (-20, None), (-4, 20), (-2, -5)]
    for start, stop in bounds:
        expected = list(mi.iter_index(DATA, 'A', start, stop))
        assert list(mi.iter_index(iter(DATA), 'A', start, stop)) == expected, (start, stop)
