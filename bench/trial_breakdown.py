"""Where one reference trial's job time goes, layer by layer (docs/benchmarks.md).

    python bench/trial_breakdown.py [--trial ID] [--repeat 5] [--study smoke] [--cold]

Plans the study in a temporary directory, then runs one trial's stages exactly as the pipeline's
rules do (`specsnap scaffold-sandbox`, `run-session` for each session, `score`: one process per
stage, each from its predecessor's outputs), ``--repeat`` times, with ``SPECSNAP_SPANS`` set so
every process records the exclusive time of each named layer (``sdcs_bench/core/timing.py``).
The stages run warm, as a local run's jobs do (each `specsnap` hands its job to one server that
imported what the stages run: sdcs_bench/warm.py), or with ``--cold`` each in an interpreter of its
own. Prints the median of each layer per stage, the start-up each process pays before its first span
(interpreter and imports: its wall time less its spans), and the trial's job time beside its
target (2 s). Floors measured in the same run: an empty interpreter (`python -c pass`), the
sandbox's own start (`true` run in the sandbox backend the trial uses) and the time to create one
small file where the stages write (a snapshot restore creates about 120; on a virtual disk this
varies several-fold from hour to hour, and the restore and scaffold rows with it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 2.0
# the layers in the order a trial meets them (any other span is listed after these)
ORDER = ["start-up (interpreter, imports)", "imports", "workload load", "scaffold files", "git (host processes)",
         "snapshot restore", "leak check", "guard", "cleave bookkeeping", "cleave watcher", "agent process",
         "process cleanup", "session instruments",
         "redaction", "scoring copy", "sentinel planting", "test tree digest", "pytest (sandboxed)", "verdict stream",
         "boundary check", "closed form", "tokenizer load", "snapshot write", "record writing", "stage, other"]


def run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv[:3])} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return wall


def stage_commands(trial: dict, trial_file: Path, out: Path) -> list[tuple[str, list[str]]]:
    """The stages' command lines, as the rules write them (workflow/rules/*.smk)."""
    spec = [sys.executable, "-m", "sdcs_bench.entry"]  # the `specsnap` program
    stages = [("scaffold", [*spec, "scaffold-sandbox", "--trial", str(trial_file), "--stage-dir", str(out / "scaffold")])]
    prev = out / "scaffold"
    n = len(trial["schedule"])
    for k in range(1, n + 1):
        stages.append((f"session_{k}", [*spec, "run-session", "--trial", str(trial_file), "--session", str(k),
                                        "--from", str(prev), "--stage-dir", str(out / f"session_{k}")]))
        prev = out / f"session_{k}"
    records = [a for k in range(1, n + 1) for a in ("--session-record", str(out / f"session_{k}" / "stage.json"))]
    stages.append(("score", [*spec, "score", "--trial", str(trial_file), "--from", str(prev),
                             "--stage-dir", str(out / "score"), *records]))
    return stages


