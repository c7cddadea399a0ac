# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
from unittest import mock

import more_itertools as mi


def test_an_item_equal_to_everything_does_not_hide_a_missing_one():
    assert not mi.iequals([], [mock.ANY])
    assert not mi.iequals([mock.ANY], [])
    assert not mi.iequals([1, 2], [1, 2, mock.ANY])
    assert not mi.iequals('ab', 'ab', ['a', 'b', mock.ANY])
    assert mi.iequals([1, mock.ANY], [1, 7])
    assert mi.iequals('abc', iter('abc'), ['a', 'b', 'c'])
