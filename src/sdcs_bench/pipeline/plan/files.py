"""The plan's files: what :func:`render_plan` makes of a :class:`Plan` (``cells.tsv``, one config
per trial, the settings and the run's identity), writing them (only what changed, under the run
lock), and reading or packing the cells table for the workflow."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.pipeline.freshness import restore_order
from sdcs_bench.pipeline.plan.current import INPUTS_FILE, inputs_record
from sdcs_bench.pipeline.plan.grid import SAME, handoff_name
from sdcs_bench.pipeline.plan.overrides import override_key
from sdcs_bench.proxy.server import DEFAULT_UPSTREAMS
from sdcs_bench.sandbox.environment import RECORD as ENV_RECORD
from sdcs_bench.sandbox.source import RECORD as SOURCE_RECORD
from sdcs_bench.trial.components import api_provider

CELL_COLUMNS = ("trial", "workload", "arm", "agent", "variant", "seed", "reference", "provider", "api", "stages",
                "session_runtime_min", "score_runtime_min", "config", "source", "environment", "image",
                "score_image", "baseline", "successor_api")
API_PROVIDERS = tuple(DEFAULT_UPSTREAMS)  # anthropic, openai, gemini: each a Snakemake resource api_<provider>
STUDY_FILE = "study.json"
NOT_APPLICABLE = "not_applicable"  # (study.json) the (workload, arm) cells skipped: the arm lacks its workload file
STATISTICS_FILE = "statistics.json"  # (RunLayout.statistics_file)
PRICES_FILE = "prices.json"  # (RunLayout.prices_file)
BUDGET_FILE = "budget.json"  # (RunLayout.budget_file)


@dataclass
class Plan:
    study: str
    directory: Path
    trials: list[dict[str, Any]]
    run: str = ""
    overrides: tuple[str, ...] = ()
    # What else the plan was read from (see plan_is_current): project paths beyond conf/ (workload
    # directories, arm source files) and the agents as composed (their readiness is rechecked).
    sources: tuple[str, ...] = ()
    agents: dict[str, dict[str, Any]] | None = None
    statistics: dict[str, Any] | None = None  # how the aggregate computes intervals (not part of any trial)
    prices: dict[str, Any] | None = None  # conf/prices.yaml, checked (not part of any trial either)
    budget: dict[str, Any] | None = None  # the planned budget (docs/cost.md); the run's command line may raise it
    subset: dict[str, Any] | None = None  # a rerun batch: the finished run and share it repeats
    # The (workload, arm) cells skipped, each {workload, arm, file, reason} (ArmNotApplicable.record):
    # the arm places a file of the workload's own directory that the workload lacks.
    not_applicable: tuple[dict[str, str], ...] = ()

    @property
    def run_dir(self) -> Path:
        return self.directory.parent


def runtimes_min(trial: dict[str, Any]) -> tuple[int, int]:
    """Wall-time limits (minutes) of a trial's session and score jobs, for cluster executors: every
    attempt of a session at its timeout plus the backoff between them, and the scoring timeout,
    each with a few minutes for the stage's own work."""
    import math

    s = trial["session"]
    attempts = s["infra_retries"] + 1
    session_s = s["timeout_s"] * attempts + s["infra_backoff_s"] * (2 ** s["infra_retries"] - 1)
    return math.ceil(session_s / 60) + 5, math.ceil(trial["scoring"]["timeout_s"] / 60) + 5


