"""Agents: a harness (how to run it) plus its settings. One small adapter per harness."""

from __future__ import annotations

from typing import Any

from ..errors import unknown
from .base import Harness, Invocation, SessionContext
from .reference import ReferenceHarness

HARNESSES: dict[str, type[Harness]] = {ReferenceHarness.name: ReferenceHarness}


def make_harness(agent_cfg: dict[str, Any]) -> Harness:
    kind = agent_cfg.get("harness")
    if kind not in HARNESSES:
        raise unknown(f"harness of agent {agent_cfg.get('name')!r}:", str(kind), HARNESSES)
    return HARNESSES[kind](agent_cfg)


__all__ = ["HARNESSES", "Harness", "Invocation", "SessionContext", "make_harness"]
