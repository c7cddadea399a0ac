"""The smoke study from scratch with `--cores 2` against `--cores 1`, on the same machine.

    python bench/cores.py

Runs the default study twice, each in a fresh directory: `snakemake --cores 1`, then
`snakemake --cores 2`. Prints both wall times side by side, the speed-up (target: --cores 2 at
least 1.7x faster), the sum of the jobs' own times (Snakemake's `benchmark:` files) and the
machine's load average before each run (other processes take cores from both runs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.7


def run_study(cores: int) -> tuple[float, float, int, float]:
    """Wall seconds, the jobs' summed seconds, the number of jobs, the load average before."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(Path(tmp) / "work")}
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", tmp,
                               "--cores", str(cores)], cwd=tmp, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(proc.stdout[-3000:] + proc.stderr[-3000:])
        tsvs = list((Path(tmp) / "results" / "smoke" / "benchmarks").rglob("*.tsv"))
        jobs = sum(pd.read_csv(tsv, sep="\t")["s"].iloc[0] for tsv in tsvs)
    return wall, jobs, len(tsvs), load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    one = run_study(1)
    two = run_study(2)
    print(f"smoke study from scratch, {one[2]} jobs, on {os.cpu_count()} cores")
    print(f"{'':28}{'--cores 1':>12}{'--cores 2':>12}")
    print(f"{'wall (s)':28}{one[0]:>12.1f}{two[0]:>12.1f}")
    label = "sum of the jobs' times (s)"
    print(f"{label:28}{one[1]:>12.1f}{two[1]:>12.1f}")
    label = "jobs' times / wall"
    print(f"{label:28}{one[1] / one[0]:>12.2f}{two[1] / two[0]:>12.2f}   (how many jobs ran at once, on average)")
    print(f"{'load average before':28}{one[3]:>12.1f}{two[3]:>12.1f}")
    speedup = one[0] / two[0]
    print(f"--cores 2 is {speedup:.2f}x faster (target >= {TARGET:g}: {'met' if speedup >= TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
