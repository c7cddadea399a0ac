"""What model calls cost (docs/cost.md): the price table of ``conf/prices.yaml``, as planned.

Every answered call the proxy ledgers carries its model and its tokens as disjoint components
(:class:`~sdcs_bench.core.tokens.TokenUsage`); its cost is each component times its price per
million tokens (reasoning tokens at the output price), at the long-context prices when the call's
input exceeds the model's threshold. An Anthropic cache write is a 5-minute write unless the usage
carries Anthropic's ``cache_creation`` breakdown, whose ``ephemeral_1h_input_tokens`` are priced at
the 1-hour write price (``cache_write_1h``). A call whose model has no price has **no** cost (None),
never 0: its tokens are still counted, and every sum it enters is unknown too (:func:`add`).

A model is found by its name as the ledger carries it, then by its base name: a provider prefix
(``openai/``, ``models/``, Bedrock's ``anthropic.``), a Vertex ``@date``, a dated snapshot
(``-20250929``, ``-2025-08-07``) and a Bedrock ``-v1:0`` taken off (:func:`base_name`).

What was *paid* is another matter (:func:`ledger_spend`): a call a replay proxy answered (ledger
``mode: replay``) came from a script; nothing was paid for it, so it spends $0. Its tokens at the
list prices are a *hypothetical* figure, reported as such, never as spend.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import math
import re
from dataclasses import dataclass
from typing import Any

from sdcs_bench.core.errors import SpecSnapError

KINDS = ("uncached_input", "cache_read", "cache_write", "output")
PER = 1_000_000
# Anthropic's usage breakdown of a call's cache writes by the cache's lifetime.
CACHE_CREATION = "cache_creation"
WRITE_5M, WRITE_1H = "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"


def _count(value: Any) -> float:
    """A token count as given (a pilot's mean may be fractional); 0 for none, a negative or a non-number."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def cache_writes(usage: dict[str, Any]) -> tuple[float, float]:
    """A call's cache writes as (5-minute, 1-hour) tokens. With Anthropic's ``cache_creation``
    breakdown the 1-hour writes are its ``ephemeral_1h_input_tokens`` (else a flat
    ``cache_write_1h``, the part of ``cache_write`` written for an hour, where a ledger keeps it so),
    and the rest of ``cache_write`` (at least the breakdown's own sum) are 5-minute writes; with
    neither, every write is a 5-minute one."""
    total = _count(usage.get("cache_write"))
    breakdown = usage.get(CACHE_CREATION)
    if isinstance(breakdown, dict):
        five, hour = _count(breakdown.get(WRITE_5M)), _count(breakdown.get(WRITE_1H))
    else:
        five, hour = 0, _count(usage.get("cache_write_1h"))
    total = max(total, five + hour)
    return total - hour, hour


def usage_tokens(usage: dict[str, Any] | None) -> float:
    """Every token of a call's usage (its cache writes counted once, breakdown or not)."""
    if not usage:
        return 0
    five, hour = cache_writes(usage)
    return sum(_count(usage.get(k)) for k in ("uncached_input", "cache_read", "output", "reasoning")) + five + hour


def _price(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True)
class Rates:
    uncached_input: float
    cache_read: float
    cache_write: float
    output: float
    cache_write_1h: float | None = None  # a 1-hour cache write (Anthropic: 2x input); None: at cache_write

    @classmethod
    def parse(cls, name: str, data: dict[str, Any]) -> Rates:
        missing = [k for k in KINDS if _price(data, k) is None]
        if "cache_write_1h" in data and _price(data, "cache_write_1h") is None:
            missing.append("cache_write_1h")
        if missing:
            raise SpecSnapError(f"prices: model {name!r} needs a price (a number >= 0) for {', '.join(missing)}; "
                                f"every model gives {', '.join(KINDS)} per million tokens (and may give "
                                "cache_write_1h, a 1-hour cache write)")
        return cls(*(float(data[k]) for k in KINDS), cache_write_1h=_price(data, "cache_write_1h"))

    @property
    def write_1h(self) -> float:
        return self.cache_write if self.cache_write_1h is None else self.cache_write_1h

    def cost(self, usage: dict[str, Any]) -> float:
        five, hour = cache_writes(usage)
        return (_count(usage.get("uncached_input")) * self.uncached_input
                + _count(usage.get("cache_read")) * self.cache_read
                + five * self.cache_write + hour * self.write_1h
                + (_count(usage.get("output")) + _count(usage.get("reasoning"))) * self.output) / PER

    def to_dict(self) -> dict[str, float]:
        return {**{k: getattr(self, k) for k in KINDS},
                **({"cache_write_1h": self.cache_write_1h} if self.cache_write_1h is not None else {})}

    @property
    def cheapest(self) -> float:
        """The lowest price any token can have (a bound of a total whose split is unknown)."""
        return min(self.uncached_input, self.cache_read, self.cache_write, self.output)

    @property
    def dearest(self) -> float:
        return max(self.uncached_input, self.cache_read, self.cache_write, self.write_1h, self.output)


@dataclass(frozen=True)
class Price:
    model: str
    patterns: tuple[str, ...]
    rates: Rates
    source: str
    as_of: str
    long_above: int | None = None
    long_rates: Rates | None = None
    note: str = ""

    def cost(self, usage: dict[str, Any]) -> float:
        five, hour = cache_writes(usage)
        input_tokens = _count(usage.get("uncached_input")) + _count(usage.get("cache_read")) + five + hour
        rates = self.long_rates if self.long_rates and self.long_above is not None and input_tokens > self.long_above \
            else self.rates
        return rates.cost(usage)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "source": self.source, "as_of": self.as_of, **self.rates.to_dict()}


