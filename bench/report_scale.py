"""The HTML report against the aggregate, on one study grown to many trials.

    python bench/report_scale.py [--copies 20] [--dir DIR]

Runs the default study (`snakemake --cores 2`) in a fresh directory (or reuses a finished DIR),
then makes a study of its 36 trials x --copies (each copy a new seed: the trial's records copied,
its scorecard's id and seed rewritten). On that study it times `specsnap aggregate` and
`specsnap report`, each in its own process, and prints their wall time, peak memory (max RSS) and
the report's size side by side, with the report's cost per trial and its ratio to the aggregate.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and this command's own peak RSS in MiB (its rusage, from wait4)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            out.seek(0)
            sys.exit(f"{' '.join(cmd)} failed:\n{out.read().decode(errors='replace')[-3000:]}")
    return wall, usage.ru_maxrss / 1024


def grow(src: Path, dst: Path, copies: int) -> int:
    """``dst``: the study ``src`` with every trial copied ``copies`` times under new seeds."""
    (dst / "plan" / "trials").mkdir(parents=True)
    with open(src / "plan" / "cells.tsv", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        fields, cells = reader.fieldnames, list(reader)
    rows = []
    for i in range(copies):
        for cell in cells:
            trial = cell["trial"].rsplit("__s", 1)[0] + f"__s{i}"
            shutil.copytree(src / "trials" / cell["trial"], dst / "trials" / trial)
            card_file = dst / "trials" / trial / "score" / "scorecard.json"
            card = json.loads(card_file.read_text())
            card.update(trial=trial, seed=i)
            card_file.write_text(json.dumps(card))
            shutil.copy(src / "plan" / "trials" / f"{cell['trial']}.json", dst / "plan" / "trials" / f"{trial}.json")
            rows.append({**cell, "trial": trial, "seed": str(i),
                         "config": cell["config"].replace(cell["trial"], trial)})
    with open(dst / "plan" / "cells.tsv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    shutil.copy(src / "plan" / "study.json", dst / "plan" / "study.json")
    return len(rows)


def size_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--dir", type=Path, help="run (or reuse) the smoke study here instead of a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = (args.dir or Path(tmp)).resolve()
        where.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(where / "work")}
        subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(where),
                        "--cores", "2", "-q"], cwd=where, env=env, check=True, capture_output=True)
        big = Path(tmp) / "grown"
        n = grow(where / "results" / "smoke", big, args.copies)
        cli = [sys.executable, "-m", "sdcs_bench.cli", "--root", str(ROOT)]
        agg_wall, agg_rss = run([*cli, "aggregate", "--run-dir", str(big)], where, env)
        rep_wall, rep_rss = run([*cli, "report", "--run-dir", str(big)], where, env)
        report_mib = size_mib(big / "report")
        trial_mib = size_mib(big / "trials")
    print(f"one study of {n} trials (the smoke study's 36 x {args.copies} seeds), on {os.cpu_count()} cores "
          f"(load average {os.getloadavg()[0]:.1f}):")
    print(f"{'':22}{'wall s':>9}{'ms/trial':>10}{'peak RSS MiB':>14}")
    print(f"{'specsnap aggregate':22}{agg_wall:>9.1f}{1000 * agg_wall / n:>10.1f}{agg_rss:>14.0f}")
    print(f"{'specsnap report':22}{rep_wall:>9.1f}{1000 * rep_wall / n:>10.1f}{rep_rss:>14.0f}")
    print(f"report / aggregate: {rep_wall / agg_wall:.2f}x the time; the report is {report_mib:.1f} MiB "
          f"for {trial_mib:.1f} MiB of trial records")


if __name__ == "__main__":
    main()
