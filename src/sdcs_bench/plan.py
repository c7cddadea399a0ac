"""Compose conf/ once into a study plan (SPEC §9): ``cells.tsv`` plus one resolved config per trial.

Snakemake reads these files and never composes config itself, so a cluster job sees exactly
the plan its run started with, and a config change rewrites (and so reruns) only the trials
it affects: files whose content did not change are not touched.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config
from .arms import Arm
from .errors import SpecSnapError, unknown
from .paths import default_work_root, project_root
from .proxy.server import DEFAULT_UPSTREAMS
from .sandbox import resolve_backend_name
from .schedule import effective_schedule
from .workload import load_workload

GRID_AXES = ("workload", "arm", "agent", "variant", "seed")
CELL_COLUMNS = ("trial", "workload", "arm", "agent", "variant", "seed", "reference", "provider", "api", "stages",
                "config")
API_PROVIDERS = tuple(DEFAULT_UPSTREAMS)  # anthropic, openai, gemini: each a Snakemake resource api_<provider>


def api_provider(agent_cfg: dict[str, Any]) -> str:
    """The provider whose API a session of this agent calls ("none": reference policies, replays)."""
    if agent_cfg.get("reference") or agent_cfg.get("proxy", "forward") != "forward":
        return "none"
    return str(agent_cfg.get("provider", "none"))


@dataclass
class Plan:
    study: str
    directory: Path
    trials: list[dict[str, Any]]


def trial_id(workload: str, arm: str, agent: str, variant: str, seed: int) -> str:
    raw = f"{workload}__{arm}__{agent}__{variant}__s{seed}"
    return re.sub(r"[^A-Za-z0-9_.-]", "-", raw)


def split_overrides(overrides: list[str]) -> tuple[dict[str, list], list[str]]:
    """Overrides of a grid axis (``agent=[a,b]``, ``arm=Vanilla``) replace that axis of the study's
    grid; every other override goes to Hydra as it is."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    grid: dict[str, list] = {}
    rest: list[str] = []
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as exc:
        raise SpecSnapError(f"cannot parse overrides {overrides!r}: {exc}") from None
    for text, override in zip(overrides, parsed):
        key = override.get_key_element()
        if key in GRID_AXES:
            if override.is_sweep_override():
                values = list(override.sweep_string_iterator())
            else:
                value = override.value()
                values = list(value) if isinstance(value, list) else [value]
            grid[key] = [int(v) if key == "seed" else str(v) for v in values]
        else:
            rest.append(text)
    return grid, rest


def _check_grid(grid: dict[str, list]) -> None:
    for axis in GRID_AXES:
        values = grid.get(axis)
        if not values:
            raise SpecSnapError(f"the study grid needs at least one {axis}")
        if axis == "seed":
            if not all(isinstance(v, int) and v >= 0 for v in values):
                raise SpecSnapError(f"seeds must be non-negative integers, got {values}")
            continue
        choices = config.options(axis)
        for value in values:
            if value not in choices:
                raise unknown(axis, str(value), choices)


def trial_stages(workload, variant: dict[str, Any], n_sessions: int) -> list[str]:
    """scaffold, session_1 .. session_N, score; with ``inject`` after the session a variant names."""
    stages = ["scaffold"]
    inject = variant.get("inject")
    if inject:
        from .poison import VERSIONS, poisonable_workloads

        after = int(inject.get("after_session", 1))
        if not workload.poison:
            raise SpecSnapError(f"variant {variant['name']!r} plants the poison pill, which workload {workload.id} "
                                "does not define", poisonable_workloads())
        if inject.get("poison") not in VERSIONS:
            raise SpecSnapError(f"variant {variant['name']!r}: unknown poison version {inject.get('poison')!r}", VERSIONS)
        if not 1 <= after < n_sessions:
            raise SpecSnapError(f"variant {variant['name']!r} injects after session {after}, but workload "
                                f"{workload.id} has {n_sessions} session(s): it must fall between two sessions")
    for i in range(1, n_sessions + 1):
        stages.append(f"session_{i}")
        if inject and i == int(inject.get("after_session", 1)):
            stages.append("inject")
    return [*stages, "score"]


