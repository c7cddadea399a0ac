"""Where a stage's own time goes (``bench/trial_breakdown.py``, docs/benchmarks.md).

Named spans around the layers of a stage (snapshot restore, leak check, guard, pytest, ...). They
cost nothing unless ``SPECSNAP_SPANS`` names a file: then each span's *exclusive* time (its own,
less the spans inside it) is summed by name, and at exit the process appends one JSON line
``{"argv": [...], "spans": {name: seconds}, "counts": {name: n}}`` to that file. Exclusive times
add up: their sum is the time the process spent inside any span, with no layer counted twice. Only
the main thread's spans count (another thread's work, such as the cleave watcher's git calls during
the agent's run, happens inside one of them).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

ENV = "SPECSNAP_SPANS"

_totals: defaultdict[str, float] = defaultdict(float)
_counts: defaultdict[str, int] = defaultdict(int)
_stack: list[list[float]] = []  # [started, time spent in spans inside it]
_target: str | None = None

F = TypeVar("F", bound=Callable)


@contextmanager
def span(name: str) -> Iterator[None]:
    """Time the block as layer ``name`` (exclusive of any span opened inside it)."""
    if _target is None or threading.current_thread() is not threading.main_thread():
        yield  # (a thread's work, such as the cleave watcher's, is inside the main thread's span)
        return
    frame = [time.perf_counter(), 0.0]
    _stack.append(frame)
    try:
        yield
    finally:
        _stack.pop()
        elapsed = time.perf_counter() - frame[0]
        _totals[name] += elapsed - frame[1]
        _counts[name] += 1
        if _stack:
            _stack[-1][1] += elapsed


def timed(name: str) -> Callable[[F], F]:
    """``span`` as a decorator."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with span(name):
                return fn(*args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap


def _dump() -> None:
    if _target is None or not _totals:
        return
    line = json.dumps({"argv": sys.argv[1:], "spans": {k: round(v, 6) for k, v in _totals.items()},
                       "counts": dict(_counts)})
    # one short append per process: O_APPEND keeps concurrent writers' lines whole
    fd = os.open(_target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def configure() -> None:
    """Read ``SPECSNAP_SPANS`` (at import, and again in a job a warm server forked: sdcs_bench.warm),
    starting from no spans."""
    global _target
    _target = os.environ.get(ENV) or None
    _totals.clear()
    _counts.clear()
    _stack.clear()


configure()
atexit.register(_dump)
