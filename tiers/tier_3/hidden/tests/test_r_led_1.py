# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest


def test_remainders_go_to_largest_fractions():
    from ledger.money import allocate

    assert allocate(10, [1, 1, 1, 3]) == [2, 2, 1, 5]


def test_ties_go_to_earlier_positions():
    from ledger.money import allocate

    assert allocate(100, [1, 1, 1]) == [34, 33, 33]
    assert allocate(2, [1, 1, 1]) == [1, 1, 0]


def test_zero_weight_gets_nothing_and_sum_is_exact():
    from ledger.money import allocate

    shares = allocate(5, [0, 1, 1])
    assert shares == [0, 3, 2]
    assert sum(allocate(1_001, [7, 0, 13, 29])) == 1_001


def test_negative_total_rejected():
    from ledger.money import allocate

    with pytest.raises(ValueError) as err:
        allocate(-1, [1])
    assert str(err.value) == "allocate: negative total"


def test_bad_weights_rejected():
    from ledger.money import allocate

    for weights in ([0, 0], [], [-1, 2]):
        with pytest.raises(ValueError) as err:
            allocate(10, weights)
        assert str(err.value) == "allocate: weights must be non-negative with a positive sum"


def test_listed_in_all():
    import ledger.money

    assert "allocate" in ledger.money.__all__
