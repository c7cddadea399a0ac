"""Planning at scale: a ~10,000-trial grid planned and dry-run, against a trivial workflow of as
many trials x 4 chained stages dry-run on the same machine in the same run.

    python bench/plan_scale.py               # specsnap_t1_t4 with 16 seeds: 10,368 trials
    python bench/plan_scale.py --trials 1000 # fewer seeds for a quick look (2 seeds: 1,296 trials)

Left: `snakemake -n --config study=specsnap_t1_t4 'overrides=["seed=[0,...,N-1]"]'` in a fresh
directory, i.e. composing the plan (`plan/cells.tsv` + one trial file per trial) and building the
DAG. Right: a Snakefile this script writes, `rule all` over the same number of trials, each a
chain of four one-output rules, `snakemake -n`, run before and after the project's dry-runs (the
figure is their mean: the machine's load drifts). Both print their full dry-run to a file. Then
the same dry-run of the project again, with its plan already current (what a user's second `-n`
costs). Target: the first figure within 2x the trivial workflow's.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
STUDY = "specsnap_t1_t4"
TARGET = 2.0

TRIVIAL = '''TRIALS = [f"trial_{{i:05d}}" for i in range({n})]


rule all:
    input:
        expand("out/{{trial}}/d.txt", trial=TRIALS),


rule a:
    output:
        "out/{{trial}}/a.txt",
    shell:
        "echo a > {{output}}"


rule b:
    input:
        "out/{{trial}}/a.txt",
    output:
        "out/{{trial}}/b.txt",
    shell:
        "cat {{input}} > {{output}}"


rule c:
    input:
        "out/{{trial}}/b.txt",
    output:
        "out/{{trial}}/c.txt",
    shell:
        "cat {{input}} > {{output}}"


rule d:
    input:
        "out/{{trial}}/c.txt",
    output:
        "out/{{trial}}/d.txt",
    shell:
        "cat {{input}} > {{output}}"
'''


def grid_size() -> int:
    grid = yaml.safe_load((ROOT / "conf" / "study" / f"{STUDY}.yaml").read_text())["grid"]
    return math.prod(len(v) for k, v in grid.items() if k != "seed")


def dry_run(args: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, int]:
    """Wall seconds of one `snakemake -n` and the number of jobs it would run."""
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", *args], cwd=cwd, env=env, stdout=out,
                              stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    text = log.read_text()
    if proc.returncode != 0:
        sys.exit(f"snakemake -n failed in {cwd}:\n{text[-3000:]}")
    total = re.search(r"^total\s+(\d+)", text, re.MULTILINE)
    return wall, int(total.group(1)) if total else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--seeds", type=int, help=f"seeds of {STUDY} (default 16: 10,368 trials)")
    group.add_argument("--trials", type=int, help="about this many trials (rounded up to whole seeds)")
    args = parser.parse_args()
    per_seed = grid_size()
    seeds = args.seeds or (math.ceil(args.trials / per_seed) if args.trials else 16)
    overrides = f'overrides=["seed=[{",".join(map(str, range(seeds)))}]"]'
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        project, trivial = tmp / "project", tmp / "trivial"
        project.mkdir()
        trivial.mkdir()
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(tmp / "work")}
        snake = ["-s", str(ROOT / "Snakefile"), "--directory", str(project), "--config", f"study={STUDY}", overrides]
        trials = per_seed * seeds
        (trivial / "Snakefile").write_text(TRIVIAL.format(n=trials))
        # The trivial workflow before and after the project's two dry-runs: the machine's load drifts.
        base_1, base_jobs = dry_run([], trivial, env, tmp / "trivial-1.log")
        first, jobs = dry_run(snake, project, env, tmp / "project-1.log")
        cells = next((project / "results").glob(f"{STUDY}*/plan/cells.tsv"))  # results/<study>+<digest>/
        assert len(cells.read_text().splitlines()) - 1 == trials, "the plan holds another number of trials"
        again, _ = dry_run(snake, project, env, tmp / "project-2.log")
        base_2, _ = dry_run([], trivial, env, tmp / "trivial-2.log")
    base = (base_1 + base_2) / 2
    ratio = first / base
    print(f"{STUDY} x {seeds} seeds: {trials:,} trials; trivial workflow: {trials:,} trials x 4 stages")
    print(f"{'':34}{'project':>12}{'trivial':>12}{'ratio':>8}")
    print(f"{'jobs in the dry-run':34}{jobs:>12,}{base_jobs:>12,}")
    print(f"{'trivial: before, after (s)':34}{'':>12}{f'{base_1:.1f}, {base_2:.1f}':>12}")
    print(f"{'plan + snakemake -n (s)':34}{first:>12.1f}{base:>12.1f}{ratio:>8.2f}   target <= {TARGET:g}: "
          f"{'met' if ratio <= TARGET else 'NOT met'}")
    print(f"{'snakemake -n again, plan current (s)':34}{again:>12.1f}{base:>12.1f}{again / base:>8.2f}")


if __name__ == "__main__":
    main()
