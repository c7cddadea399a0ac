# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
import pytest

import more_itertools as mi


def test_negative_n_raises_for_sized_iterables():
    for iterable in ('ABCDEFG', [1, 2, 3], range(10), {1: 2}):
        with pytest.raises(ValueError):
            list(mi.tail(-1, iterable))
    with pytest.raises(ValueError):
        list(mi.tail(-3, iter('ABC')))
    assert list(mi.tail(0, 'ABC')) == []
    assert list(mi.tail(2, 'ABC')) == ['B', 'C']
