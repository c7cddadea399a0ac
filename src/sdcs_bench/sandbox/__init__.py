"""Sandbox backends behind one interface (docs/architecture.md): bwrap (default), docker (images
from ``containers/``), local (development only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import unknown
from sdcs_bench.sandbox.base import Backend, SandboxLeak
from sdcs_bench.sandbox.bwrap import BwrapBackend
from sdcs_bench.sandbox.limits import Limits
from sdcs_bench.sandbox.local import LocalBackend

BACKEND_NAMES = ("bwrap", "docker", "local")
CHOICES = ("auto", *BACKEND_NAMES)


def backend_class(name: str) -> type[Backend]:
    """A backend's class (the docker backend's module, with its image records, is loaded only when
    it is asked for: every stage job imports this package)."""
    if name == "docker":
        from sdcs_bench.sandbox.container import DockerBackend

        return DockerBackend
    return {"bwrap": BwrapBackend, "local": LocalBackend}[name]


def resolve_backend_name(name: str) -> str:
    if name not in CHOICES:
        raise unknown("sandbox backend", name, CHOICES)
    if name == "auto":
        return "bwrap" if BwrapBackend.available() else "local"
    return name


def make_backend(name: str = "auto", options: dict[str, Any] | None = None) -> Backend:
    """A backend; ``options`` are its settings from the trial: ``limits`` (``sandbox.limits``, every
    backend) and the backend's own (docker: ``image_record``, the image record its rule wrote)."""
    name = resolve_backend_name(name)
    backend_cls = backend_class(name)
    options = dict(options or {})
    limits = Limits.from_config(options.pop("limits", None))
    if name == "docker":  # says itself why it cannot run (no engine, image not built)
        record = options.pop("image_record", None)
        return backend_cls(Path(record) if record else None, limits)
    if not backend_cls.available():
        raise unknown("available sandbox backend", name, [n for n in BACKEND_NAMES if backend_class(n).available()])
    return backend_cls(limits)


__all__ = ["BACKEND_NAMES", "CHOICES", "Backend", "SandboxLeak", "backend_class", "make_backend", "resolve_backend_name"]
