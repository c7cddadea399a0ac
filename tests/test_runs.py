"""Runs that must not damage each other: a second run of a busy study directory writes nothing and
the first one finishes; a run with overrides gets its own directory and its own live sandboxes;
the project is the clone one runs in."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, specsnap

SMALL = 'overrides=["agent=[ref_oracle,ref_verbatim_notes]","arm=[Vanilla,State_MD_Only]","variant=[none]","seed=[0]"]'
OTHER = 'overrides=["agent=[ref_null]","arm=[Vanilla]","variant=[none]"]'


def snakemake(workdir: Path, *args: str, snakefile: Path = ROOT / "Snakefile", **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(workdir), *args],
                          capture_output=True, text=True, env=os.environ.copy(), **kw)


def tree_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.pipeline
def test_a_refused_second_run_writes_nothing_and_the_first_run_finishes(clone, tmp_path):
    work = tmp_path / "work"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(clone / "Snakefile"), "--directory", str(work),
           "--cores", "1", "--config", "name=shared", SMALL]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    study = work / "results" / "shared"
    deadline = time.monotonic() + 120
    while not (study / "logs").is_dir() or not list((study / "logs").rglob("*.log")):
        assert first.poll() is None and time.monotonic() < deadline, "the first run did not start"
        time.sleep(0.2)
    # The first run is held where it is (its main process and the job commands it started stopped;
    # a job already running goes on) while the second runs are tried: a small study now finishes
    # faster than they can all be tried, and a finished run holds nothing.
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        plan = _second_runs_refused(first, work, study, clone)
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    out, _ = first.communicate(timeout=600)
    assert first.returncode == 0, out[-4000:]
    assert tree_hashes(study / "plan") == plan
    board = pd.read_csv(study / "leaderboard.csv")
    assert len(board) == 4 and board["matches_expected"].all()


def _second_runs_refused(first: subprocess.Popen, work: Path, study: Path, clone: Path) -> dict[str, str]:
    """Every second run of the study's directory is refused and writes nothing; returns the plan's hashes."""
    plan_before = tree_hashes(study / "plan")

    def refused(*args: str, why: str | tuple[str, ...]) -> None:
        run = snakemake(work, *args, snakefile=clone / "Snakefile")
        out = run.stdout + run.stderr
        assert run.returncode != 0 and any(w in out for w in ((why,) if isinstance(why, str) else why)), out[-2000:]
        assert tree_hashes(study / "plan") == plan_before

    # Other overrides under the same name, dry run or not: refused before anything is written.
    for extra in (["-n"], ["--cores", "1"]):
        refused(*extra, "--config", "name=shared", OTHER, why="so nothing was written")
    # The same command after conf/ changed under the running study: refused by the run lock.
    smoke = clone / "conf" / "study" / "smoke.yaml"
    original = smoke.read_text()
    smoke.write_text(original.replace("workload: [tier_2]", "workload: [tier_2, tier_1]"))
    assert smoke.read_text() != original
    for extra in (["-n"], ["--cores", "1"]):
        refused(*extra, "--config", "name=shared", SMALL, why="is in use by another run (pid")
    smoke.write_text(original)
    # The same plan: a dry run reads it as it is; a real run is refused by Snakemake itself (its lock,
    # or the running jobs' outputs it sees as incomplete).
    dry = snakemake(work, "-n", "--config", "name=shared", SMALL, snakefile=clone / "Snakefile")
    out = dry.stdout + dry.stderr
    assert "in use by another run" not in out and "nothing was written" not in out, out[-2000:]
    # Snakemake itself may call a running job's outputs incomplete, at the moment one runs.
    assert dry.returncode == 0 or "incomplete" in out.lower(), out[-2000:]
    refused("--cores", "1", "--config", "name=shared", SMALL, why=("LockException", "IncompleteFilesException"))
    assert first.poll() is None and tree_hashes(study / "plan") == plan_before
    return plan_before


def test_an_overrides_run_gets_its_own_directory_and_sandboxes(tmp_path):
    base = specsnap("plan", "--study", "smoke", "--results", str(tmp_path))
    assert base.returncode == 0, base.stderr
    smoke = tmp_path / "smoke"
    before = tree_hashes(smoke)
    one = specsnap("plan", "--study", "smoke", "--results", str(tmp_path), "--override", "agent=[ref_oracle]")
    same = specsnap("plan", "--study", "smoke", "--results", str(tmp_path), "--override", "agent=[ ref_oracle ]")
    assert one.returncode == 0 and same.returncode == 0, one.stderr + same.stderr
    assert tree_hashes(smoke) == before, "the study's own directory was touched"
    runs = sorted(p.name for p in tmp_path.iterdir())
    assert len(runs) == 2 and runs[0] == "smoke" and runs[1].startswith("smoke+"), runs
    ident = json.loads((tmp_path / runs[1] / "plan" / "study.json").read_text())
    assert {k: ident[k] for k in ("study", "run", "overrides")} == {
        "study": "smoke", "run": runs[1], "overrides": ["agent=[ref_oracle]"]}

    def work_dirs(run: Path) -> set[Path]:
        from sdcs_bench.trial.spec import TrialSpec

        return {TrialSpec.load(p).work_dir for p in (run / "plan" / "trials").glob("*.json")}

    overridden = work_dirs(tmp_path / runs[1])
    assert len(overridden) == 6 and not overridden & work_dirs(smoke)
    # Another results root (as in another clone) never shares live sandboxes either.
    other_root = tmp_path / "clone" / "results"
    assert specsnap("plan", "--study", "smoke", "--results", str(other_root)).returncode == 0
    assert not work_dirs(other_root / "smoke") & work_dirs(smoke)


def test_a_name_holding_another_study_is_refused(tmp_path):
    assert specsnap("plan", "--study", "smoke", "--results", str(tmp_path), "--name", "mine").returncode == 0
    before = tree_hashes(tmp_path / "mine")
    other = specsnap("plan", "--study", "smoke", "--results", str(tmp_path), "--name", "mine",
                     "--override", "arm=Vanilla")
    assert other.returncode == 2 and "holds study 'smoke' with overrides []" in other.stderr
    assert other.stderr.count("\n") == 1
    assert tree_hashes(tmp_path / "mine") == before
    bad = specsnap("plan", "--study", "smoke", "--results", str(tmp_path), "--name", "../escape")
    assert bad.returncode == 2 and "run name '../escape'" in bad.stderr


def test_the_project_root_is_the_clone_one_runs_in(clone, tmp_path):
    assert "mine" in specsnap("list", "studies", cwd=clone).stdout
    assert "mine" in specsnap("list", "studies", cwd=clone / "tiers" / "tier_2").stdout  # a parent is found
    assert "mine" not in specsnap("list", "studies", cwd=ROOT).stdout
    assert "mine" in specsnap("--root", str(clone), "list", "studies", cwd=ROOT).stdout
    lost = specsnap("list", "studies", cwd=tmp_path)
    assert lost.returncode == 2 and "is not inside a SpecSnap project" in lost.stderr and "--root" in lost.stderr
    # The pipeline reads the clone its Snakefile is in.
    run = snakemake(tmp_path / "work", "-n", "--config", "study=mine", snakefile=clone / "Snakefile")
    assert run.returncode == 0, run.stderr[-3000:]
    (cell,) = (tmp_path / "work" / "results" / "mine" / "plan" / "trials").glob("*.json")
    assert json.loads(cell.read_text())["study"] == "mine"
