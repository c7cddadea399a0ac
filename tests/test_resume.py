"""A study of several trials killed with SIGKILL (its whole process group) while a session runs and
other stages have finished: no agent process is left; after `snakemake --unlock` the same command
completes it; finished stages are not redone (their files keep their bytes and modification times);
a stage directory holding some outputs but no `stage.json` is redone, never taken as done; and every
scorecard equals that of the same study run without interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from sdcs_bench.pipeline.layout import SNAPSHOT, STAGE_FILE, RunLayout
from sdcs_bench.sandbox.base import SANDBOX_MARKER, sandbox_marker
from sdcs_bench.trial.spec import TrialSpec

STUDY = """\
name: resume
description: two reference policies, for the kill-and-resume test
grid:
  workload: [tier_2]
  arm: [State_MD_Only]
  agent: [ref_oracle, ref_verbatim_notes]
  variant: [none]
  seed: [0]
"""
# What differs between two runs of the same trial by design: wall times, and the sentinel twins'
# names (in their list and in the hidden run's output), drawn afresh for every scoring run so that
# no name tells a forger anything. Their numbers, and everything else, must be equal.
VOLATILE = {"wall_s", "hidden_run"}


def _snakemake(results: Path, *extra: str) -> list[str]:
    """The command a user runs in the clone (so with its default profile), results kept apart."""
    return [sys.executable, "-m", "snakemake", "--cores", "1", *extra, "--config", "study=resume",
            f"results={results}"]


def _markers(study: RunLayout) -> set[bytes]:
    trials = Path(study.plan_dir, "trials").glob("*.json")
    return {f"{SANDBOX_MARKER}={sandbox_marker(TrialSpec.load(t).sandbox_dir)}".encode() for t in trials}


def _agents(markers: set[bytes]) -> list[int]:
    """Processes running in one of this study's sandboxes (an agent, or anything it started)."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = set(Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if env & markers:
            pids.append(int(entry))
    return pids


def _finished(study: RunLayout) -> dict[Path, tuple[bytes, int]]:
    """Every file of every finished stage (one with its stage.json): bytes and modification time."""
    files = {}
    for record in Path(study.run_dir, "trials").glob(f"*/*/{STAGE_FILE}"):
        for path in record.parent.rglob("*"):
            if path.is_file():
                files[path] = (path.read_bytes(), path.stat().st_mtime_ns)
    return files


def _comparable(value):
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _scorecards(study: RunLayout) -> dict[str, dict]:
    cards = {}
    for path in Path(study.run_dir, "trials").glob("*/score/scorecard.json"):
        card = json.loads(path.read_text())
        card["sentinels"].pop("list")
        cards[path.parent.parent.name] = _comparable(card)
    return cards


@pytest.mark.pipeline
def test_a_killed_study_resumes_without_redoing_finished_stages(clone, tmp_path):
    (clone / "conf" / "study" / "resume.yaml").write_text(STUDY)
    calm, killed = tmp_path / "calm" / "results", tmp_path / "killed" / "results"

    # The same study, uninterrupted: the scorecards to match.
    done = subprocess.run(_snakemake(calm), cwd=clone, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    expected = _scorecards(RunLayout(str(calm / "resume")))
    assert len(expected) == 2

    study = RunLayout(str(killed / "resume"))
    run = subprocess.Popen(_snakemake(killed), cwd=clone, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    deadline, markers = time.monotonic() + 180, set()
    # Kill once a session has finished and another one's agent is running.
    while True:
        assert run.poll() is None and time.monotonic() < deadline, "the study ended before the moment to kill it"
        if not markers and Path(study.cells).is_file():
            markers = _markers(study)
        if list(Path(study.run_dir, "trials").glob(f"*/session_*/{STAGE_FILE}")) and _agents(markers):
            break
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)  # Snakemake and its job, at once
    run.wait()
    deadline = time.monotonic() + 15
    while _agents(markers) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = _agents(markers)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"agent processes survived the killed study: {survivors}"

    before = _finished(study)
    assert before, "no stage had finished when the study was killed"
    unfinished = [p for p in Path(study.run_dir, "trials").glob("*/session_*") if not (p / STAGE_FILE).exists()]
    assert unfinished, "the killed session's stage directory is there"
    # A stage that did not finish, holding outputs: a truncated snapshot and a transcript, no stage.json.
    trial_dir = unfinished[0].parent
    partial = trial_dir / "score" if (trial_dir / "session_2" / STAGE_FILE).exists() else trial_dir / "session_2"
    partial.mkdir(exist_ok=True)
    (partial / SNAPSHOT).write_bytes((trial_dir / "scaffold" / SNAPSHOT).read_bytes()[:100])
    (partial / "transcript.jsonl").write_text('{"truncated": ')

    unlock = subprocess.run(_snakemake(killed, "--unlock"), cwd=clone, capture_output=True, text=True)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    rerun = subprocess.run(_snakemake(killed), cwd=clone, capture_output=True, text=True)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]

    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in before if p.exists()}
    redone = sorted(str(p.relative_to(study.run_dir)) for p in before if after.get(p) != before[p])
    assert not redone, f"finished stages were redone or touched: {redone}"
    assert (partial / STAGE_FILE).is_file(), "the partial stage was taken as done"
    if (partial / SNAPSHOT).exists():
        with tarfile.open(partial / SNAPSHOT) as tar:
            assert tar.getmembers()
    assert _scorecards(study) == expected
    assert Path(study.leaderboard("csv")).is_file()
    assert not _agents(markers)
