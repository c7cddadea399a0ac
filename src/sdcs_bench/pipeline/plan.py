"""Compose conf/ once into a study plan (docs/architecture.md): ``cells.tsv`` plus one resolved config per trial.

Snakemake reads these files and never composes config itself, so a cluster job sees exactly
the plan its run started with, and a config change rewrites (and so reruns) only the trials
it affects: files whose content did not change are not touched.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import itertools
import json
import sys
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.core.errors import SpecSnapError, one_line, unknown
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.pipeline.freshness import restore_order
from sdcs_bench.core.paths import project_root
from sdcs_bench.proxy.server import DEFAULT_UPSTREAMS
from sdcs_bench.sandbox import resolve_backend_name
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial.spec import api_provider
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.pipeline.repos import repo_plan
from sdcs_bench.sandbox.environment import RECORD as ENV_RECORD
from sdcs_bench.sandbox.source import RECORD as SOURCE_RECORD

GRID_AXES = ("workload", "arm", "agent", "variant", "seed")
CELL_COLUMNS = ("trial", "workload", "arm", "agent", "variant", "seed", "reference", "provider", "api", "stages",
                "session_runtime_min", "score_runtime_min", "config", "source", "environment", "image")
API_PROVIDERS = tuple(DEFAULT_UPSTREAMS)  # anthropic, openai, gemini: each a Snakemake resource api_<provider>


@dataclass
class Plan:
    study: str
    directory: Path
    trials: list[dict[str, Any]]
    run: str = ""
    overrides: tuple[str, ...] = ()

    @property
    def study_dir(self) -> Path:
        return self.directory.parent


RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def run_name(study: str, overrides: list[str] | tuple[str, ...] = (), name: str | None = None) -> str:
    """The directory a run writes under ``results/``: the explicit ``name``; else the study's own
    name when there are no overrides; else ``<study>+<digest of the overrides>``, so a run with
    overrides never replaces the study's own results (and the same overrides find their results
    again, however they were spelled)."""
    if name:
        if not RUN_NAME.match(name) or name in (".", ".."):
            raise SpecSnapError(f"run name {name!r} must be letters, digits and _ . + - (not starting with one of those)")
        return name
    if not overrides:
        return study
    return f"{study}+{hashlib.sha256(override_key(overrides).encode()).hexdigest()[:8]}"


def override_key(overrides: list[str] | tuple[str, ...]) -> str:
    """The overrides' meaning, however they were spelled (spaces, order of Hydra overrides)."""
    grid, rest = split_overrides(list(overrides))
    return json.dumps({"grid": grid, "hydra": sorted(rest)}, sort_keys=True)


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
        raise SpecSnapError(f"cannot parse overrides {overrides!r}: {one_line(exc)} (Hydra override grammar)") from None
    for text, override in zip(overrides, parsed):
        key = override.get_key_element()
        if key in GRID_AXES:
            if override.is_sweep_override():
                values = list(override.sweep_string_iterator())
            else:
                value = override.value()
                values = list(value) if isinstance(value, list) else [value]
            if key == "seed":
                bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 0]
                if bad:
                    raise SpecSnapError(f"override {text!r}: seeds must be non-negative integers, got {bad[0]!r}")
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
    from sdcs_bench.sandbox.withhold import check_spec as check_withhold

    stages = ["scaffold"]
    inject = variant.get("inject")
    if variant.get("withhold"):  # before session 1: done by the scaffold, no stage of its own
        check_withhold(workload, variant["withhold"], variant["name"])
    if inject:
        from sdcs_bench.sandbox.poison import VERSIONS, poisonable_workloads

        after = int(inject.get("after_session", 1))
        if inject.get("withhold"):
            check_withhold(workload, inject["withhold"], variant["name"])
        elif not workload.poison:
            raise SpecSnapError(f"variant {variant['name']!r} plants the poison pill, which workload {workload.id} "
                                "does not define", poisonable_workloads())
        elif inject.get("poison") not in VERSIONS:
            raise SpecSnapError(f"variant {variant['name']!r}: unknown poison version {inject.get('poison')!r}", VERSIONS)
        if not 1 <= after < n_sessions:
            raise SpecSnapError(f"variant {variant['name']!r} injects after session {after}, but workload "
                                f"{workload.id} has {n_sessions} session(s): it must fall between two sessions")
    for i in range(1, n_sessions + 1):
        stages.append(f"session_{i}")
        if inject and i == int(inject.get("after_session", 1)):
            stages.append("inject")
    return [*stages, "score"]


