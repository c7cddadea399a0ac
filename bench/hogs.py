"""A machine under load, bounded: CPU hogs (one busy loop per core) and an I/O hog (a writer that
rewrites 8 files of 8 MiB in turn, each write forced to the disk), started and stopped together.

    with Hogs(cpu=2, io_dir=Path(tmp)) as hogs:
        ...                      # the work to run under load
    print(hogs.summary())        # what the hogs did meanwhile (CPU seconds, MiB written)

The I/O hog's files never exceed 64 MiB; every process is killed and waited for on leaving, whatever
happened inside. Used by bench/loaded_study.py and the stress tests (tests/test_cleave_stress.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CPU_HOG = "while True: pass"
IO_HOG = """
import os, sys
where = sys.argv[1]
os.makedirs(where, exist_ok=True)
block = os.urandom(1 << 20)
i = 0
while True:
    with open(os.path.join(where, str(i % 8)), "wb") as fh:
        fh.write(block * 8)
        fh.flush()
        os.fsync(fh.fileno())
    i += 1
"""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


class Hogs:
    """``cpu`` busy loops and, with ``io_dir``, one disk writer there, for the length of a ``with``."""

    def __init__(self, cpu: int = os.cpu_count() or 2, io_dir: Path | None = None):
        self.cpu, self.io_dir = cpu, io_dir
        self.procs: list[subprocess.Popen] = []
        self.cpu_s = 0.0
        self.written = 0

    def __enter__(self) -> Hogs:
        self.procs = [subprocess.Popen([sys.executable, "-c", CPU_HOG]) for _ in range(self.cpu)]
        if self.io_dir is not None:
            self.procs.append(subprocess.Popen([sys.executable, "-c", IO_HOG, str(self.io_dir)]))
        return self

    def __exit__(self, *exc) -> None:
        for i, proc in enumerate(self.procs):
            try:
                if i < self.cpu:
                    self.cpu_s += _cpu_seconds(proc.pid)
                else:
                    self.written += _written(proc.pid)
            except (OSError, IndexError, ValueError):
                pass
            proc.kill()
            proc.wait()
        if self.io_dir is not None:
            for name in map(str, range(8)):
                try:
                    (self.io_dir / name).unlink()
                except OSError:
                    pass

    def summary(self) -> str:
        io = f", the I/O hog wrote {self.written / (1 << 20):,.0f} MiB (fsync after every 8 MiB)" if self.io_dir else ""
        return f"{self.cpu} CPU hogs used {self.cpu_s:,.0f} s of CPU{io}"
