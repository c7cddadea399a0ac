# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
from itertools import combinations_with_replacement

import pytest

import more_itertools as mi


def test_r_larger_than_the_pool():
    expected = list(combinations_with_replacement('abc', 5))
    got = [mi.nth_combination_with_replacement('abc', 5, i) for i in range(len(expected))]
    assert got == expected
    assert mi.nth_combination_with_replacement('ab', 4, -1) == ('b', 'b', 'b', 'b')
    with pytest.raises(IndexError):
        mi.nth_combination_with_replacement('abc', 5, len(expected))


def test_an_empty_pool_has_no_item_to_repeat():
    with pytest.raises(IndexError):
        mi.nth_combination_with_replacement([], 2, 0)