def check_policy_fits(workload, agent_cfg: dict[str, Any]) -> None:
    """A reference policy works on the workloads whose competence it has: the fact-driven policies
    (``on_missing_fact``) on workloads that author facts (docs/coherence.md); the gold-patch policies
    elsewhere (a motif's gold spans three files, which a cleave would split) - except ``acts: false``,
    which does nothing anywhere."""
    if not agent_cfg.get("reference") or not agent_cfg.get("policy", {}).get("acts", True):
        return
    from sdcs_bench.sandbox.withhold import withholding_workloads

    fact_driven = bool(agent_cfg["policy"].get("on_missing_fact"))
    if fact_driven and workload.facts is None:
        raise SpecSnapError(f"reference policy {agent_cfg['name']!r} works from authored facts, which workload "
                            f"{workload.id} does not have", withholding_workloads())
    if not fact_driven and workload.facts is not None:
        fact_agents = [a for a in config.options("agent")
                       if config.entity("agent", a).get("policy", {}).get("on_missing_fact")]
        raise SpecSnapError(f"reference policy {agent_cfg['name']!r} writes gold patches, which on workload "
                            f"{workload.id} span the three files of a motif; use a fact-driven policy or ref_null",
                            [*fact_agents, "ref_null"])


def check_agent_ready(agent_cfg: dict[str, Any]) -> dict[str, Any]:
    """Everything a real agent needs, checked before any work starts: a known harness, its binary
    installed, its replay script valid (replay mode) or its API key in the environment (forward).
    Returns the agent as a trial carries it: a replay script's content embedded, so no stage
    reads ``conf/``."""
    from sdcs_bench.agents import make_harness
    from sdcs_bench.agents.credentials import api_key, proxy_mode
    from sdcs_bench.agents.real import RealHarness
    from sdcs_bench.proxy import ReplayScript

    harness = make_harness(agent_cfg)
    if not harness.needs_model:
        return agent_cfg
    if proxy_mode(agent_cfg) == "replay":
        rel = agent_cfg.get("replay_script")
        if not rel:
            raise SpecSnapError(f"agent {agent_cfg['name']!r} runs in replay mode but names no replay_script")
        data = config.read_yaml(project_root() / rel)
        ReplayScript.from_data(data, Path(rel))  # validated now, not mid-session
        agent_cfg = {**agent_cfg, "replay_script_data": data}
    else:
        api_key(agent_cfg)
    if isinstance(harness, RealHarness) and harness.pin is not None:
        harness.binary()
    return agent_cfg


def _relative(path: Path) -> str:
    """A project path as the trial records it: relative to the project root (a cluster node may
    hold the project elsewhere), absolute when it lies outside."""
    try:
        return Path(path).resolve().relative_to(project_root()).as_posix()
    except ValueError:
        return str(Path(path).resolve())


