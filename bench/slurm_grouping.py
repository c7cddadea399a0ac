"""What grouping a trial's stages into one cluster job buys: a small study through
`--profile workflow/profiles/slurm` on the local one-node cluster, with the profile's groups (one
sbatch job per trial) and without them (one sbatch job per stage), side by side in one run.

    python bench/slurm_grouping.py [--agents ref_oracle,ref_null] [--arms Vanilla,State_MD_Only]

Needs root and slurm-wlm + munge; starts the cluster with cluster/slurm-local.sh (and stops it
after, unless it was already running). Prints each run's wall time, its number of sbatch jobs and
the ratio; the leaderboards of both runs must be equal.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "cluster" / "slurm-local.sh"
PROFILE = ROOT / "workflow" / "profiles" / "slurm"


def run_study(workdir: Path, profile: Path, flags: list[str], overrides: str) -> tuple[float, int]:
    env = {**os.environ, "SPECSNAP_WORK_ROOT": str(workdir / "work")}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
         "--profile", str(profile), *flags, "--config", "name=bench", overrides],
        capture_output=True, text=True, env=env,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(proc.stdout[-3000:] + proc.stderr[-3000:])
    return wall, len(re.findall(r"submitted with SLURM jobid", proc.stdout + proc.stderr))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="ref_oracle,ref_null")
    parser.add_argument("--arms", default="Vanilla,State_MD_Only")
    args = parser.parse_args()
    overrides = f'overrides=["agent=[{args.agents}]","arm=[{args.arms}]","variant=[none]"]'
    was_running = subprocess.run([str(SCRIPT), "status"], capture_output=True).returncode == 0
    started = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True)
    if started.returncode != 0:
        sys.exit(started.stderr)
    try:
        flags = subprocess.run([str(SCRIPT), "flags"], capture_output=True, text=True).stdout.split()
        with tempfile.TemporaryDirectory() as tmp:
            ungrouped = Path(tmp) / "profile-ungrouped"
            ungrouped.mkdir()
            settings = yaml.safe_load((PROFILE / "config.yaml").read_text())
            for key in ("groups", "group-components"):
                settings.pop(key)
            (ungrouped / "config.yaml").write_text(yaml.safe_dump(settings))
            results = {}
            for label, profile in (("grouped (one job per trial)", PROFILE), ("ungrouped (one job per stage)", ungrouped)):
                workdir = Path(tmp) / label.split()[0]
                workdir.mkdir()
                wall, jobs = run_study(workdir, profile, flags, overrides)
                board = pd.read_csv(workdir / "results" / "bench" / "leaderboard.csv")
                results[label] = (wall, jobs, board)
        (g_wall, g_jobs, g_board), (u_wall, u_jobs, u_board) = results.values()
        pd.testing.assert_frame_equal(g_board, u_board)
        trials = int(g_board.trials.sum())
        print(f"{trials} trials ({args.agents} x {args.arms}), local one-node cluster, {os.cpu_count()} CPUs")
        for label, (wall, jobs, _) in results.items():
            print(f"  {label:32s} {jobs:3d} sbatch jobs  {wall:6.1f} s wall")
        print(f"  ungrouped / grouped: {u_wall / g_wall:.2f}x the wall time, {u_jobs / g_jobs:.1f}x the jobs "
              f"(leaderboards equal)")
    finally:
        if not was_running:
            subprocess.run([str(SCRIPT), "stop"], capture_output=True)


if __name__ == "__main__":
    main()
