"""``python -m sdcs_bench.cli``: the ``specsnap`` command line's typer app."""

from sdcs_bench.cli import main

main()