def make_plan(study: str, overrides: list[str] = (), results: Path = Path("results"), name: str | None = None) -> Plan:
    config.check_option("study", study)
    run = run_name(study, overrides, name)
    study_dir = Path(results) / run
    grid_overrides, hydra_overrides = split_overrides(list(overrides))
    try:
        cfg = config.compose([f"study={study}", *hydra_overrides])
    except SpecSnapError:
        raise
    except Exception as exc:  # Hydra's own message names the bad key and the choices
        raise SpecSnapError(f"bad override: {one_line(exc)}") from None
    for key in ("sandbox", "session", "scoring"):
        if not isinstance(cfg.get(key), dict):
            example = {"sandbox": "sandbox.backend=local"}.get(key, f"{key}.timeout_s=600")
            raise SpecSnapError(f"bad override: {key} is a group of settings (e.g. {example}), not {cfg.get(key)!r}")
    grid = {**cfg["study"]["grid"], **grid_overrides}
    _check_grid(grid)
    backend = resolve_backend_name(cfg["sandbox"]["backend"])
    sandboxes: dict[str, dict[str, Any]] = {}  # by agent: docker's image follows the agent's harness
    agents = {name: check_agent_ready(config.entity("agent", name)) for name in grid["agent"]}
    trials = []
    repos: dict[str, dict[str, Any]] = {}
    for wid, arm_name, agent_name, variant_name, seed in itertools.product(*(grid[a] for a in GRID_AXES)):
        workload = load_workload(wid)
        if workload.is_real_repo and wid not in repos:
            repos[wid] = repo_plan(workload, Path(results))
        arm = Arm.from_config(config.entity("arm", arm_name))  # a missing arm file fails here, before any work
        agent_cfg, variant_cfg = agents[agent_name], config.entity("variant", variant_name)
        check_policy_fits(workload, agent_cfg)
        schedule = effective_schedule(workload, variant_cfg)
        tid = trial_id(wid, arm_name, agent_name, variant_name, seed)
        trials.append(
            {
                "trial_id": tid,
                "study": study,
                "run": run,
                "workload": {"id": workload.id, "dir": _relative(workload.root), "fingerprint": workload.fingerprint(),
                             **({"repo": repos[wid]} if wid in repos else {}),
                             **({"generate": {"family": workload.generated[0], "seed": workload.generated[1]}}
                                if workload.generated else {})},
                "arm": arm.for_workload(workload.id, workload.root).to_config(),
                "agent": agent_cfg,
                "variant": variant_cfg,
                "seed": seed,
                "schedule": [
                    {"session": s.name, "prompt_source": s.prompt_source, "prompt": s.prompt, "cleave": str(s.cleave)}
                    for s in schedule
                ],
                "stages": trial_stages(workload, variant_cfg, len(schedule)),
                "sandbox": sandboxes.setdefault(agent_name, sandbox_settings(backend, cfg["sandbox"], Path(results),
                                                                             agent_cfg)),
                "session": cfg["session"],
                "scoring": cfg["scoring"],
            }
        )
    _validate_trials(trials)
    return Plan(study, study_dir / "plan", trials, run, tuple(overrides))


@functools.cache
def _image_digest(name: str, root: str) -> str:
    """Once per image and project in a plan (hashing a context with the Node runtime takes a moment)."""
    from sdcs_bench.sandbox.images import image_digest

    return image_digest(name)[:12]


def sandbox_settings(backend: str, cfg: dict[str, Any], results: Path, agent: dict[str, Any]) -> dict[str, Any]:
    """A trial's sandbox: its backend and, for docker, the image record its stages take as input
    (checked against ``containers/images.yaml`` here, before any work) and the per-container limits."""
    if backend != "docker":
        return {"backend": backend}
    from sdcs_bench.agents.install import pins
    from sdcs_bench.pipeline.layout import CacheLayout
    from sdcs_bench.sandbox.images import engine, image_names

    docker = dict(cfg.get("docker") or {})
    image = str(docker.pop("image", "auto"))
    if image == "auto":  # a real agent CLI runs in the image with its runtime; everything else in base
        image = "harnesses" if agent.get("harness") in pins() else "base"
    if image not in image_names():
        raise unknown("image (sandbox.docker.image)", image, ["auto", *image_names()])
    engine()  # no engine answering is one line now, not a failed job later
    digest = _image_digest(image, str(project_root()))
    return {"backend": backend, "docker": {**docker, "image": image,
                                           "image_record": CacheLayout(str(results)).image_record(image, digest)}}


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
    files = {trials_dir / f"{t['trial_id']}.json": json.dumps(t, indent=2, sort_keys=True) for t in plan.trials}
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(CELL_COLUMNS)
    for t in plan.trials:
        writer.writerow(
            [
                t["trial_id"], t["workload"]["id"], t["arm"]["name"], t["agent"]["name"], t["variant"]["name"],
                t["seed"], str(bool(t["agent"].get("reference"))).lower(), t["agent"].get("provider", "none"),
                api_provider(t["agent"]),
                ",".join(t["stages"]), *runtimes_min(t), (trials_dir / f"{t['trial_id']}.json").as_posix(),
                *repo_records(t), t["sandbox"].get("docker", {}).get("image_record", ""),
            ]
        )
    files[plan.directory / "cells.tsv"] = buf.getvalue()
    for t in plan.trials:  # what the source and environment rules read (rewritten only when a pin changes)
        if t["workload"].get("repo"):
            files[plan.directory / "repos" / f"{t['workload']['id']}.json"] = json.dumps(
                t["workload"]["repo"], indent=2, sort_keys=True)
    ident = plan.directory / STUDY_FILE
    # The first spelling of the overrides is kept: an equal run spelled differently rewrites nothing.
    files[ident] = ident.read_text() if _same_identity(plan) else json.dumps(_identity(plan), indent=2) + "\n"
    return files


