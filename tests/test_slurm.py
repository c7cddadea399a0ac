"""A small study through `--profile workflow/profiles/slurm` on a one-node SLURM cluster started by
`cluster/slurm-local.sh`: every trial is one cluster job submitted by sbatch (SLURM's own job
completion log says so), and the leaderboard equals the same study's local run.

Needs root and the slurm-wlm and munge packages; without them the tests skip, saying why, unless
SPECSNAP_REQUIRE_INFRA names `slurm` (CI), where missing infrastructure is a failure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, missing

pytestmark = pytest.mark.pipeline

SCRIPT = ROOT / "cluster" / "slurm-local.sh"
CONF = Path("/etc/slurm/slurm.conf")
MARK = "# Written by specsnap cluster/slurm-local.sh"
# Two trials whose scores differ (the notes-writing policy keeps its notes only where the arm has
# a notes file), so a result landing in the wrong row would show.
OVERRIDES = 'overrides=["agent=[ref_verbatim_notes]","arm=[Vanilla,State_MD_Only]","variant=[none]"]'
RUN = "slurm_study"
# The rules a trial's cluster job runs; everything else (aggregate, all) runs in the main process.
CLUSTER_RULES = {"scaffold", "session", "session_state", "inject", "handoff", "score"}


def missing_infra() -> str | None:
    if os.geteuid() != 0:
        return "the local SLURM cluster needs root (slurmctld and slurmd run as root, slurm.conf is in /etc/slurm)"
    missing = [b for b in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")
               if shutil.which(b) is None]
    if missing:
        return f"{', '.join(missing)} missing: install the packages slurm-wlm and munge (./install.sh does)"
    if CONF.exists() and not CONF.read_text().startswith(MARK):
        return f"{CONF} belongs to another SLURM installation; the local cluster leaves it alone"
    return None


def run(*args, env=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, **kw)


def pids(scratch: Path) -> dict[str, int]:
    files = {"munged": scratch / "munge" / "munged.pid", "slurmctld": scratch / "slurmctld.pid",
             "slurmd": scratch / "slurmd.pid"}
    return {name: int(f.read_text().strip()) for name, f in files.items() if f.exists()}


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def cluster():
    """The local cluster, started for this module and stopped after it (by the script, by PID)."""
    reason = missing_infra()
    if reason:
        missing("slurm", reason)  # a skip, or a failure where SPECSNAP_REQUIRE_INFRA names slurm
    # Under /tmp, not pytest's private (mode 0700) directory: munged runs as the munge user and must
    # reach its socket.
    scratch = Path(tempfile.mkdtemp(prefix="specsnap-slurm-"))
    scratch.chmod(0o755)
    env = {**os.environ, "SPECSNAP_SLURM_DIR": str(scratch)}
    started = run(SCRIPT, "start", env=env)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield scratch, env
    finally:
        run(SCRIPT, "stop", env=env)
        shutil.rmtree(scratch, ignore_errors=True)


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "snakemake", "-s", ROOT / "Snakefile", "--directory", workdir, *args,
               "--config", f"name={RUN}", OVERRIDES, env=os.environ.copy())


def jobcomp(scratch: Path) -> list[dict[str, str]]:
    """SLURM's own record of every finished job (jobcomp/filetxt: `Key=Value` fields, one job a line)."""
    log = scratch / "log" / "jobcomp.log"
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in log.read_text().splitlines() if line.strip()]


