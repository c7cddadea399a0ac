"""A real repository's source and environment: built once, then reused by every trial.

    python bench/repo_env.py [--workload click] [--trials 5]

In a fresh cache directory, exactly as the pipeline's ``source`` and ``environment`` rules do it:
(a) fetching the pinned source (from the verified download cache when it holds the archive, else
    from the index) and building the repository's own environment (a venv with its pinned test
    dependencies): once per pin;
(b) what each later trial pays for them: the same two calls again, which verify the cached copies
    and return;
(c) for scale, one trial's scaffold of the repository (copy, arm files, git init, baseline commit).
Prints the times and the ratio of (a) to (b).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="click")
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()

    from sdcs_bench.core.paths import use_project
    from sdcs_bench.pipeline.repos import build_planned_environment, fetch_planned_source, repo_plan
    from sdcs_bench.sandbox.scaffold import scaffold
    from sdcs_bench.sandbox.source import verified_tree
    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm
    from sdcs_bench.trial.workload import load_workload

    use_project(Path(__file__).resolve().parents[1])
    workload = load_workload(args.workload)
    if not workload.is_real_repo:
        sys.exit(f"{args.workload} is not a real repository workload")
    with tempfile.TemporaryDirectory(prefix="specsnap-bench-env-") as tmp:
        planned = repo_plan(workload, Path(tmp) / "results")
        fetch_once = timed(lambda: fetch_planned_source(planned, workload.id))
        build_once = timed(lambda: build_planned_environment(planned, workload.id))
        reuse = [timed(lambda: (fetch_planned_source(planned, workload.id),
                                build_planned_environment(planned, workload.id))) for _ in range(args.trials)]
        ready = workload.with_source(verified_tree(workload.source, Path(planned["source_dir"])),
                                     Path(planned["environment_dir"]))
        arm = Arm.from_config(config.entity("arm", "Vanilla"))
        scaffolds = [timed(lambda i=i: scaffold(ready, arm, Path(tmp) / f"sandbox{i}")) for i in range(args.trials)]
    per_trial = statistics.median(reuse)
    print(f"{workload.id} ({workload.source.describe()}, Python {workload.environment.python}):")
    print(f"  once per pin:  source {fetch_once:.2f} s, environment {build_once:.2f} s")
    print(f"  per trial after: {per_trial * 1000:.1f} ms (median of {args.trials}; both verified and reused)")
    print(f"  ratio once / per trial: {(fetch_once + build_once) / per_trial:.0f}x")
    print(f"  for scale, one trial's scaffold: {statistics.median(scaffolds):.2f} s")


if __name__ == "__main__":
    main()