def check_agent_ready(agent_cfg: dict[str, Any]) -> None:
    """Everything a real agent needs, checked before any work starts: a known harness, its binary
    installed, its replay script valid (replay mode) or its API key in the environment (forward)."""
    from .agents import make_harness
    from .agents.real import RealHarness, api_key, proxy_mode
    from .proxy import ReplayScript

    harness = make_harness(agent_cfg)
    if not harness.needs_model:
        return
    if proxy_mode(agent_cfg) == "replay":
        rel = agent_cfg.get("replay_script")
        if not rel:
            raise SpecSnapError(f"agent {agent_cfg['name']!r} runs in replay mode but names no replay_script")
        ReplayScript.load(project_root() / rel)
    else:
        api_key(agent_cfg)
    if isinstance(harness, RealHarness) and harness.pin is not None:
        harness.binary()


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def make_plan(study: str, overrides: list[str] = (), results: Path = Path("results")) -> Plan:
    config.check_option("study", study)
    grid_overrides, hydra_overrides = split_overrides(list(overrides))
    try:
        cfg = config.compose([f"study={study}", *hydra_overrides])
    except Exception as exc:  # Hydra's own message names the bad key and the choices
        raise SpecSnapError(f"bad override: {exc}") from None
    grid = {**cfg["study"]["grid"], **grid_overrides}
    _check_grid(grid)
    backend = resolve_backend_name(cfg["sandbox"]["backend"])
    for agent_name in grid["agent"]:
        check_agent_ready(config.entity("agent", agent_name))
    trials = []
    for wid, arm_name, agent_name, variant_name, seed in itertools.product(*(grid[a] for a in GRID_AXES)):
        workload = load_workload(wid)
        arm_cfg = config.entity("arm", arm_name)
        agent_cfg, variant_cfg = config.entity("agent", agent_name), config.entity("variant", variant_name)
        arm = Arm.from_config(arm_cfg)  # fails here, before any work, if an arm file is missing
        schedule = effective_schedule(workload, variant_cfg)
        tid = trial_id(wid, arm_name, agent_name, variant_name, seed)
        trials.append(
            {
                "trial_id": tid,
                "study": study,
                "workload": {"id": workload.id, "fingerprint": workload.fingerprint()},
                "arm": arm_cfg,
                "arm_digest": _digest([[f.path, f.text, f.generator, f.options] for f in arm.files]),
                "agent": agent_cfg,
                "variant": variant_cfg,
                "seed": seed,
                "schedule": [
                    {"session": s.name, "prompt": s.prompt_source, "cleave": str(s.cleave)} for s in schedule
                ],
                "stages": trial_stages(workload, variant_cfg, len(schedule)),
                "sandbox": {"backend": backend},
                "session": cfg["session"],
                "scoring": cfg["scoring"],
                "work_dir": str(default_work_root() / study / tid),
            }
        )
    _validate_trials(trials)
    return Plan(study, Path(results) / study / "plan", trials)


def _validate_trials(trials: list[dict]) -> None:
    import jsonschema
    import yaml

    schema = yaml.safe_load((project_root() / "workflow" / "schemas" / "trial.schema.yaml").read_text())
    for trial in trials:
        try:
            jsonschema.validate(trial, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(map(str, exc.absolute_path)) or "(top level)"
            raise SpecSnapError(f"trial {trial['trial_id']}: config invalid at {where}: {exc.message}") from None


def _write_if_changed(path: Path, text: str) -> bool:
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return True


def write_plan(plan: Plan) -> list[str]:
    """Write the plan; return the trials whose config changed (and so will rerun)."""
    trials_dir = plan.directory / "trials"
    changed = []
    for trial in plan.trials:
        if _write_if_changed(trials_dir / f"{trial['trial_id']}.json", json.dumps(trial, indent=2, sort_keys=True)):
            changed.append(trial["trial_id"])
    keep = {f"{t['trial_id']}.json" for t in plan.trials}
    for stale in trials_dir.glob("*.json"):
        if stale.name not in keep:
            stale.unlink()
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(CELL_COLUMNS)
    for t in plan.trials:
        writer.writerow(
            [
                t["trial_id"], t["workload"]["id"], t["arm"]["name"], t["agent"]["name"], t["variant"]["name"],
                t["seed"], str(bool(t["agent"].get("reference"))).lower(), t["agent"].get("provider", "none"),
                api_provider(t["agent"]),
                ",".join(t["stages"]), (trials_dir / f"{t['trial_id']}.json").as_posix(),
            ]
        )
    _write_if_changed(plan.directory / "cells.tsv", buf.getvalue())
    return changed


def read_cells(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))