def render_plan(plan: Plan) -> dict[Path, str]:
    """Every file of the plan and its text: ``study.json``, ``cells.tsv`` and one config per trial."""
    trials_dir = plan.directory / "trials"
    parts: dict[int, str] = {}
    files = {trials_dir / f"{t['trial_id']}.json": trial_json(t, parts) for t in plan.trials}
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(CELL_COLUMNS)
    for t in plan.trials:
        writer.writerow(
            [
                t["trial_id"], t["workload"]["id"], t["arm"]["name"],
                handoff_name(t["agent"]["name"], t["successor"]["name"] if t.get("successor") else SAME),
                t["variant"]["name"], t["seed"],
                str(bool(t["agent"].get("reference")) and bool((t.get("successor") or t["agent"]).get("reference"))).lower(),
                t["agent"].get("provider", "none"),
                api_provider(t["agent"]),
                ",".join(t["stages"]), *runtimes_min(t), (trials_dir / f"{t['trial_id']}.json").as_posix(),
                *repo_records(t), *(t["sandbox"].get("docker", {}).get(k, "") for k in ("image_record",
                                                                                          "score_image_record")),
                t.get("token_baseline", {}).get("trial", ""),
                api_provider(t["successor"]) if t.get("successor") else "",
            ]
        )
    files[plan.directory / "cells.tsv"] = buf.getvalue()
    if plan.statistics is not None:
        files[plan.directory / STATISTICS_FILE] = json.dumps(plan.statistics, indent=2, sort_keys=True) + "\n"
    if plan.prices is not None:
        files[plan.directory / PRICES_FILE] = json.dumps(plan.prices, indent=2, sort_keys=True) + "\n"
    if plan.budget is not None:
        files[plan.directory / BUDGET_FILE] = json.dumps(plan.budget, indent=2, sort_keys=True) + "\n"
    for t in plan.trials:  # what the source and environment rules read (rewritten only when a pin changes)
        if t["workload"].get("repo"):
            files[plan.directory / "repos" / f"{t['workload']['id']}.json"] = json.dumps(
                t["workload"]["repo"], indent=2, sort_keys=True)
    files[plan.directory / STUDY_FILE] = _identity_text(plan)
    return files


def trial_json(trial: dict[str, Any], parts: dict[int, str] | None = None) -> str:
    """``json.dumps(trial, indent=2, sort_keys=True)``, character for character, with each top-level
    value a trial shares with others (its arm, agent, workload, schedule: see :func:`.make_plan`)
    encoded once: ``parts`` maps such a value's ``id`` to its text (valid while the trials live).
    A nested value's text is its own ``dumps`` with every line after the first indented by two
    spaces (JSON strings hold no raw newline)."""
    if parts is None:
        parts = {}
    lines = []
    for key in sorted(trial):
        value = trial[key]
        if isinstance(value, (dict, list)):
            text = parts.get(id(value))
            if text is None:
                text = parts[id(value)] = json.dumps(value, indent=2, sort_keys=True).replace("\n", "\n  ")
        else:
            text = json.dumps(value)
        lines.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}" if lines else "{}"


def repo_records(trial: dict[str, Any]) -> tuple[str, str]:
    """The cached source's and environment's records a real-repository trial's stages take as
    inputs (``source.json``, ``env.json``); empty for other workloads."""
    repo = trial["workload"].get("repo")
    if not repo:
        return "", ""
    return f"{repo['source_dir']}/{SOURCE_RECORD}", f"{repo['environment_dir']}/{ENV_RECORD}"


def _identity(plan: Plan) -> dict[str, Any]:
    return {"study": plan.study, "run": plan.run, "overrides": list(plan.overrides),
            "overrides_key": override_key(plan.overrides), **({"subset": plan.subset} if plan.subset else {}),
            **_not_applicable(plan)}


def _not_applicable(plan: Plan) -> dict[str, Any]:
    return {NOT_APPLICABLE: [dict(r) for r in plan.not_applicable]} if plan.not_applicable else {}


def _identity_text(plan: Plan) -> str:
    """``study.json``: the run's identity and the cells it skipped. The first spelling of the
    overrides is kept (an equal run spelled differently rewrites nothing); the skipped cells are
    this plan's."""
    if not _same_identity(plan):
        return json.dumps(_identity(plan), indent=2) + "\n"
    path = plan.directory / STUDY_FILE
    old = json.loads(path.read_text())
    new = {**{k: v for k, v in old.items() if k != NOT_APPLICABLE}, **_not_applicable(plan)}
    return path.read_text() if new == old else json.dumps(new, indent=2) + "\n"


def read_not_applicable(plan_dir: Path) -> list[dict[str, str]]:
    """The (workload, arm) cells a plan skipped, as recorded in its ``study.json`` (none for a plan
    written before it recorded them)."""
    try:
        return list(json.loads((Path(plan_dir) / STUDY_FILE).read_text()).get(NOT_APPLICABLE) or [])
    except (OSError, ValueError):
        return []


