"""Snakemake's own scheduling, where its defaults cost a study more than its jobs' work."""

from __future__ import annotations

from typing import Any

# Snakemake's default --max-jobs-per-timespan ("100/1s"): jobs, seconds
DEFAULT_RATE_LIMIT = (100, 1)


def drop_default_rate_limit(scheduler: Any) -> bool:
    """Switch off a Snakemake job scheduler's rate limiter when it is at its default (True when it did).

    From Snakemake 8.17 on, a scheduler with a rate limiter starts a timer thread after every
    scheduling round that, a timespan later, wakes it for another round, which starts another
    timer: every finished job adds a chain of rounds, each re-reading the inputs of every ready
    job. Any other limit (the command line's, a cluster profile's) is kept as given (the default
    itself, given by hand, cannot be told from the default); a Snakemake without the attribute is
    left alone."""
    limiter = getattr(scheduler, "job_rate_limiter", None)
    if limiter is None or (getattr(limiter, "max_jobs", None), getattr(limiter, "timespan", None)) != DEFAULT_RATE_LIMIT:
        return False
    scheduler.job_rate_limiter = None
    return True
