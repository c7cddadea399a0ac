"""Pipeline stages of one trial (SPEC §9): scaffold -> session_k -> score.

Each stage starts from its predecessor's snapshot alone and ends by writing, atomically, a
snapshot of the sandbox and ``stage.json`` (written last: its presence means the stage is done).
So every stage is restartable, cacheable, and can run as a cluster job on another machine.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from sdcs_bench.agents import agent_kind
from sdcs_bench.agents.expectations import expected_reference_score
from sdcs_bench.trial.arms import Arm
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_path, atomic_write, remove_stale_temporaries
from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.scoring import score_sandbox
from sdcs_bench.session.runner import run_session
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.trial.workload import load_workload

SNAPSHOT = "snapshot.tar.gz"
STAGE = "stage.json"


def load_trial(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def write_snapshot(workdir: Path, stage_dir: Path) -> Path:
    target = stage_dir / SNAPSHOT
    with atomic_path(target) as tmp, tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(workdir.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            tar.add(path, arcname=path.relative_to(workdir).as_posix(), recursive=False)
    return target


def restore_snapshot(stage_dir: Path, workdir: Path) -> None:
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    with tarfile.open(stage_dir / SNAPSHOT) as tar:
        tar.extractall(workdir, filter="tar")


def trial_workdir(trial: dict[str, Any]) -> Path:
    return Path(trial["work_dir"]) / "sandbox"


def _clear_live(trial: dict[str, Any]) -> None:
    """The live sandbox (and the sessions' private HOMEs) exist only while a stage runs: once its
    snapshot is written, the next stage restores from that alone, so nothing lingers in the work root."""
    shutil.rmtree(trial["work_dir"], ignore_errors=True)


def _begin(stage_dir: Path) -> None:
    """Start a stage: its directory exists, and no temporary file of a killed earlier attempt stays."""
    stage_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(stage_dir)


def _finish(stage_dir: Path, name: str, trial: dict, started: float, **fields: Any) -> dict[str, Any]:
    record = {
        "stage": name,
        "trial": trial["trial_id"],
        "status": "done",
        "started": started,
        "finished": time.time(),
        "wall_s": round(time.time() - started, 3),
        "reference_policy": bool(trial["agent"].get("reference")),
        **fields,
    }
    atomic_write(stage_dir / STAGE, json.dumps(record, indent=2, default=str))
    return record


def run_scaffold_stage(trial: dict[str, Any], stage_dir: Path) -> dict[str, Any]:
    started = time.time()
    _begin(stage_dir)
    workdir = trial_workdir(trial)
    if workdir.exists():
        shutil.rmtree(workdir)
    meta = scaffold(load_workload(trial["workload"]["id"]), Arm.from_config(trial["arm"]), workdir)
    write_snapshot(workdir, stage_dir)
    _clear_live(trial)
    atomic_write(stage_dir / "manifest.json", json.dumps(meta["manifest"], indent=2))
    return _finish(stage_dir, "scaffold", trial, started, baseline_commit=meta["baseline_commit"])


def run_session_stage(trial: dict[str, Any], index: int, prev_stage: Path, stage_dir: Path) -> dict[str, Any]:
    """Run one session from its predecessor's snapshot. An infrastructure failure (the harness died
    before its first model call; the provider was overloaded) is retried from the same snapshot
    with exponential backoff; whatever the agent itself did is data and is never retried. Each
    failed attempt's records are kept under ``attempts/N/``."""
    started = time.time()
    _begin(stage_dir)
    workload = load_workload(trial["workload"]["id"])
    schedule = effective_schedule(workload, trial["variant"])
    workdir = trial_workdir(trial)
    retries = int(trial["session"].get("infra_retries", 0))
    backoff = float(trial["session"].get("infra_backoff_s", 0))
    failed: list[dict[str, Any]] = []
    for attempt in range(retries + 1):
        restore_snapshot(prev_stage, workdir)
        record = run_session(
            trial_id=trial["trial_id"],
            index=index,
            session=schedule[index - 1],
            workload=workload,
            arm=Arm.from_config(trial["arm"]),
            agent_cfg=trial["agent"],
            workdir=workdir,
            stage_dir=stage_dir,
            backend=make_backend(trial["sandbox"]["backend"]),
            timeout_s=float(trial["session"]["timeout_s"]),
        )
        if not record.get("infra_failure"):
            break
        failed.append({"attempt": attempt + 1, "infra_failure": record["infra_failure"], "status": record["status"]})
        _keep_attempt(stage_dir, attempt + 1)
        if attempt == retries:
            raise SpecSnapError(
                f"trial {trial['trial_id']} session {index}: infrastructure failure after {retries + 1} attempt(s) "
                f"({record['infra_failure']}); records in {stage_dir / 'attempts'}; rerun to resume"
            )
        time.sleep(backoff * 2**attempt)
    record["infra_attempts"] = failed
    if record["cleave"].get("fired"):
        atomic_write(stage_dir / "cleave.diff", record["cleave"]["diff"])
    write_snapshot(workdir, stage_dir)
    _clear_live(trial)
    return _finish(stage_dir, f"session_{index}", trial, started, tokens=record["tokens"], session=record)


