"""The package's modules byte-compiled once per run, not once per job (docs/benchmarks.md#a-trials-own-overhead).

Every stage of every trial is a process of its own that imports about 75 of the package's modules.
Where Python does not write bytecode (``PYTHONDONTWRITEBYTECODE``, ``python -B``, a read-only
install), each such process compiled them all from source again: about 0.1 s a stage on 2 cores.
A run's main process writes the missing or stale ``.pyc`` files first; Python reads them whatever
that setting (it governs writing only), and checks each against its source as always.
"""

from __future__ import annotations

import compileall
from pathlib import Path


def compile_package() -> bool:
    """Byte-compile the installed ``sdcs_bench`` package (what is current is left alone). False when
    some file could not be written (a read-only install: each job then compiles in memory)."""
    package = Path(__file__).resolve().parents[1]
    try:
        return bool(compileall.compile_dir(package, quiet=2, workers=1))
    except OSError:
        return False
