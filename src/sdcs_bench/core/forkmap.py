"""One function over many items, side by side in forked worker processes, for a job given more than
one core (the aggregate's plots, the report's trial pages).

The function and the items are inherited by the fork, never pickled: a worker is told an index and
sends back only its result. With one worker (a job given one thread) everything runs here, in
order; either way the results come back in the items' order, so what is written does not depend on
how many workers wrote it.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Sequence

MAX_WORKERS = 4
_PENDING: dict[int, tuple] = {}  # (function, items) of each map in flight, by its key, for its forked workers


def workers() -> int:
    """How many workers a job may use: its threads as Snakemake gives them (``OMP_NUM_THREADS``),
    else this machine's cores, at most :data:`MAX_WORKERS`."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(MAX_WORKERS, int(given) if given.isdigit() else len(os.sched_getaffinity(0))))


def _call(key: int, index: int) -> Any:
    fn, items = _PENDING[key]
    return fn(items[index])


def fork_map(fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
    """``fn(item)`` for each item, yielded in order (as each is ready, the earlier ones first)."""
    count = min(workers(), len(items))
    if count < 2:
        yield from map(fn, items)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    key = max(_PENDING, default=0) + 1
    _PENDING[key] = (fn, items)
    try:
        with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
            yield from pool.map(_call, [key] * len(items), range(len(items)))
    finally:
        del _PENDING[key]
