"""A broken file of the project's config is one line naming the file and the problem, and stops
only the runs that use it; a bad value on the command line is one line too. Nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import snakemake_says, specsnap

from sdcs_bench.trial import config

BROKEN = {
    "agent syntax": ("conf/agent/ref_broken.yaml", "name: ref_broken\n  harness: [oops\n",
                     "agent=ref_broken", "conf/agent/ref_broken.yaml: invalid YAML (line 2, column 10)"),
    "arm syntax": ("conf/arm/Broken.yaml", "name: Broken\nfiles: [\n", "arm=Broken",
                   "conf/arm/Broken.yaml: invalid YAML (line 3"),
    "variant not a mapping": ("conf/variant/odd.yaml", "- just\n- a list\n", "variant=odd",
                              "conf/variant/odd.yaml: expected a mapping"),
    "registry syntax": ("conf/workload/tier_3.yaml", "id: tier_3\npath: [\n", "workload=tier_3",
                        "conf/workload/tier_3.yaml: invalid YAML (line 3"),
    "registry without path": ("conf/workload/tier_3.yaml", "id: tier_3\n", "workload=tier_3",
                              "conf/workload/tier_3.yaml: needs 'path:'"),
    "registry path missing": ("conf/workload/tier_3.yaml", "id: tier_3\npath: tiers/nope\n", "workload=tier_3",
                              "conf/workload/tier_3.yaml: path 'tiers/nope' holds no workload.yaml"),
    "workload syntax": ("tiers/tier_3/workload.yaml", "id: tier_3\nschedule: [\n  - x\n", "workload=tier_3",
                        "tiers/tier_3/workload.yaml: invalid YAML"),
}


def _break(clone: Path, rel: str, text: str) -> None:
    (clone / rel).write_text(text)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_file_stops_only_the_runs_that_use_it(clone, tmp_path, case):
    rel, text, override, message = BROKEN[case]
    _break(clone, rel, text)
    results = tmp_path / "results"
    used = specsnap("plan", "--results", str(results), "--override", override, cwd=clone)
    assert used.returncode == 2 and message in used.stderr, used.stderr
    assert used.stderr.count("\n") == 1 and "Traceback" not in used.stderr
    assert not results.exists()
    unused = specsnap("plan", "--study", "mine", "--results", str(results), cwd=clone)
    assert unused.returncode == 0, unused.stderr


def test_a_workload_that_breaks_its_schema_is_named_with_the_key(clone, tmp_path):
    path = clone / "tiers" / "tier_3" / "workload.yaml"
    text = path.read_text()
    path.write_text(text.replace("budget_tokens: ", "budget_tokens: lots  # ", 1))
    result = specsnap("plan", "--results", str(tmp_path), "--override", "workload=tier_3", cwd=clone)
    assert result.returncode == 2
    assert "tiers/tier_3/workload.yaml: invalid at budget_tokens: 'lots' is not of type 'integer'" in result.stderr
    path.write_text(text.replace("    tests:\n", "    testz:\n", 1))
    result = specsnap("plan", "--results", str(tmp_path), "--override", "workload=tier_3", cwd=clone)
    assert result.returncode == 2 and "tiers/tier_3/workload.yaml: invalid at requirements/0" in result.stderr
    assert "'tests' is a required property" in result.stderr


def test_a_broken_file_is_listed_as_such_and_the_rest_still_are(clone):
    _break(clone, "conf/agent/ref_broken.yaml", "name: x\n  harness: [\n")
    listed = specsnap("list", "agents", cwd=clone, env={"COLUMNS": "300"})
    assert listed.returncode == 0 and "unreadable: conf/agent/ref_broken.yaml: invalid YAML" in listed.stdout
    assert "ref_oracle" in listed.stdout


def test_the_pipeline_reports_a_broken_file_in_one_line_and_runs_without_it(clone, tmp_path):
    _break(clone, "tiers/tier_3/workload.yaml", "id: tier_3\nschedule: [\n")

    def snakemake(*config: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(clone / "Snakefile"), "--directory",
                               str(tmp_path), "-n", "--config", *config], capture_output=True, text=True,
                              env=os.environ.copy())

    ok = snakemake("study=mine")
    assert ok.returncode == 0, ok.stderr[-2000:]
    bad = snakemake("study=mine", 'overrides=["workload=tier_3"]')
    out = snakemake_says(bad)
    assert bad.returncode != 0 and out.startswith("specsnap: error: tiers/tier_3/workload.yaml: invalid YAML"), out
    assert out.count("\n") == 0, out


@pytest.mark.parametrize("override,message", [
    ("seed=[x]", "override 'seed=[x]': seeds must be non-negative integers, got 'x'"),
    ("seed=[-1]", "seeds must be non-negative integers, got -1"),
    ("seed=1.5", "seeds must be non-negative integers, got 1.5"),
    ("agent=[ref_oracle", "cannot parse overrides"),
])
def test_bad_pipeline_values_are_one_line(tmp_path, override, message):
    result = specsnap("plan", "--results", str(tmp_path), "--override", override)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1
    assert not tmp_path.joinpath("smoke").exists()


def test_the_missing_key_message_suggests_a_choice_that_works(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--results", str(tmp_path),
                             "--override", "agent=claude_code_sonnet"], capture_output=True, text=True, env=env)
    assert result.returncode == 2 and "agent=replay_claude_code" in result.stderr and "proxy=" not in result.stderr
    assert "replay_claude_code" in config.options("agent")
    suggested = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--results", str(tmp_path),
                                "--override", "agent=replay_claude_code"], capture_output=True, text=True, env=env)
    assert suggested.returncode == 0, suggested.stderr


@pytest.mark.parametrize("config_args,message", [
    (["stduy=smoke"], "specsnap: error: unknown --config key 'stduy'; valid choices: budget_max_usd, budget_price_replay, budget_trial_max_usd, name, overrides, rerun_of, rerun_seed, rerun_share, results, study, warm_jobs"),
    (["warm_jobs=maybe"], "specsnap: error: --config warm_jobs=maybe is not a valid choice; valid choices: false, true"),
    (["budget_price_replay=yes"], "specsnap: error: --config budget_price_replay=yes is not a valid choice; "
                                  "valid choices: false, true"),
    (["overrides=arm=Vanilla"], "specsnap: error: --config overrides is a list of Hydra overrides, "
                                "e.g. overrides='[\"arm=[Vanilla]\"]', not 'arm=Vanilla'"),
    (['overrides=["agnt=[ref_oracle]"]'], "specsnap: error: override 'agnt=[ref_oracle]': unknown setting 'agnt'; "
                                          "grid axes: agent, arm, continuation, seed, successor, variant, workload; settings: agent_defaults, "
                                          "budget, handoff, sandbox, scoring, session, statistics (dotted, e.g. sandbox.backend=local)"),
    (['overrides=["sandbox.backnd=local"]'], "specsnap: error: override 'sandbox.backnd=local': sandbox has no "
                                             "setting 'backnd'; valid choices: allow_unconfined, backend, docker, limits"),
])
def test_a_mistyped_run_config_is_one_line_and_plans_nothing(tmp_path, config_args, message):
    """What a new user typed: each is refused with one line naming the valid choices, exit status
    2, and nothing planned (no results directory)."""
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(Path(__file__).parents[1] / "Snakefile"),
                          "--directory", str(tmp_path), "-n", "--config", *config_args],
                         capture_output=True, text=True, env=os.environ.copy())
    out = snakemake_says(run)
    assert run.returncode == 2 and out == message, out
    assert not (tmp_path / "results").exists()
