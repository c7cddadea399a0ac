"""A study from scratch, `snakemake --cores 2`, beside its floor measured in the same run.

    python bench/smoke_study.py [--study smoke] [--cores 2] [--no-floor | --floor-only] [--warm-cache] [--cold-jobs]
                               [--work-root DIR]

Runs the study in a fresh directory (every trial, the aggregate and the report) and prints its wall
time against its target (the smoke study: 45 s; specsnap_t1_t4: 25 min on 2 cores), the time per
rule from Snakemake's own `benchmark:` files, and the CPU time of Snakemake's main process. Then the
floor: the same DAG (every trial's stages chained as the study plans them, then one job gathering
them) in a trivial Snakefile whose every job starts an interpreter and exits, on the same cores: what
Snakemake and a process per job cost whatever SpecSnap does in them. From scratch means an empty
user's cache too (no tokenizer, token count or schema check kept from before), unless --warm-cache.
The stage jobs run warm, as a local run's do (docs/pipeline.md#warm-jobs; the script says how many
did), or each in an interpreter of its own with --cold-jobs (`warm_jobs=false`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TARGETS_S = {"smoke": 45.0, "specsnap_t1_t4": 25 * 60.0}

FLOOR_SNAKEFILE = """
import json
STAGES = json.load(open("stages.json"))
onstart:  # (as the real workflow does: Snakemake's default rate limiter off)
    from sdcs_bench.pipeline.scheduling import drop_default_rate_limit
    drop_default_rate_limit(getattr(workflow, "scheduler", None))
def previous(w):
    stages = STAGES[w.trial]
    i = stages.index(w.stage)
    return [] if i == 0 else [f"out/{w.trial}/{stages[i - 1]}"]
rule all:
    input: "out/aggregate"
rule aggregate:
    input: [f"out/{t}/{s[-1]}" for t, s in STAGES.items()]
    output: "out/aggregate"
    shell: "{PYTHON} -c pass && touch {output}"
rule stage:
    input: previous
    output: "out/{trial}/{stage}"
    shell: "{PYTHON} -c pass && touch {output}"
"""


def _main_cpu(proc: subprocess.Popen, out: list[float]) -> None:
    """Sample the CPU time of Snakemake's main process (its own, not its jobs') until it ends."""
    tick = os.sysconf("SC_CLK_TCK")
    while proc.poll() is None:
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            out.append((int(fields[11]) + int(fields[12])) / tick)
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.2)


def run_snakemake(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of Snakemake's main process)."""
    cpu: list[float] = []
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = threading.Thread(target=_main_cpu, args=(proc, cpu), daemon=True)
    sampler.start()
    output = proc.communicate()[0]
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(output[-5000:])
    sampler.join()
    return wall, (cpu[-1] if cpu else float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="smoke")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--no-floor", action="store_true", help="skip the trivial workflow of the same DAG")
    parser.add_argument("--floor-only", action="store_true", help="plan the study and run only its floor")
    parser.add_argument("--warm-cache", action="store_true",
                        help="use the user's cache (~/.cache/specsnap) instead of an empty one")
    parser.add_argument("--cold-jobs", action="store_true", help="every stage job in an interpreter of its own")
    parser.add_argument("--work-root", type=Path,
                        help="the live sandboxes and scoring copies here (SPECSNAP_WORK_ROOT; default: in the "
                             "study's temporary directory, beside its results), e.g. on a RAM-backed file system")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        work = args.work_root / f"smoke-study-{os.getpid()}" if args.work_root else tmp / "work"
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(work), "SPECSNAP_WARM_LOG": str(tmp / "warm.log")}
        if not args.warm_cache:  # from scratch: no tokenizer, count or schema check kept from before
            env["SPECSNAP_CACHE"] = str(tmp / "cache")
        study = tmp / "results" / args.study
        wall = main_cpu = float("nan")
        rows, cards, warm_jobs = [], None, 0
        if args.floor_only:
            subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--study", args.study, "--results",
                            str(tmp / "results")], cwd=ROOT, env=env, check=True, capture_output=True)
        else:
            wall, main_cpu = run_snakemake(["-s", str(ROOT / "Snakefile"), "--directory", str(tmp), "--cores",
                                            str(args.cores), "--config", f"study={args.study}",
                                            f"warm_jobs={str(not args.cold_jobs).lower()}"], ROOT, env)
            if args.work_root:  # (what the run left there: nothing, as a run leaves nothing in its work root)
                shutil.rmtree(work, ignore_errors=True)
            served = (tmp / "warm.log").read_text().splitlines() if (tmp / "warm.log").exists() else []
            warm_jobs = sum(line.startswith("warm ") for line in served)
            for tsv in (study / "benchmarks").rglob("*.tsv"):
                rule = tsv.parent.name if tsv.parent.name != "benchmarks" else tsv.stem
                rows.append({"rule": rule, "s": pd.read_csv(tsv, sep="\t")["s"].iloc[0]})
            cards = pd.read_csv(study / "scorecards.csv")
        stages = {p.stem: json.loads(p.read_text())["stages"] for p in (study / "plan" / "trials").glob("*.json")}
        floor = None
        if not args.no_floor:
            trivial = tmp / "floor"
            trivial.mkdir()
            (trivial / "stages.json").write_text(json.dumps(stages))
            (trivial / "Snakefile").write_text(FLOOR_SNAKEFILE.replace("{PYTHON}", sys.executable))
            floor, floor_cpu = run_snakemake(["-s", "Snakefile", "--cores", str(args.cores)], trivial, os.environ)
    jobs = sum(len(s) for s in stages.values()) + 2  # (+ the aggregate and the report)
    target = TARGETS_S.get(args.study)
    print(f"{args.study}: {len(stages)} trials, {jobs} jobs, snakemake --cores {args.cores}, "
          f"{'the user' + chr(39) + 's' if args.warm_cache else 'an empty'} cache")
    if cards is not None:
        print(f"  {wall:.1f} s wall ({wall / 60:.1f} min); Snakemake's main process {main_cpu:.1f} s CPU; "
              f"jobs run warm: {warm_jobs} of {jobs}")
        print(f"  reference trials on their closed forms: {int(cards['matches_expected'].fillna(True).sum())}"
              f"/{len(cards)}")
        if target is not None:
            print(f"  target: {target:.0f} s, ratio {wall / target:.2f}")
    if floor is not None:
        print(f"  floor (the same DAG, every job `python -c pass`): {floor:.1f} s wall, Snakemake's main process "
              f"{floor_cpu:.1f} s CPU" + ("" if cards is None else f"; ratio to it {wall / floor:.2f}"))
    print(f"  load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if rows:
        print(pd.DataFrame(rows).groupby("rule")["s"].agg(["count", "mean", "sum"]).round(2).to_string())
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"  CPU of everything this run started: {children.ru_utime + children.ru_stime:.1f} s")


if __name__ == "__main__":
    main()
