"""Sandbox backends behind one interface (docs/architecture.md): bwrap (default), local (development only)."""

from __future__ import annotations

from sdcs_bench.core.errors import unknown
from sdcs_bench.sandbox.base import Backend, SandboxLeak
from sdcs_bench.sandbox.bwrap import BwrapBackend
from sdcs_bench.sandbox.local import LocalBackend

BACKENDS: dict[str, type[Backend]] = {"bwrap": BwrapBackend, "local": LocalBackend}
CHOICES = ("auto", *BACKENDS)


def resolve_backend_name(name: str) -> str:
    if name not in CHOICES:
        raise unknown("sandbox backend", name, CHOICES)
    if name == "auto":
        return "bwrap" if BwrapBackend.available() else "local"
    return name


def make_backend(name: str = "auto") -> Backend:
    name = resolve_backend_name(name)
    backend_cls = BACKENDS[name]
    if not backend_cls.available():
        raise unknown("available sandbox backend", name, [n for n, c in BACKENDS.items() if c.available()])
    return backend_cls()


__all__ = ["BACKENDS", "CHOICES", "Backend", "SandboxLeak", "make_backend", "resolve_backend_name"]
