"""DVC shares a study's results: `dvc repro smoke` runs it through Snakemake, `dvc push` sends it to
a remote (a local directory here), and in a fresh `git clone`, after `dvc pull`, Snakemake finds
nothing to do, while a real change of the config still reruns exactly the trials it affects."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A two-trial version of the default study, so the round trip stays short.
SMALL_SMOKE = """\
name: smoke
description: tier_2 x Vanilla x {ref_oracle, ref_null} (a small smoke study for the DVC round trip)
grid:
  workload: [tier_2]
  arm: [Vanilla]
  agent: [ref_oracle, ref_null]
  variant: [none]
  seed: [0]
"""
ORACLE, NULL = "tier_2__Vanilla__ref_oracle__none__s0", "tier_2__Vanilla__ref_null__none__s0"


def _env() -> dict[str, str]:
    # The stage's `snakemake` and the `specsnap` its rules call are the ones beside this interpreter.
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
            "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}


def _run(cwd: Path, *cmd: str) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{(done.stdout + done.stderr)[-3000:]}"
    return done.stdout + done.stderr


def _dvc(cwd: Path, *args: str) -> str:
    return _run(cwd, sys.executable, "-m", "dvc", *args)


def _dry_run(cwd: Path) -> str:
    return _run(cwd, sys.executable, "-m", "snakemake", "-n", "--cores", "2")


def _planned_jobs(dry_run: str) -> set[tuple[str, str]]:
    """(rule, trial) of every job a dry run lists (trial empty for aggregate and all)."""
    jobs, rule = set(), None
    for line in dry_run.splitlines():
        if m := re.match(r"(?:local)?rule (\w+):", line.strip()):
            rule = m.group(1)
            jobs.add((rule, ""))
        elif rule and (m := re.search(r"wildcards: trial=([^,\s]+)", line)):
            jobs.discard((rule, ""))
            jobs.add((rule, m.group(1)))
    return jobs


@pytest.mark.pipeline
def test_pushed_results_pulled_into_a_fresh_clone_are_up_to_date(tmp_path):
    origin, remote, fresh = tmp_path / "origin", tmp_path / "remote", tmp_path / "fresh"
    # The repository as it stands (tracked and new files, not what git ignores), with a small smoke study.
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (origin / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, origin / rel)
    (origin / "conf" / "study" / "smoke.yaml").write_text(SMALL_SMOKE)
    _run(origin, "git", "init", "-q")
    _run(origin, "git", "add", "-A")
    _run(origin, "git", "commit", "-qm", "the project")

    _dvc(origin, "repro", "smoke")
    board = origin / "results" / "smoke" / "leaderboard.json"
    assert board.is_file()
    out = _dvc(origin, "plots", "show", "--json", "-o", str(tmp_path / "dvc_plots"), "results/smoke/plots")
    shown, _ = json.JSONDecoder().raw_decode(out[out.index("{"):])  # DVC may print a notice after it
    assert {f"results/smoke/plots/{n}.{e}" for n in ("net_by_arm", "requirement_survival", "tokens_vs_net")
            for e in ("png", "svg")} <= set(shown["data"])  # the aggregate's images, as DVC plots
    _dvc(origin, "remote", "add", "-d", "store", str(remote))
    _run(origin, "git", "add", "-A")
    committed = _run(origin, "git", "status", "--porcelain")
    # What git keeps: the lock file, the remote, and the metrics (cache: false); DVC keeps the rest.
    assert {line[3:] for line in committed.splitlines()} == {
        ".dvc/config", "dvc.lock", "results/smoke/leaderboard.json"}
    _run(origin, "git", "commit", "-qm", "the smoke study's results")
    _dvc(origin, "push", "smoke")

    _run(tmp_path, "git", "clone", "-q", str(origin), str(fresh))
    assert not (fresh / "results" / "smoke" / "trials").exists()
    _dvc(fresh, "pull", "smoke")
    pulled = fresh / "results" / "smoke"
    for name in ("leaderboard.json", "leaderboard.csv", "scorecards.csv", "ledger.csv", "report/index.html",
                 "plots/net_by_arm.svg"):
        assert (pulled / name).read_bytes() == (origin / "results" / "smoke" / name).read_bytes(), name
    assert not (fresh / ".snakemake").exists()  # Snakemake's own records stayed with the origin

    dry = _dry_run(fresh)
    assert "Nothing to be done" in dry, dry[-3000:]
    assert not _planned_jobs(dry)
    assert "up to date" in _dvc(fresh, "status", "smoke")

    # A real change still reruns exactly the trials it affects: one policy's setting.
    agent = fresh / "conf" / "agent" / "ref_null.yaml"
    text = agent.read_text()
    assert "turn_delay_s: 0.3" in text
    agent.write_text(text.replace("turn_delay_s: 0.3", "turn_delay_s: 0.2"))
    jobs = _planned_jobs(_dry_run(fresh))
    assert jobs == {("scaffold", NULL), ("session", NULL), ("score", NULL), ("aggregate", ""), ("report", ""),
                    ("all", "")}, jobs


def test_a_stage_older_than_its_inputs_is_kept_only_when_they_are_the_bytes_it_recorded(tmp_path):
    from sdcs_bench.pipeline.freshness import INPUTS_KEY, input_record, restore_order
    from sdcs_bench.pipeline.layout import RunLayout

    study = RunLayout(str(tmp_path / "run"))
    trial_file = Path(study.trial_file("t"))
    trial_file.parent.mkdir(parents=True)
    trial_file.write_text('{"trial_id": "t"}')
    layout = study.trial("t")
    outputs = [Path(p) for p in layout.outputs("scaffold").values()]
    Path(layout.stage_dir("scaffold")).mkdir(parents=True)
    for path in outputs[1:]:
        path.write_text("made from the trial file")
    record = {INPUTS_KEY: input_record(Path(study.run_dir), [trial_file])}
    Path(layout.stage_json("scaffold")).write_text(json.dumps(record))
    assert list(record[INPUTS_KEY]) == ["plan/trials/t.json"]

    def age_outputs() -> None:  # as a checkout leaves them: older than the trial file
        newer = trial_file.stat().st_mtime_ns
        for path in outputs:
            os.utime(path, ns=(newer - 10**9, newer - 10**9))

    age_outputs()
    assert restore_order(Path(study.run_dir), {"t": ["scaffold"]}) == ["t/scaffold"]
    assert all(p.stat().st_mtime_ns == trial_file.stat().st_mtime_ns for p in outputs)
    assert restore_order(Path(study.run_dir), {"t": ["scaffold"]}) == []  # up to date: nothing read

    trial_file.write_text('{"trial_id": "t", "changed": true}')  # a real change: the stage must rerun
    age_outputs()
    assert restore_order(Path(study.run_dir), {"t": ["scaffold"]}) == []
    assert all(p.stat().st_mtime_ns < trial_file.stat().st_mtime_ns for p in outputs)
