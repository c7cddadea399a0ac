# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
import pytest

import more_itertools as mi


def test_negative_n_is_false_for_any_iterable():
    assert not mi.exactly_n([], -10)
    assert not mi.exactly_n([True, True, True], -2)
    assert not mi.exactly_n(range(8), -5, lambda x: x % 2)
    assert not mi.exactly_n([], -1)
    assert mi.exactly_n([0, 1, 1], 2)