def _stale(plan: Plan, files: dict[Path, str]) -> list[Path]:
    trials_dir = plan.directory / "trials"
    return sorted(p for p in trials_dir.glob("*.json") if p not in files) if trials_dir.is_dir() else []


def _differs(files: dict[Path, str]) -> list[Path]:
    return [p for p, text in files.items() if not (p.is_file() and p.read_text() == text)]


def write_plan(plan: Plan, progress: Callable[..., None] | None = None) -> list[str]:
    """Write the plan; return the trials whose config changed (and so will rerun).

    Writing takes the study directory's run lock (:mod:`..runlock`), held until this process exits:
    while another run holds it, nothing is written, and a plan that differs from the one that run
    is using is refused with one message (the same plan is read as it is, e.g. by ``snakemake -n``).
    A directory planned for another study or other overrides is never replanned."""
    from sdcs_bench.pipeline.runlock import StudyBusy, hold_study_lock

    _check_identity(plan)
    files = render_plan(plan)
    try:
        hold_study_lock(plan.run_dir)
    except StudyBusy as busy:
        if _differs(files) or _stale(plan, files):
            raise SpecSnapError(f"{busy}; its plan differs from this run's, so nothing was written. Wait for it, "
                                "or give this run its own directory with --config name=NAME") from None
        return []
    changed = []
    for path, text in files.items():
        if path in _differs({path: text}):
            atomic_write(path, text)
            if path.parent.name == "trials":
                changed.append(path.stem)
        if progress and path.parent.name == "trials":
            progress()
    for stale in _stale(plan, files):
        stale.unlink()
    # Results that travelled without their modification times (dvc pull): finished stages whose
    # recorded inputs are these very bytes are put back after them in time, so Snakemake keeps them.
    restored = restore_order(plan.run_dir, {t["trial_id"]: list(t["stages"]) for t in plan.trials})
    if restored:
        print(f"specsnap: {len(restored)} finished job(s) in {plan.run_dir} were older than their inputs but made "
              "from the same bytes (checked by SHA-256): kept as done", file=sys.stderr)
    atomic_write(plan.directory.parent / INPUTS_FILE, json.dumps(inputs_record(plan), indent=2) + "\n")
    return changed


def _recorded_identity(plan: Plan) -> dict[str, Any] | None:
    try:
        return json.loads((plan.directory / STUDY_FILE).read_text())
    except (OSError, ValueError):
        return None


def _same_identity(plan: Plan) -> bool:
    old, mine = _recorded_identity(plan), _identity(plan)
    return old is not None and (old.get("study"), old.get("overrides_key"), old.get("subset")) == (
        mine["study"], mine["overrides_key"], mine.get("subset"))


def _check_identity(plan: Plan) -> None:
    old = _recorded_identity(plan)
    if old is None or _same_identity(plan):
        return
    raise SpecSnapError(
        f"{plan.run_dir} holds study {old.get('study')!r} with overrides {old.get('overrides')}; this run asks "
        f"for study {plan.study!r} with overrides {list(plan.overrides)}, so nothing was written. Choose another "
        f"--config name=NAME, or remove {plan.run_dir} to replace it"
    )


def read_cells(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


# A job on a cluster without a shared file system parses the workflow before any file reaches it:
# the main process hands it the cells table in this environment variable (Snakemake's `envvars:`,
# which the Kubernetes executor passes through a Secret), compressed.
CELLS_VAR = "SPECSNAP_PLAN_CELLS"
CELLS_VAR_LIMIT = 120_000  # one environment string must stay under the kernel's 128 KiB


def pack_cells(path: Path) -> str:
    import base64
    import zlib

    packed = base64.b64encode(zlib.compress(Path(path).read_bytes(), 9)).decode()
    if len(packed) > CELLS_VAR_LIMIT:
        raise SpecSnapError(f"this plan's cells table is {len(packed)} bytes packed, more than a job on a cluster "
                            f"without a shared file system can be handed ({CELLS_VAR_LIMIT}); split the study "
                            "into smaller runs (overrides) or use a cluster with a shared file system")
    return packed


def unpack_cells(packed: str) -> list[dict[str, str]]:
    import base64
    import zlib

    text = zlib.decompress(base64.b64decode(packed)).decode()
    return list(csv.DictReader(io.StringIO(text, newline=""), delimiter="\t"))
