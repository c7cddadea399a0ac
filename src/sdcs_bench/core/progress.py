"""Rich progress for long CLI work (validating a workload, installing harnesses, planning a large
grid, writing a report), on stderr. On a terminal it is a live bar (or a spinner when the total is
unknown); elsewhere (a log file, a pipe, a test) nothing animates and each described step is one
plain line, so logs keep what was done. The pipeline keeps Snakemake's own progress."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress(description: str, total: int | None = None, *, echo_steps: bool = True) -> Iterator[Callable[..., None]]:
    """Yield ``step(advance=1, description=None)``. ``total=None``: a spinner with elapsed time.
    ``echo_steps``: off a terminal, print each new description as a line."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn)

    console = Console(stderr=True)
    live = console.is_terminal
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    with Progress(*columns, TimeElapsedColumn(), console=console, disable=not live, transient=False) as bar:
        task = bar.add_task(description, total=total)

        def step(advance: int = 1, description: str | None = None) -> None:
            if description is not None:
                bar.update(task, description=description)
                if not live and echo_steps:
                    print(description, file=sys.stderr, flush=True)
            bar.update(task, advance=advance)

        yield step
