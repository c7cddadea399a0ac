"""Tiny ``{name}`` message templates; ``{{`` and ``}}`` are literal braces."""

from __future__ import annotations

import re
from typing import Mapping

__all__ = ["render", "placeholders"]

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render(template: str, context: Mapping[str, object]) -> str:
    def substitute(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        if name not in context:
            raise KeyError(f"missing placeholder: {name}")
        return str(context[name])

    return _TOKEN.sub(substitute, template)


def placeholders(template: str) -> list[str]:
    """Names used by ``template``, once each, in order of first use."""
    names: list[str] = []
    for match in _TOKEN.finditer(template):
        name = match.group(1)
        if name and name not in names:
            names.append(name)
    return names