def _keep_attempt(stage_dir: Path, attempt: int) -> None:
    keep = stage_dir / "attempts" / str(attempt)
    keep.mkdir(parents=True, exist_ok=True)
    for path in stage_dir.iterdir():
        if path.is_file() and path.name not in (STAGE, SNAPSHOT):
            path.replace(keep / path.name)


def run_inject_stage(trial: dict[str, Any], prev_stage: Path, stage_dir: Path) -> dict[str, Any]:
    """Plant the workload's poison pill between two sessions (SPEC §5). The record stays in this
    stage's directory, outside the sandbox: the next session sees only the files."""
    from sdcs_bench.sandbox.poison import inject

    started = time.time()
    _begin(stage_dir)
    workdir = trial_workdir(trial)
    restore_snapshot(prev_stage, workdir)
    record = inject(load_workload(trial["workload"]["id"]), workdir, trial["variant"]["inject"]["poison"])
    write_snapshot(workdir, stage_dir)
    _clear_live(trial)
    return _finish(stage_dir, "inject", trial, started, injection=record)


def injection_of(trial: dict[str, Any], stage_dir: Path) -> dict[str, Any] | None:
    """The injection record of a trial with an inject stage (read from its stage.json)."""
    if "inject" not in trial.get("stages", []):
        return None
    return json.loads((stage_dir.parent / "inject" / STAGE).read_text())["injection"]


def session_stage_records(trial: dict[str, Any], trial_dir: Path) -> list[dict[str, Any]]:
    """The session records of a trial as its session stages wrote them, outside the sandbox (a later
    session's agent can rewrite anything inside the sandbox, its ``.git`` included)."""
    sessions = [s for s in trial["stages"] if s.startswith("session_")]
    return [json.loads((trial_dir / s / STAGE).read_text())["session"] for s in sessions]


def run_score_stage(trial: dict[str, Any], prev_stage: Path, stage_dir: Path) -> dict[str, Any]:
    started = time.time()
    _begin(stage_dir)
    workload = load_workload(trial["workload"]["id"])
    records = session_stage_records(trial, stage_dir.parent)
    tokens = TokenUsage(source="none")
    for rec in records:
        tokens = tokens + TokenUsage.from_dict(rec["tokens"])
    with tempfile.TemporaryDirectory(prefix="specsnap-final-") as tmp:
        final = Path(tmp) / "sandbox"
        restore_snapshot(prev_stage, final)
        card = score_sandbox(
            workload, final, tokens=tokens, backend=make_backend(trial["sandbox"]["backend"]),
            timeout_s=float(trial["scoring"]["timeout_s"]), injection=injection_of(trial, stage_dir),
            sessions=records,
        )
    expected = expected_reference_score(workload, Arm.from_config(trial["arm"]), trial["agent"], trial["variant"])
    card = {**trial_labels(trial), **card, "expected": expected}
    atomic_write(stage_dir / "scorecard.json", json.dumps(card, indent=2))
    return _finish(stage_dir, "score", trial, started, net=card["net"], raw=card["raw"], valid=card["valid"])


def trial_labels(trial: dict[str, Any]) -> dict[str, Any]:
    agent = trial["agent"]
    return {
        "trial": trial["trial_id"],
        "study": trial["study"],
        "agent": agent["name"],
        "agent_kind": agent_kind(agent),
        "harness": agent.get("harness"),
        "model": agent.get("model"),
        "variant": trial["variant"]["name"],
        "seed": trial["seed"],
    }
