"""Score stage vs plain pytest on the same hidden tests, side by side in one run.

    python bench/score_vs_pytest.py [--repeat 5]

(a) the full score of a finished tier_2 sandbox, as the pipeline's score rule runs it
    (`specsnap evaluate-sandbox`: scoring copy, sandboxed isolated pytest with JUnit XML,
    boundary rules with import-linter, scorecard);
(b) `python -m pytest` on the same hidden tests in a plain copy of the same tree.
Prints the medians and their ratio (target: at most 1.5).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"benchmark command failed: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm
    from sdcs_bench.sandbox.scaffold import scaffold
    from sdcs_bench.trial.workload import load_workload

    workload = load_workload("tier_2")
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp) / "sandbox"
        scaffold(workload, Arm.from_config(config.entity("arm", "State_MD_Only")), sandbox)
        for req in workload.requirements:
            subprocess.run(["git", "apply", str(req.gold)], cwd=sandbox, check=True)
        plain = Path(tmp) / "plain"
        shutil.copytree(sandbox, plain, ignore=shutil.ignore_patterns(".git"))
        shutil.copytree(workload.hidden_dir, plain / "specsnap_hidden")
        shutil.move(plain / "specsnap_hidden" / "pytest.ini", plain / "pytest.ini")

        score_cmd = [sys.executable, "-m", "sdcs_bench.cli", "evaluate-sandbox", "--tier", "2",
                     "--sandbox", str(sandbox), "--json-out", str(Path(tmp) / "card.json")]
        pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "specsnap_hidden"]
        project = Path(__file__).resolve().parents[1]  # the CLI finds its workloads from here
        timed(score_cmd, project), timed(pytest_cmd, plain)  # warm the file cache
        score_t, pytest_t = [], []
        for _ in range(args.repeat):  # interleaved, so both see the same machine state
            score_t.append(timed(score_cmd, project))
            pytest_t.append(timed(pytest_cmd, plain))
    s, p = statistics.median(score_t), statistics.median(pytest_t)
    print(f"score stage (evaluate-sandbox, tier_2, full gold): median {s:.3f} s over {args.repeat} runs")
    print(f"plain pytest on the same hidden tests:            median {p:.3f} s over {args.repeat} runs")
    print(f"ratio score / pytest: {s / p:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