STUDY_FILE = "study.json"


def repo_records(trial: dict[str, Any]) -> tuple[str, str]:
    """The cached source's and environment's records a real-repository trial's stages take as
    inputs (``source.json``, ``env.json``); empty for other workloads."""
    repo = trial["workload"].get("repo")
    if not repo:
        return "", ""
    return f"{repo['source_dir']}/{SOURCE_RECORD}", f"{repo['environment_dir']}/{ENV_RECORD}"


def _identity(plan: Plan) -> dict[str, Any]:
    return {"study": plan.study, "run": plan.run, "overrides": list(plan.overrides),
            "overrides_key": override_key(plan.overrides)}


def _stale(plan: Plan, files: dict[Path, str]) -> list[Path]:
    trials_dir = plan.directory / "trials"
    return sorted(p for p in trials_dir.glob("*.json") if p not in files) if trials_dir.is_dir() else []


def _differs(files: dict[Path, str]) -> list[Path]:
    return [p for p, text in files.items() if not (p.is_file() and p.read_text() == text)]


def write_plan(plan: Plan) -> list[str]:
    """Write the plan; return the trials whose config changed (and so will rerun).

    Writing takes the study directory's run lock (:mod:`.runlock`), held until this process exits:
    while another run holds it, nothing is written, and a plan that differs from the one that run
    is using is refused with one message (the same plan is read as it is, e.g. by ``snakemake -n``).
    A directory planned for another study or other overrides is never replanned."""
    from sdcs_bench.pipeline.runlock import StudyBusy, hold_study_lock

    _check_identity(plan)
    files = render_plan(plan)
    try:
        hold_study_lock(plan.study_dir)
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
    for stale in _stale(plan, files):
        stale.unlink()
    # Results that travelled without their modification times (dvc pull): finished stages whose
    # recorded inputs are these very bytes are put back after them in time, so Snakemake keeps them.
    restored = restore_order(plan.study_dir, {t["trial_id"]: list(t["stages"]) for t in plan.trials})
    if restored:
        print(f"specsnap: {len(restored)} finished job(s) in {plan.study_dir} were older than their inputs but made "
              "from the same bytes (checked by SHA-256): kept as done", file=sys.stderr)
    return changed


def _recorded_identity(plan: Plan) -> dict[str, Any] | None:
    try:
        return json.loads((plan.directory / STUDY_FILE).read_text())
    except (OSError, ValueError):
        return None


def _same_identity(plan: Plan) -> bool:
    old, mine = _recorded_identity(plan), _identity(plan)
    return old is not None and (old.get("study"), old.get("overrides_key")) == (mine["study"], mine["overrides_key"])


def _check_identity(plan: Plan) -> None:
    old = _recorded_identity(plan)
    if old is None or _same_identity(plan):
        return
    raise SpecSnapError(
        f"{plan.study_dir} holds study {old.get('study')!r} with overrides {old.get('overrides')}; this run asks "
        f"for study {plan.study!r} with overrides {list(plan.overrides)}, so nothing was written. Choose another "
        f"--config name=NAME, or remove {plan.study_dir} to replace it"
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
