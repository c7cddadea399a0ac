"""Planning a large grid cheaply, and skipping a plan that is current (README "Benchmarks").

A plan records what it was made from (plan.inputs.json): planning again with nothing changed
composes nothing, while an edit of conf/ or of a workload, or a plan file removed, plans again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PLAN = (
    "import sys; from pathlib import Path; from sdcs_bench.pipeline.plan.planner import ensure_plan; "
    "changed = ensure_plan('mine', sys.argv[2:], Path(sys.argv[1])); "
    "print('current' if changed is None else f'planned, {len(changed)} changed')"
)


def ensure(clone: Path, results: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", PLAN, str(results)], cwd=clone, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_current_plan_is_read_as_it_is_and_an_edit_plans_again(clone, tmp_path):
    results = tmp_path / "results"
    trial = results / "mine" / "plan" / "trials" / "tier_2__Vanilla__ref_null__none__s0.json"
    assert ensure(clone, results) == "planned, 1 changed"
    assert ensure(clone, results) == "current"

    config = clone / "conf" / "config.yaml"
    config.write_text(config.read_text().replace("timeout_s: 900", "timeout_s: 901", 1))
    assert ensure(clone, results) == "planned, 1 changed"
    assert json.loads(trial.read_text())["session"]["timeout_s"] == 901
    assert ensure(clone, results) == "current"

    # A change that leaves the plan as it is still composes (the check is by file, not by meaning),
    # and rewrites nothing.
    unused = clone / "conf" / "agent" / "ref_oracle.yaml"
    unused.write_text(unused.read_text() + "\n# an edit\n")
    assert ensure(clone, results) == "planned, 0 changed"

    workload = clone / "tiers" / "tier_2" / "workload.yaml"
    workload.write_text(workload.read_text() + "\n# an edit\n")
    before = json.loads(trial.read_text())["workload"]["fingerprint"]
    assert ensure(clone, results) == "planned, 1 changed"
    assert json.loads(trial.read_text())["workload"]["fingerprint"] != before

    trial.unlink()
    assert ensure(clone, results) == "planned, 1 changed" and trial.is_file()


def test_a_trial_file_is_what_json_dumps_writes(tmp_path):
    """Trial files are written with their shared parts encoded once: character for character what
    ``json.dumps(trial, indent=2, sort_keys=True)`` gives, so no existing plan changes (and reruns)."""
    from sdcs_bench.pipeline.plan.files import trial_json
    from sdcs_bench.pipeline.plan.planner import make_plan

    plan = make_plan("smoke", ["workload=[tier_2]", "variant=[none,uninterrupted]"], tmp_path)
    parts: dict = {}
    assert len(plan.trials) == 72
    assert all(trial_json(t, parts) == json.dumps(t, indent=2, sort_keys=True) for t in plan.trials)


def test_a_trial_outside_the_plan_is_one_clear_error(clone, tmp_path):
    target = "results/mine/trials/tier_9__Nope__ref_null__none__s0/score/scorecard.json"
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(clone / "Snakefile"), "--directory",
                             str(tmp_path), "-n", target, "--config", "study=mine"],
                            capture_output=True, text=True, env=os.environ.copy())
    assert result.returncode != 0
    assert "trial 'tier_9__Nope__ref_null__none__s0' is not in the plan of results/mine" in result.stdout + result.stderr


def test_many_seeds_can_be_given_as_a_range():
    from sdcs_bench.pipeline.plan.overrides import run_name, split_overrides

    assert split_overrides(["seed=range(0,16)"]) == ({"seed": list(range(16))}, [])
    assert split_overrides(["seed=2,5"]) == ({"seed": [2, 5]}, [])
    # the same seeds however spelled: the same run directory
    assert run_name("smoke", ["seed=range(0,3)"]) == run_name("smoke", ["seed=[0,1,2]"])
