"""The score stage vs plain pytest on the same hidden tests, side by side in one run.

    python bench/score_vs_pytest.py [--repeat 5] [--trial ID]

Plans the smoke study in a temporary directory and runs one trial whose final tree passes every
hidden test (default: the oracle's, Vanilla, seed 0) up to its score stage. Then, interleaved so
both see the same machine:

(a) the score stage as its rule runs it (`specsnap score`: a process of its own; the scoring copy,
    the sentinel twins planted beside the renamed hidden tests, the sandboxed isolated pytest with
    its probe, audit hook and verdict stream, the JUnit cross-check, the boundary rules, the
    closed form, the scorecard);
(b) `python -m pytest -q -p no:cacheprovider` on the same hidden tests in a plain copy of the same
    final tree (what a person would type).
Prints the medians and their ratio (target: at most 1.25).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from trial_breakdown import ROOT, run, stage_commands

TARGET = 1.25


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"benchmark command failed: {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trial", default="tier_2__Vanilla__ref_oracle__none__s0")
    args = parser.parse_args()
    import json

    from sdcs_bench.core.bytecode import compile_package
    from sdcs_bench.trial.workload import load_workload

    compile_package()  # as a run's main process does before its jobs
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(tmp / "work"), "SPECSNAP_ROOT": str(ROOT)}
        env.pop("SPECSNAP_SPANS", None)
        run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--study", "smoke", "--results", str(tmp / "results")],
            env, ROOT)
        trial_file = tmp / "results" / "smoke" / "plan" / "trials" / f"{args.trial}.json"
        if not trial_file.is_file():
            sys.exit(f"no trial {args.trial} in the smoke study")
        trial = json.loads(trial_file.read_text())
        out = tmp / "results" / "smoke" / "trials" / args.trial
        stages = stage_commands(trial, trial_file, out)
        for _, argv in stages[:-1]:  # every stage before the score, once
            run(argv, env, ROOT)
        score_cmd = stages[-1][1]
        last = out / stages[-2][0]

        plain = tmp / "plain"
        with tarfile.open(last / "snapshot.tar.gz") as tar:
            tar.extractall(plain, filter="data")
        shutil.rmtree(plain / ".git")
        workload = load_workload(trial["workload"]["id"] if isinstance(trial["workload"], dict) else trial["workload"])
        shutil.copytree(workload.hidden_dir, plain / "specsnap_hidden")
        shutil.move(plain / "specsnap_hidden" / "pytest.ini", plain / "pytest.ini")
        pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "specsnap_hidden"]
        plain_env = {k: v for k, v in os.environ.items() if not k.startswith("SPECSNAP_")}

        def score_once() -> float:
            shutil.rmtree(out / "score", ignore_errors=True)
            return timed(score_cmd, ROOT, env)

        score_once(), timed(pytest_cmd, plain, plain_env)  # warm the file cache
        score_t, pytest_t = [], []
        for _ in range(args.repeat):  # interleaved, so both see the same machine state
            score_t.append(score_once())
            pytest_t.append(timed(pytest_cmd, plain, plain_env))
        card = json.loads((out / "score" / "scorecard.json").read_text())
    s, p = statistics.median(score_t), statistics.median(pytest_t)
    print(f"score stage (`specsnap score`, {args.trial}): median {s:.3f} s over {args.repeat} runs "
          f"({card['sentinels']['planted']} sentinel twins beside the hidden tests, tampered: {card['tampered']}, "
          f"raw {card['raw']})")
    print(f"plain pytest on the same hidden tests:  median {p:.3f} s over {args.repeat} runs")
    print(f"ratio score / pytest: {s / p:.2f} (target <= {TARGET})")
    print(f"load average before the run: {load:.2f}")


if __name__ == "__main__":
    main()
