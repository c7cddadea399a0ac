"""What model calls cost (docs/cost.md): the price table of ``conf/prices.yaml``, as planned.

Every answered call the proxy ledgers carries its model and its tokens as disjoint components
(:class:`~sdcs_bench.core.tokens.TokenUsage`); its cost is each component times its price per
million tokens (reasoning tokens at the output price), at the long-context prices when the call's
input exceeds the model's threshold. A call whose model has no price has **no** cost (None), never
0: its tokens are still counted, and every sum it enters is unknown too (:func:`add`).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any

from sdcs_bench.core.errors import SpecSnapError

KINDS = ("uncached_input", "cache_read", "cache_write", "output")
PER = 1_000_000


@dataclass(frozen=True)
class Rates:
    uncached_input: float
    cache_read: float
    cache_write: float
    output: float

    @classmethod
    def parse(cls, name: str, data: dict[str, Any]) -> Rates:
        missing = [k for k in KINDS if not isinstance(data.get(k), (int, float)) or data[k] < 0]
        if missing:
            raise SpecSnapError(f"prices: model {name!r} needs a price (a number >= 0) for {', '.join(missing)}; "
                                f"every model gives {', '.join(KINDS)} per million tokens")
        return cls(*(float(data[k]) for k in KINDS))

    def cost(self, usage: dict[str, Any]) -> float:
        tokens = {k: int(usage.get(k) or 0) for k in (*KINDS, "reasoning")}
        return (tokens["uncached_input"] * self.uncached_input + tokens["cache_read"] * self.cache_read
                + tokens["cache_write"] * self.cache_write + (tokens["output"] + tokens["reasoning"]) * self.output) / PER


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
        input_tokens = sum(int(usage.get(k) or 0) for k in ("uncached_input", "cache_read", "cache_write"))
        rates = self.long_rates if self.long_rates and self.long_above is not None and input_tokens > self.long_above \
            else self.rates
        return rates.cost(usage)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "source": self.source, "as_of": self.as_of,
                **{k: getattr(self.rates, k) for k in KINDS}}


@dataclass(frozen=True)
class PriceTable:
    prices: tuple[Price, ...] = ()

    @classmethod
    def parse(cls, data: dict[str, Any] | None) -> PriceTable:
        """The table of ``conf/prices.yaml`` (its ``models`` mapping), every entry checked: one clear
        error naming the model and what it lacks."""
        models = (data or {}).get("models") or {}
        if not isinstance(models, dict):
            raise SpecSnapError("prices: `models` is a mapping of model name -> prices (conf/prices.yaml)")
        out = []
        for name, entry in models.items():
            if not isinstance(entry, dict):
                raise SpecSnapError(f"prices: model {name!r} is {entry!r}, not a mapping of prices")
            for key in ("source", "as_of"):
                if not str(entry.get(key) or "").strip():
                    raise SpecSnapError(f"prices: model {name!r} has no {key}: every price names where it was read "
                                        "and the date it was stated for")
            long = entry.get("long_context")
            out.append(Price(str(name), tuple(str(p) for p in entry.get("match") or [name]), Rates.parse(name, entry),
                             str(entry["source"]), str(entry["as_of"]),
                             int(long["above_input_tokens"]) if long else None,
                             Rates.parse(f"{name} (long_context)", long) if long else None, str(entry.get("note") or "")))
        return cls(tuple(out))

    def to_dict(self) -> dict[str, Any]:
        return {"currency": "USD", "unit": "per million tokens", "models": {
            p.model: {"match": list(p.patterns), **{k: getattr(p.rates, k) for k in KINDS}, "source": p.source,
                      "as_of": p.as_of, **({"note": p.note} if p.note else {}),
                      **({"long_context": {"above_input_tokens": p.long_above,
                                           **{k: getattr(p.long_rates, k) for k in KINDS}}} if p.long_rates else {})}
            for p in self.prices}}

    def find(self, model: str | None) -> Price | None:
        """The entry pricing ``model`` (an exact name first, then the first pattern that matches)."""
        if not model:
            return None
        for price in self.prices:
            if model == price.model:
                return price
        for price in self.prices:
            if any(fnmatch.fnmatchcase(model, pattern) for pattern in price.patterns):
                return price
        return None

    def call_cost(self, model: str | None, usage: dict[str, Any] | None) -> float | None:
        """One ledgered call's cost: 0 for a call that used no tokens (refused, failed), None when
        its model has no price."""
        if not usage or not any(int(usage.get(k) or 0) for k in (*KINDS, "reasoning")):
            return 0.0
        price = self.find(model)
        return price.cost(usage) if price else None


def row_cost(table: PriceTable, row: dict[str, Any]) -> float | None:
    """One ledger row's cost: an answered model call (``generate``, HTTP 200) with no usage in its
    reply is unknown (None), never free; a refused or failed call used nothing."""
    usage = row.get("usage")
    if not usage and row.get("kind") == "generate" and row.get("status") == 200 and not row.get("refused"):
        return None
    return table.call_cost(row.get("model"), usage)


def add(*costs: float | None) -> float | None:
    """A sum of costs: unknown (None) as soon as one part is."""
    total = 0.0
    for cost in costs:
        if cost is None or (isinstance(cost, float) and math.isnan(cost)):
            return None
        total += cost
    return total


def ledger_cost(table: PriceTable, rows: list[dict[str, Any]]) -> tuple[float | None, int]:
    """A ledger's cost (None when any answered call's model has no price) and the tokens of its calls
    that have none."""
    unpriced, costs = 0, []
    for row in rows:
        cost = row_cost(table, row)
        if cost is None:
            unpriced += sum(int((row.get("usage") or {}).get(k) or 0) for k in (*KINDS, "reasoning"))
        costs.append(cost)
    return add(*costs), unpriced
