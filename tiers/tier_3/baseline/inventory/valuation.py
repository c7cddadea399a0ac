"""Cost layers and first-in, first-out consumption."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CostLayer", "fifo_consume", "layers_value"]


@dataclass(frozen=True)
class CostLayer:
    quantity: int
    unit_cost_cents: int


def layers_value(layers: list[CostLayer]) -> int:
    """Total cost of everything still held in ``layers``."""
    return sum(layer.quantity * layer.unit_cost_cents for layer in layers)


def fifo_consume(layers: list[CostLayer], quantity: int) -> tuple[int, list[CostLayer]]:
    """Take ``quantity`` units oldest layer first: ``(cost, remaining layers)``."""
    if quantity > sum(layer.quantity for layer in layers):
        raise ValueError("fifo_consume: not enough units")
    cost = 0
    remaining: list[CostLayer] = []
    for layer in layers:
        take = min(quantity, layer.quantity)
        cost += take * layer.unit_cost_cents
        quantity -= take
        if layer.quantity > take:
            remaining.append(CostLayer(layer.quantity - take, layer.unit_cost_cents))
    return cost, remaining
