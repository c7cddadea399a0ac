from datetime import date

import pytest

from inventory.catalog import Catalog, Item
from inventory.stock import InsufficientStock, StockBook
from inventory.valuation import CostLayer, fifo_consume
from ledger.accounts import Account, Chart
from ledger.journal import Entry, Journal, Line, PostingError
from ledger.money import format_cents, parse_cents, split_evenly


def _chart() -> Chart:
    return Chart([Account("1000", "Cash", "asset"), Account("4000", "Sales", "revenue")])


def test_money_round_trip():
    assert parse_cents("1,204.5") == 120_450
    assert format_cents(-120_450) == "-1,204.50"
    assert split_evenly(100, 3) == [34, 33, 33]


def test_journal_posts_balanced_entries_only():
    journal = Journal(_chart())
    journal.post(Entry("J1", date(2024, 3, 1), "sale", (Line("1000", 500), Line("4000", -500))))
    assert journal.balance("1000") == 500
    with pytest.raises(PostingError):
        journal.post(Entry("J2", date(2024, 3, 2), "bad", (Line("1000", 5), Line("4000", -4))))


def test_stock_receive_and_issue():
    book = StockBook(Catalog([Item("BOLT", "Bolt M8", 12, 20)]))
    book.receive("BOLT", 10)
    book.issue("BOLT", 4)
    assert book.on_hand("BOLT") == 6
    with pytest.raises(InsufficientStock):
        book.issue("BOLT", 7)


def test_fifo_consumes_oldest_layer_first():
    cost, rest = fifo_consume([CostLayer(5, 100), CostLayer(5, 120)], 7)
    assert cost == 740
    assert rest == [CostLayer(3, 120)]