def base_name(model: str) -> str:
    """A model's name without what names its snapshot or its route: ``openai/gpt-5-2025-08-07`` ->
    ``gpt-5``, ``claude-sonnet-4-5@20250929`` and ``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``,
    ``us.anthropic.claude-haiku-4-5-20251001-v1:0`` -> ``claude-haiku-4-5``."""
    name = model.strip().rsplit("/", 1)[-1]  # a provider or API prefix: openai/, anthropic/, models/
    name = name.split("@", 1)[0]  # Vertex AI: claude-sonnet-4-5@20250929
    name = re.sub(r"^(?:[a-z]+\.)?anthropic\.", "", name)  # Bedrock: (us.)anthropic.claude-...
    name = re.sub(r"-v\d+:\d+$", "", name)  # Bedrock: ...-v1:0
    return re.sub(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$", "", name)  # a dated snapshot


def _date(name: str, value: Any) -> str:
    text = str(value).strip()
    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        raise SpecSnapError(f"prices: model {name!r} has as_of {text!r}, not a date (YYYY-MM-DD): the date its "
                            "prices were stated for") from None
    return text


@dataclass(frozen=True)
class PriceTable:
    prices: tuple[Price, ...] = ()

    @classmethod
    def parse(cls, data: dict[str, Any] | None) -> PriceTable:
        """The table of ``conf/prices.yaml`` (its ``models`` mapping), every entry checked: one clear
        error naming the model and what it lacks (a price, its source, its date)."""
        models = (data or {}).get("models") or {}
        if not isinstance(models, dict):
            raise SpecSnapError("prices: `models` is a mapping of model name -> prices (conf/prices.yaml)")
        out = []
        for name, entry in models.items():
            if not isinstance(entry, dict):
                raise SpecSnapError(f"prices: model {name!r} is {entry!r}, not a mapping of prices")
            rates = Rates.parse(name, entry)
            for key in ("source", "as_of"):
                if not str(entry.get(key) or "").strip():
                    raise SpecSnapError(f"prices: model {name!r} has no {key}: every price names where it was read "
                                        "and the date it was stated for")
            long = entry.get("long_context")
            if long is not None and (not isinstance(long, dict) or not isinstance(long.get("above_input_tokens"), int)
                                     or long["above_input_tokens"] <= 0):
                raise SpecSnapError(f"prices: model {name!r}: long_context needs above_input_tokens (a number of "
                                    "tokens > 0) and its prices")
            out.append(Price(str(name), tuple(str(p) for p in entry.get("match") or [name]), rates,
                             str(entry["source"]).strip(), _date(name, entry["as_of"]),
                             int(long["above_input_tokens"]) if long else None,
                             Rates.parse(f"{name} (long_context)", long) if long else None,
                             str(entry.get("note") or "")))
        return cls(tuple(out))

    def to_dict(self) -> dict[str, Any]:
        return {"currency": "USD", "unit": "per million tokens", "models": {
            p.model: {"match": list(p.patterns), **p.rates.to_dict(), "source": p.source,
                      "as_of": p.as_of, **({"note": p.note} if p.note else {}),
                      **({"long_context": {"above_input_tokens": p.long_above, **p.long_rates.to_dict()}}
                         if p.long_rates else {})}
            for p in self.prices}}

    def find(self, model: str | None) -> Price | None:
        """The entry pricing ``model``: by its name as given, then by its :func:`base_name`; for each,
        an entry's own name or a literal name of its ``match`` first, then the first pattern that
        matches."""
        if not model or not str(model).strip():
            return None
        names = list(dict.fromkeys([str(model), base_name(str(model))]))
        for name in names:
            for price in self.prices:
                if name == price.model or name in price.patterns:
                    return price
            for price in self.prices:
                if any(fnmatch.fnmatchcase(name, pattern) for pattern in price.patterns):
                    return price
        return None

    def call_cost(self, model: str | None, usage: dict[str, Any] | None) -> float | None:
        """One ledgered call's cost at the list prices: 0 for a call that used no tokens (refused,
        failed), None when its model has no price."""
        if not usage_tokens(usage):
            return 0.0
        price = self.find(model)
        return price.cost(usage) if price else None


def row_cost(table: PriceTable, row: dict[str, Any]) -> float | None:
    """One ledger row's cost at the list prices: an answered model call (``generate``, HTTP 200)
    with no usage in its reply is unknown (None), never free; a refused or failed call used nothing.
    (A replayed call's figure is what it *would* cost: see :func:`replayed` and :func:`ledger_spend`.)"""
    usage = row.get("usage")
    if not usage and row.get("kind") == "generate" and row.get("status") == 200 and not row.get("refused"):
        return None
    return table.call_cost(row.get("model"), usage)


def replayed(row: dict[str, Any]) -> bool:
    """A call a replay proxy answered from its script: no provider was called, nothing was paid."""
    return row.get("mode") == "replay"


def row_spend(table: PriceTable, row: dict[str, Any]) -> float | None:
    """What one ledger row paid: $0 for a replayed call, else its cost (:func:`row_cost`)."""
    return 0.0 if replayed(row) else row_cost(table, row)


def add(*costs: float | None) -> float | None:
    """A sum of costs: unknown (None) as soon as one part is."""
    total = 0.0
    for cost in costs:
        if cost is None or (isinstance(cost, float) and math.isnan(cost)):
            return None
        total += cost
    return total


def ledger_cost(table: PriceTable, rows: list[dict[str, Any]]) -> tuple[float | None, int]:
    """A ledger's cost at the list prices (None when any answered call's model has no price) and the
    tokens of its calls that have none."""
    unpriced, costs = 0, []
    for row in rows:
        cost = row_cost(table, row)
        if cost is None:
            unpriced += int(usage_tokens(row.get("usage")))
        costs.append(cost)
    return add(*costs), unpriced


@dataclass(frozen=True)
class Spend:
    """What a ledger's calls paid, and what its replayed calls would have cost at list prices."""

    usd: float | None  # paid: None when a paid call's model has no price
    unpriced_tokens: int  # the tokens of paid calls no price covers
    replayed_calls: int = 0  # calls a replay proxy answered (paid nothing)
    hypothetical_list_usd: float | None = 0.0  # those calls at list prices: never paid; None if one has no price


def ledger_spend(table: PriceTable, rows: list[dict[str, Any]]) -> Spend:
    """A ledger's :class:`Spend`: its paid calls at their prices (as :func:`ledger_cost`), its
    replayed calls at $0, with their list-price equivalent apart."""
    paid = [r for r in rows if not replayed(r)]
    usd, unpriced = ledger_cost(table, paid)
    replay = [r for r in rows if replayed(r)]
    return Spend(usd, unpriced, sum(1 for r in replay if usage_tokens(r.get("usage"))),
                 ledger_cost(table, replay)[0])
