# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

from billing.charges import Charge


def _c(code, cents, y, m, d):
    return Charge("P1", code, cents, date(y, m, d))


def test_gaps_are_filled_with_zero():
    from reports.revenue import revenue_by_month

    charges = [_c("C100", 6_500, 2024, 4, 20), _c("C120", 4_000, 2024, 1, 5), _c("C100", 100, 2024, 1, 31)]
    assert revenue_by_month(charges) == [("2024-01", 4_100), ("2024-02", 0), ("2024-03", 0), ("2024-04", 6_500)]


def test_span_crosses_the_year_end():
    from reports.revenue import revenue_by_month

    charges = [_c("C100", 1, 2023, 11, 30), _c("C100", 2, 2024, 2, 1)]
    assert revenue_by_month(charges) == [("2023-11", 1), ("2023-12", 0), ("2024-01", 0), ("2024-02", 2)]


def test_codes_filter_also_sets_the_span():
    from reports.revenue import revenue_by_month

    charges = [_c("C100", 1, 2024, 1, 1), _c("V300", 5, 2024, 3, 1), _c("V300", 7, 2024, 4, 9), _c("C100", 1, 2024, 9, 1)]
    assert revenue_by_month(charges, codes={"V300", "P200"}) == [("2024-03", 5), ("2024-04", 7)]
    assert revenue_by_month(charges, codes=[]) == []


def test_no_charges_gives_empty_list():
    from reports.revenue import revenue_by_month

    assert revenue_by_month([]) == []


def test_codes_is_keyword_only():
    from reports.revenue import revenue_by_month

    with pytest.raises(TypeError):
        revenue_by_month([], {"C100"})
