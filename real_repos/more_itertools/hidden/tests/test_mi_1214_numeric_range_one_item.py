# SPECSNAP-CANARY more_itertools 57b3f614-8d78-4576-92ca-7a8bbcf07445
import more_itertools as mi


def test_one_item_ranges_ignore_the_step():
    a, b = mi.numeric_range(2, 3, 1), mi.numeric_range(2, 3, 5)
    assert a == b
    assert hash(a) == hash(b)
    c, d = mi.numeric_range(5, 4, -1), mi.numeric_range(5, 6, 10)
    assert c == d
    assert hash(c) == hash(d)
    assert mi.numeric_range(1.0, 1.5, 1.5) == mi.numeric_range(1.0, 2.0, 4.0)
    assert mi.numeric_range(2, 3, 1) != mi.numeric_range(3, 4, 1)
    assert mi.numeric_range(2, 3, 1) != mi.numeric_range(2, 4, 1)
    assert mi.numeric_range(0, 6, 2) == mi.numeric_range(0, 5, 2)
