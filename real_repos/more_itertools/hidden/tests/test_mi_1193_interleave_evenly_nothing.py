# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
import more_itertools as mi


def test_no_iterables():
    assert list(mi.interleave_evenly([])) == []
    assert list(mi.interleave_evenly([], lengths=[])) == []
    assert list(mi.interleave_evenly([[1, 2, 3, 4, 5], 'ab'])) == [1, 2, 'a', 3, 4, 'b', 5]
