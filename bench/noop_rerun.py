"""A no-op rerun of the finished smoke study, against `snakemake --version` on the same machine.

    python bench/noop_rerun.py [--repeat 5] [--dir DIR]

Runs the default study (`snakemake --cores 2`) to the end in a fresh directory (or in DIR, kept
afterwards: a finished DIR makes this quick), then times, alternately, `snakemake --version` and
the same `snakemake --cores 2` again, which must find nothing to do, --repeat times each. Prints
the medians side by side and their ratio (target: the rerun within 3x `snakemake --version`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 3.0


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return wall, proc.stdout + proc.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="run (or reuse) the study here instead of a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = (args.dir or Path(tmp)).resolve()
        where.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(where / "work")}
        study = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(where),
                 "--cores", "2"]
        first, _ = timed(study, where, env)
        version, rerun = [], []
        for _ in range(args.repeat):
            version.append(timed([sys.executable, "-m", "snakemake", "--version"], where, env)[0])
            wall, out = timed(study, where, env)
            if "Nothing to be done" not in out:
                sys.exit(f"the rerun was not a no-op:\n{out[-3000:]}")
            rerun.append(wall)
    v, r = statistics.median(version), statistics.median(rerun)
    print(f"smoke study to the end (snakemake --cores 2): {first:.1f} s; then {args.repeat} of each, alternately "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    print(f"{'':34}{'median s':>10}{'min s':>8}")
    print(f"{'snakemake --version':34}{v:>10.2f}{min(version):>8.2f}")
    print(f"{'no-op rerun (snakemake --cores 2)':34}{r:>10.2f}{min(rerun):>8.2f}")
    print(f"ratio {r / v:.2f} (target <= {TARGET:g}: {'met' if r / v <= TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
