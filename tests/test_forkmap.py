"""core/forkmap.py: one function over many items in forked workers, as many as the job's threads."""

from __future__ import annotations

import os

from sdcs_bench.core.forkmap import MAX_WORKERS, fork_map, workers


def test_items_go_to_forked_workers_and_come_back_in_order(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    here = os.getpid()
    local = {"offset": 10}  # (a closure over this process's data: inherited by the fork, not pickled)
    results = list(fork_map(lambda i: (i + local["offset"], os.getpid()), list(range(12))))
    assert [value for value, _ in results] == list(range(10, 22))
    assert here not in {pid for _, pid in results}


def test_one_thread_runs_everything_here(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert list(fork_map(lambda i: (i, os.getpid()), [1, 2])) == [(1, os.getpid()), (2, os.getpid())]


def test_a_failure_in_a_worker_is_raised_here(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")

    def boom(i):
        if i == 3:
            raise ValueError("item 3")
        return i

    try:
        list(fork_map(boom, list(range(6))))
    except ValueError as exc:
        assert "item 3" in str(exc)
    else:
        raise AssertionError("the worker's failure was lost")


def test_how_many_workers(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert workers() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "64")
    assert workers() == MAX_WORKERS
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert 1 <= workers() <= MAX_WORKERS
