"""The ``specsnap`` program: a stage job (:mod:`sdcs_bench.jobs`) runs without loading the typer
app, in the run's warm server when there is one (:mod:`sdcs_bench.warm`, asked through
:mod:`sdcs_bench.warm_client`); every other command line goes to the typer app
(:mod:`sdcs_bench.cli`)."""

from __future__ import annotations

import sys


def main() -> None:
    from sdcs_bench.warm_client import delegate

    status = delegate(sys.argv)  # (None: no server, or it said no)
    if status is not None:
        sys.exit(status)
    from sdcs_bench import jobs

    args = jobs.parse(sys.argv[1:])
    if args is not None:
        jobs.run(args)
        return
    from sdcs_bench.cli import main as typer_main

    typer_main()


if __name__ == "__main__":
    main()