def floors(env: dict[str, str], backend: str, repeat: int) -> dict[str, float]:
    """An empty interpreter's start, and the sandbox's own start (``true`` in the backend)."""
    from sdcs_bench.sandbox import make_backend

    python = statistics.median(run([sys.executable, "-c", "pass"], env, ROOT) for _ in range(repeat))
    sandbox = make_backend(backend, {})
    with tempfile.TemporaryDirectory() as tmp:
        work, home = Path(tmp) / "w", Path(tmp) / "h"
        work.mkdir(), home.mkdir()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            sandbox.run(["true"], workdir=work, home=home, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                        timeout=60, network=False)
            times.append(time.perf_counter() - t0)
        # the file system the stages write to: snapshots, sandboxes and scoring copies are small files
        made = work / "files"
        made.mkdir()
        t0 = time.perf_counter()
        for i in range(200):
            (made / f"f{i}").write_bytes(b"x")
        per_file = (time.perf_counter() - t0) / 200
    return {"python -c pass": python, f"sandbox start ({sandbox.name}, `true`)": statistics.median(times),
            "creating one small file in the temporary directory": per_file}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="smoke")
    parser.add_argument("--trial", help="a trial id of the study (default: its first trial of two sessions)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the medians here")
    parser.add_argument("--cold", action="store_true", help="each stage in an interpreter of its own (warm_jobs=false)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    from sdcs_bench.core.bytecode import compile_package

    compile_package()  # as a run's main process does before its jobs
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(tmp / "work"), "SPECSNAP_ROOT": str(ROOT)}
        env.pop("SPECSNAP_SPANS", None)
        run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--study", args.study, "--results", str(tmp / "results")],
            env, ROOT)
        plans = sorted((tmp / "results" / args.study / "plan" / "trials").glob("*.json"))
        trials = {p.stem: p for p in plans}
        if args.trial is not None and args.trial not in trials:
            sys.exit(f"no trial {args.trial!r} in study {args.study}; its trials: {', '.join(sorted(trials))}")
        chosen = args.trial or next((t for t, p in trials.items() if len(json.loads(p.read_text())["schedule"]) == 2),
                                    plans[0].stem)
        trial_file = trials[chosen]
        trial = json.loads(trial_file.read_text())
        if not args.cold:  # as a local run starts its jobs (sdcs_bench/warm.py)
            from sdcs_bench import warm

            env[warm.ENV] = warm.start(wait_s=60)  # (its imports done: a job sent before would run cold)
        per_stage: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        walls: dict[str, list[float]] = defaultdict(list)
        for i in range(args.repeat + 1):  # the first round warms the file cache and is not counted
            out = tmp / "results" / args.study / "trials" / chosen
            if out.exists():
                import shutil

                shutil.rmtree(out)
            for stage, argv in stage_commands(trial, trial_file, out):
                spans = tmp / f"spans.{i}.{stage}.jsonl"
                wall = run(argv, {**env, "SPECSNAP_SPANS": str(spans)}, ROOT)
                if i == 0:
                    continue
                recorded = defaultdict(float)
                for line in spans.read_text().splitlines():
                    for name, s in json.loads(line)["spans"].items():
                        recorded[name] += s
                recorded["start-up (interpreter, imports)"] = wall - sum(recorded.values())
                walls[stage].append(wall)
                for name, s in recorded.items():
                    per_stage[stage][name].append(s)
        if not args.cold:
            warm.stop()
        fl = floors(env, (trial.get("sandbox") or {}).get("backend", "auto"), args.repeat)
    stages = list(walls)
    names = [n for n in ORDER if any(n in per_stage[s] for s in stages)]
    names += sorted({n for s in stages for n in per_stage[s]} - set(names))
    med = {s: {n: statistics.median(per_stage[s][n]) if per_stage[s].get(n) else 0.0 for n in names} for s in stages}
    wall = {s: statistics.median(walls[s]) for s in stages}
    total = sum(wall.values())
    width = max(len(n) for n in names) + 2
    print(f"trial {chosen} ({args.study}), stages {'cold' if args.cold else 'warm'}, medians of {args.repeat} runs, "
          "seconds")
    print("layer".ljust(width) + "".join(s.rjust(11) for s in stages) + "      trial  share")
    for n in names:
        row = [med[s][n] for s in stages]
        print(n.ljust(width) + "".join(f"{v:11.3f}" for v in row) + f"{sum(row):11.3f}  {sum(row) / total:5.1%}")
    print("job time (wall)".ljust(width) + "".join(f"{wall[s]:11.3f}" for s in stages) + f"{total:11.3f}")
    print()
    for name, value in fl.items():
        print(f"floor: {name}: {value * 1000:.1f} ms")
    floor = fl["python -c pass"] * len(stages)
    print(f"reference trial job time {total:.2f} s: target <= {TARGET_S:.1f} s (ratio {total / TARGET_S:.2f}); "
          f"floor {floor:.2f} s ({len(stages)} interpreter starts, ratio {total / floor:.1f})")
    print(f"load average before the run: {load:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"trial": chosen, "stages": med, "wall": wall, "total": total, "floors": fl},
                                        indent=2))


if __name__ == "__main__":
    main()
