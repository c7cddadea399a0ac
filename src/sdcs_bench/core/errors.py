"""The one error type users see: a precise message, optionally with the valid choices."""

from __future__ import annotations

from collections.abc import Iterable


class SpecSnapError(Exception):
    """Bad input or a broken precondition, reported before any work starts (exit code 2)."""

    def __init__(self, message: str, choices: Iterable[str] | None = None) -> None:
        self.message = message
        self.choices = sorted(choices) if choices is not None else None
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.choices is None:
            return self.message
        valid = ", ".join(self.choices) if self.choices else "(none)"
        return f"{self.message}; valid choices: {valid}"


def unknown(kind: str, name: str, choices: Iterable[str]) -> SpecSnapError:
    return SpecSnapError(f"unknown {kind} {name!r}", choices)


def one_line(exc: BaseException) -> str:
    """A library's multi-line message (Hydra, OmegaConf, YAML) as one line, without key dumps."""
    text = str(exc) + (f"\n{exc.__cause__}" if exc.__cause__ is not None else "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("full_key", "object_type", "reference_type", "See https"))]
    return "; ".join(lines) or type(exc).__name__