def stages_run_inside(slurm_log: Path) -> set[tuple[str, str]]:
    """(rule, trial) of every stage the Snakemake inside a cluster job ran, from that job's log."""
    found = re.findall(r"^localrule (\w+):\n(?:    .*\n)*?    wildcards: trial=(\S+?)(?:, k=(\d+))?$",
                       slurm_log.read_text(), re.M)
    return {(rule if not k else f"{rule}_{k}", trial) for rule, trial, k in found}


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    """The same study twice: through the SLURM profile, and locally."""
    scratch, env = cluster
    on_slurm = tmp_path_factory.mktemp("on-slurm")
    flags = run(SCRIPT, "flags", env=env).stdout.split()
    result = snakemake(on_slurm, "--profile", ROOT / "workflow" / "profiles" / "slurm", *flags,
                       "--slurm-keep-successful-logs")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    local = tmp_path_factory.mktemp("local")
    local_result = snakemake(local, "--cores", "2")
    assert local_result.returncode == 0, local_result.stdout[-4000:] + local_result.stderr[-4000:]
    return {"scratch": scratch, "slurm": on_slurm, "slurm_out": result.stdout + result.stderr, "local": local}


def test_the_local_cluster_runs_and_a_second_start_changes_nothing(cluster):
    scratch, env = cluster
    before = pids(scratch)
    assert set(before) == {"munged", "slurmctld", "slurmd"} and all(map(running, before.values()))
    assert CONF.read_text().startswith(MARK) and f"# scratch: {scratch}" in CONF.read_text()
    again = run(SCRIPT, "start", env=env)
    assert again.returncode == 0 and "already running" in again.stdout, again.stdout + again.stderr
    assert pids(scratch) == before
    assert run("sinfo", "-h", "-N", "-o", "%t").stdout.split() == ["idle"]


def test_every_trial_ran_as_one_sbatch_job_and_slurm_saw_each(runs):
    out, workdir = runs["slurm_out"], runs["slurm"]
    cells = pd.read_csv(workdir / "results" / RUN / "plan" / "cells.tsv", sep="\t")
    expected = {(stage, trial) for trial, stages in zip(cells.trial, cells.stages) for stage in stages.split(",")}
    assert {rule for rule, _ in expected} - {"session_1", "session_2"} == {"scaffold", "score"}

    # What Snakemake says it submitted ...
    run_id = re.search(r"^SLURM run ID: (\S+)$", out, re.M)
    assert run_id, "Snakemake did not use the SLURM executor:\n" + out[-4000:]
    run_id = run_id.group(1)
    submitted = dict(re.findall(r"submitted with SLURM jobid (\d+) \(log: (\S+?)\)", out))
    assert len(submitted) == len(cells), out[-4000:]  # one cluster job per trial
    # ... and nothing of a trial ran in the main process: only the aggregate, the report and the target did.
    assert set(re.findall(r"^localrule (\w+):", out, re.M)) == {"aggregate", "report", "all"}

    # SLURM's own record: exactly these jobs of this run, all completed, exit 0, in this workdir.
    ours = [job for job in jobcomp(runs["scratch"]) if job["Name"] == run_id]
    assert {job["JobId"] for job in ours} == set(submitted)
    for job in ours:
        assert (job["JobState"], job["ExitCode"], job["WorkDir"]) == ("COMPLETED", "0:0", str(workdir)), job

    # Inside each job: the stages of exactly one trial; together, every stage of every trial.
    seen = set()
    for slurm_id, log in submitted.items():
        inside = stages_run_inside(Path(log))
        assert len({trial for _, trial in inside}) == 1, (slurm_id, inside)
        seen |= inside
    assert seen == expected


def test_the_leaderboard_equals_the_local_runs(runs):
    # No column of these tables depends on the run (no timings, no host): compared whole.
    for table in ("leaderboard.csv", "scorecards.csv"):
        on_slurm = pd.read_csv(runs["slurm"] / "results" / RUN / table)
        local = pd.read_csv(runs["local"] / "results" / RUN / table)
        pd.testing.assert_frame_equal(on_slurm, local)
    board = pd.read_csv(runs["slurm"] / "results" / RUN / "leaderboard.csv")
    assert board.matches_expected.all() and board.net.nunique() == 2, board


def test_stop_leaves_nothing_running(cluster):
    scratch, env = cluster
    before = pids(scratch)
    stopped = run(SCRIPT, "stop", env=env)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not any(map(running, before.values())), before
    assert not CONF.exists()
    assert run(SCRIPT, "status", env=env).returncode != 0
