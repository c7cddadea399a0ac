"""How long a new user waits for the smoke leaderboard: `snakemake --cores 2` from scratch.

    python bench/smoke_study.py [--cores 2]

Runs the default study in a fresh directory and prints the wall time, then the time per
rule taken from Snakemake's own `benchmark:` files (target: leaderboard within 10 minutes).
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(Path(tmp) / "work")}
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", tmp,
             "--cores", str(args.cores)], capture_output=True, text=True, env=env,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(proc.stdout[-3000:] + proc.stderr[-3000:])
        study = Path(tmp) / "results" / "smoke"
        rows = []
        for tsv in (study / "benchmarks").rglob("*.tsv"):
            rule = tsv.parent.name if tsv.parent.name != "benchmarks" else tsv.stem
            rows.append({"rule": rule, "s": pd.read_csv(tsv, sep="\t")["s"].iloc[0]})
        trials = len(pd.read_csv(study / "scorecards.csv"))
    per_rule = pd.DataFrame(rows).groupby("rule")["s"].agg(["count", "mean", "sum"]).round(2)
    print(f"smoke study: {trials} trials, snakemake --cores {args.cores}: {wall:.1f} s wall ({wall / 60:.1f} min)")
    print(per_rule.to_string())


if __name__ == "__main__":
    main()
