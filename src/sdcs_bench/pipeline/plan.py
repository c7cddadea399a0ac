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
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import Any

from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.core.errors import SpecSnapError, one_line, unknown
from sdcs_bench.core.fsutil import TMP_PREFIX, atomic_write
from sdcs_bench.core.paths import conf_dir, project_root, study_work_root
from sdcs_bench.core.prices import PriceTable
from sdcs_bench.pipeline.freshness import restore_order
from sdcs_bench.proxy.server import DEFAULT_UPSTREAMS
from sdcs_bench.sandbox import resolve_backend_name
from sdcs_bench.sandbox.limits import Limits
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial.standards import layout_for
from sdcs_bench.trial.spec import api_provider
from sdcs_bench.trial.continuation import RESET, Continuation, handoff_stage
from sdcs_bench.trial.workload import CleaveRule, load_workload
from sdcs_bench.pipeline.repos import repo_plan
from sdcs_bench.pipeline.stability import Subset, subset_trials
from sdcs_bench.sandbox.environment import RECORD as ENV_RECORD
from sdcs_bench.sandbox.source import RECORD as SOURCE_RECORD

GRID_AXES = ("workload", "arm", "agent", "variant", "seed", "successor", "continuation")
# ``successor``: the agent that runs every session after the first (docs/protocol.md#handoff);
# ``same`` (the default, when a study's grid names no successor) is the first agent itself.
SAME = "same"
HANDOFF = ".then."  # in a trial's agent name: <first agent>.then.<successor>
# ``continuation``: how every session after the first continues (trial/continuation.py); ``reset``
# (the default) is SpecSnap's zero-history session, and its trials keep the ids they always had.
CELL_COLUMNS = ("trial", "workload", "arm", "agent", "variant", "seed", "reference", "provider", "api", "stages",
                "session_runtime_min", "score_runtime_min", "config", "source", "environment", "image",
                "score_image", "baseline", "successor_api")
API_PROVIDERS = tuple(DEFAULT_UPSTREAMS)  # anthropic, openai, gemini: each a Snakemake resource api_<provider>


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

    @property
    def study_dir(self) -> Path:
        return self.directory.parent


RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def check_run_config(run_config: dict[str, Any], schema: Path) -> None:
    """The keys and types of a run's ``snakemake --config``: a key the schema does not know, or
    ``overrides`` that is not a list of strings, is one error naming what is valid."""
    import yaml

    known = yaml.safe_load(schema.read_text())["properties"]
    unknown = sorted(set(run_config) - set(known))
    if unknown:
        raise SpecSnapError(f"unknown --config key {unknown[0]!r}", sorted(known))
    overrides = run_config.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise SpecSnapError(f"--config overrides is a list of Hydra overrides, e.g. overrides='[\"arm=[Vanilla]\"]', "
                            f"not {overrides!r}")
    for key in ("study", "name", "results"):
        if key in run_config and not isinstance(run_config[key], str):
            raise SpecSnapError(f"--config {key} is one word, not {run_config[key]!r}")


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


def trial_id(workload: str, arm: str, agent: str, variant: str, seed: int, continuation: str = RESET) -> str:
    part = Continuation.parse(continuation).id_part
    raw = f"{workload}__{arm}__{agent}__{variant}__s{seed}" + (f"__{part}" if part else "")
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
                # seeds as numbers (a range sweep, seed=range(16), is numbers, not its strings)
                values = list(override.sweep_iterator() if key == "seed" else override.sweep_string_iterator())
            else:
                value = override.value()
                values = list(value) if isinstance(value, list) else [value]
            if key == "seed":
                bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 0]
                if bad:
                    raise SpecSnapError(f"override {text!r}: seeds must be non-negative integers, got {bad[0]!r}")
            grid[key] = [int(v) if key == "seed" else str(v) for v in values]
        else:
            if not (override.is_add() or override.is_force_add() or override.is_delete()):
                _check_setting(override.key_or_group, text)
            rest.append(text)
    return grid, rest


def _check_setting(key: str, text: str) -> None:
    """An override of a setting that does not exist (a misspelt axis, ``agnt=[...]``, or a misspelt
    key, ``sandbox.backnd=local``) is one line naming the valid choices at that level, before Hydra
    answers with its advice to append a new key."""
    top = config.read_yaml(config.conf_dir() / "config.yaml")
    settings = {k: v for k, v in top.items() if k != "defaults"}
    parts = key.split(".")
    if parts[0] in ("study", "hydra"):
        return  # the study's own file (a group) and Hydra's settings: Hydra's own check stands
    if parts[0] not in settings:
        raise SpecSnapError(f"override {text!r}: unknown setting {parts[0]!r}; grid axes: {', '.join(sorted(GRID_AXES))}; "
                            f"settings: {', '.join(sorted(settings))} (dotted, e.g. sandbox.backend=local)")
    level: object = settings[parts[0]]
    for depth, part in enumerate(parts[1:], start=1):
        if not isinstance(level, dict) or not level:
            return  # a free-form mapping (agent options): any key
        if part not in level:
            where = ".".join(parts[:depth])
            raise SpecSnapError(f"override {text!r}: {where} has no setting {part!r}; valid choices: "
                                f"{', '.join(sorted(level))}")
        level = level[part]


def _check_grid(grid: dict[str, list]) -> None:
    for axis in GRID_AXES:
        values = grid.get(axis)
        if not values:
            raise SpecSnapError(f"the study grid needs at least one {axis}")
        if axis == "seed":
            if not all(isinstance(v, int) and v >= 0 for v in values):
                raise SpecSnapError(f"seeds must be non-negative integers, got {values}")
            continue
        for value in values:
            if axis == "continuation":
                Continuation.parse(str(value))
                continue
            if axis == "successor":
                if str(value) != SAME and str(value) not in config.options("agent"):
                    raise unknown("successor", str(value), [SAME, *config.options("agent")])
                continue
            config.check_option(axis, str(value))  # (a variant may be composed: a+b)


def handoff_name(agent: str, successor: str) -> str:
    """The name a trial's agent goes by: the agent, or ``<agent>.then.<successor>`` for a handoff."""
    return agent if successor in (SAME, agent) else f"{agent}{HANDOFF}{successor}"


def _runs_alone(agent_cfg: dict[str, Any]) -> bool:
    """A fact-driven or standards reference policy (one that acts): it keeps state of its own kind
    (facts found, a task queue) and has no meter; its closed form is defined for a trial it runs
    alone, cut by edits."""
    policy = agent_cfg.get("policy", {}) if agent_cfg.get("reference") else {}
    return bool(policy.get("acts", True) and (policy.get("on_missing_fact") or policy.get("standards")))


def check_handoff(first: dict[str, Any], second: dict[str, Any], workload) -> None:
    """A handoff runs with any pair of agents but the policies that run a whole trial alone."""
    for cfg in (first, second):
        if _runs_alone(cfg):
            raise SpecSnapError(f"reference policy {cfg['name']!r} runs a whole trial alone; hand off between "
                                "gold-patch reference policies (ref_oracle, ref_amnesiac, ref_verbatim_notes, ...) "
                                "or real agents")


def trial_stages(workload, variant: dict[str, Any], n_sessions: int, continuation: Continuation = Continuation()) -> list[str]:
    """scaffold, session_1 .. session_N, score; with ``inject`` after the session a variant names,
    and a ``handoff_<k>`` right before every session k >= 2 in a continuation mode but ``reset``."""
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
        if i >= 2 and not continuation.is_reset:
            stages.append(handoff_stage(i))
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


def check_continuation(cont: Continuation, first: dict[str, Any], second: dict[str, Any] | None,
                       n_sessions: int = 2) -> None:
    """A continuation mode every agent of the trial can do headless, before any work: one line
    naming the harness and why it cannot (its adapter declares it), or the policy that cannot; for
    a summary by a replay agent, its script's entries for each handoff's model call."""
    from sdcs_bench.agents import make_harness

    for cfg in (first, second) if second is not None else (first,):
        if _runs_alone(cfg):
            raise SpecSnapError(f"continuation {cont} is refused for reference policy {cfg['name']!r}: it runs a whole "
                                "trial from its own state (facts found, a task queue); use a gold-patch reference "
                                "policy or a real agent")
        why = make_harness(cfg).unsupported_continuations.get(cont.mode)
        if why:
            raise SpecSnapError(f"continuation {cont} is refused for agent {cfg['name']!r} (harness {cfg['harness']}): "
                                f"{why}")
    if cont.mode == "summary":
        for k in range(2, n_sessions + 1):
            who = second if second is not None and k > 2 else first  # (the agent of the session handed over)
            sessions = (who.get("replay_script_data") or {}).get("sessions") or {}
            if who.get("proxy") == "replay" and f"handoff_{k}" not in sessions and "*" not in sessions:
                raise SpecSnapError(f"continuation summary needs the model call of handoff_{k}, which the replay script "
                                    f"of agent {who['name']!r} ({who.get('replay_script')}) does not script: add "
                                    f"entries under sessions: handoff_{k}")
    if cont.carries_state and second is not None and second["harness"] != first["harness"]:
        raise SpecSnapError(f"continuation {cont} resumes the first agent's own conversation, which "
                            f"{second['name']!r} (harness {second['harness']}) cannot: hand off with trace:<budget> "
                            "or summary")


def continuation_block(cont: Continuation) -> dict[str, Any]:
    """The trial file's ``continuation``: the mode and, for ``summary``, the versioned prompt (the
    stages read no conf/)."""
    block: dict[str, Any] = {"name": str(cont), "mode": cont.mode}
    if cont.budget is not None:
        block["budget"] = cont.budget
    if cont.mode == "summary":
        block["summary_prompt"] = config.read_yaml(conf_dir() / "continuation" / "summary.yaml")
    return block


CONTROL_VARIANT = "uninterrupted"  # the run whose tokens a cut at a share of them is measured against


def _link_controls(trials: list[dict[str, Any]]) -> None:
    """A trial cut at a share of the uninterrupted run's tokens needs that run in the same study;
    the control keeps its meter (``keep_meter``: a reference policy's is counted only where read)."""
    planned = {t["trial_id"] for t in trials}
    controls = {t["token_baseline"]["trial"] for t in trials if "token_baseline" in t}
    for t in trials:
        if t["trial_id"] in controls:
            t["keep_meter"] = True
    missing = sorted(controls - planned)
    if missing:
        variants = sorted({t["variant"]["name"] for t in trials if t.get("token_baseline", {}).get("trial") in missing})
        raise SpecSnapError(f"variant {', '.join(variants)} cuts at a share of the uninterrupted run's tokens, and the "
                            f"study does not run that control ({missing[0]}{' and more' if len(missing) > 1 else ''}): "
                            f"add the variant {CONTROL_VARIANT!r} to the study's grid")


def check_policy_meters(agent_cfg: dict[str, Any], variant_cfg: dict[str, Any], schedule: list[CleaveRule]) -> None:
    """A token or turn cut rule counts model calls; a reference policy stands in with its meter,
    which only the gold-patch policies keep (docs/protocol.md#cut-points): the fact-driven and the
    standards policies refuse such a rule here, before any work."""
    rules = sorted({str(rule) for rule in schedule if rule.metered})
    if rules and _runs_alone(agent_cfg):
        raise SpecSnapError(f"variant {variant_cfg.get('name')!r} cuts by {', '.join(rules)}, which reference policy "
                            f"{agent_cfg['name']!r} does not meter; use an edit rule (nth_py_edit:N) with it, or a "
                            "gold-patch reference policy or a real agent")


def check_agent_ready(agent_cfg: dict[str, Any], key: bool = True) -> dict[str, Any]:
    """Everything a real agent needs, checked before any work starts: a known harness, its binary
    installed, its replay script valid (replay mode) or its API key in the environment (forward).
    Returns the agent as a trial carries it: a replay script's content embedded, so no stage
    reads ``conf/``. ``key=False``: the key is not asked for (a plan that runs nothing: an estimate)."""
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
        if isinstance(data.get("sessions"), dict):  # (keys as the trial file's JSON holds them: 1, handoff_2)
            data = {**data, "sessions": {str(k): v for k, v in data["sessions"].items()}}
        agent_cfg = {**agent_cfg, "replay_script_data": data}
    elif key:
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


def make_plan(study: str, overrides: list[str] = (), results: Path = Path("results"), name: str | None = None,
              progress: Callable[..., None] | None = None, subset: Subset | None = None, keys: bool = True) -> Plan:
    """The plan of a study (``keys=False``: without asking for API keys, for a plan that runs nothing)."""
    config.check_option("study", study)
    run = run_name(study, overrides, name or (subset.default_name if subset else None))
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
    grid = {"successor": [SAME], "continuation": [RESET], **cfg["study"]["grid"], **grid_overrides}
    _check_grid(grid)
    config.prefetch((axis, name) for axis in ("agent", "arm", "variant") for name in grid[axis])
    backend = resolve_backend_name(cfg["sandbox"]["backend"])
    Limits.from_config(cfg["sandbox"].get("limits"))  # a bad limit is one line, before any work
    agents = {name: check_agent_ready(config.entity("agent", name), key=keys)
              for name in dict.fromkeys([*grid["agent"], *(s for s in grid["successor"] if s != SAME)])}
    check_unconfined(backend, cfg["sandbox"], agents.values())
    trials = []
    full_check = []  # per trial: validate all of it, or only what differs from an equal trial of another seed
    # Everything a trial holds but its seed is worked out once per workload, arm, variant and pair of
    # them (a fingerprint reads every file of the workload): a large grid costs a dict per trial.
    # Trials share these parts (json.dumps only reads them); the first failing combination still
    # raises first, as the grid is walked in the same order.
    workloads: dict[str, tuple[Any, dict[str, Any]]] = {}
    arms: dict[str, Arm] = {}
    arm_cfgs: dict[tuple[str, str], dict[str, Any]] = {}
    variants: dict[str, dict[str, Any]] = {}
    schedules: dict[tuple[str, str], tuple[list[dict[str, str]], list[str], list[CleaveRule]]] = {}
    seen: set[tuple[str, str, str, str]] = set()
    sources: set[str] = set()
    metered: set[tuple[str, str, str]] = set()
    sandboxes: dict[tuple[str, str], dict[str, Any]] = {}  # docker's images follow the agent and the workload
    planned: set[str] = set()
    continued: dict[tuple[str, str, str, int], dict[str, Any]] = {}  # the continuation block, per agent pair, mode, sessions
    for wid, arm_name, agent_name, variant_name, seed, successor, cont_name in itertools.product(
            *(grid[a] for a in GRID_AXES)):
        if progress:
            progress()
        successor = SAME if successor == agent_name else successor
        cont = Continuation.parse(str(cont_name))
        if trial_id(wid, arm_name, handoff_name(agent_name, successor), variant_name, seed, str(cont)) in planned:
            continue  # (a successor equal to the agent: the trial without a handoff, planned once)
        if wid not in workloads:
            workload = load_workload(wid)
            record = {"id": workload.id, "dir": _relative(workload.root), "fingerprint": workload.fingerprint()}
            if workload.is_real_repo:
                record["repo"] = repo_plan(workload, Path(results))
            if workload.generated:
                record["generate"] = {"family": workload.generated[0], "seed": workload.generated[1]}
            workloads[wid] = workload, record
            sources.add(record["dir"])
        workload, workload_record = workloads[wid]
        if arm_name not in arms:  # a missing arm file fails here, before any work
            arm_entity = config.entity("arm", arm_name)
            arms[arm_name] = Arm.from_config(arm_entity)
            sources.update(_arm_sources(arm_entity))
        if (arm_name, wid) not in arm_cfgs:
            arm_cfgs[arm_name, wid] = arms[arm_name].for_workload(workload.id, workload.root).to_config()
        if variant_name not in variants:
            variants[variant_name] = config.entity("variant", variant_name)
        agent_cfg, variant_cfg = agents[agent_name], variants[variant_name]
        if (agent_name, wid) not in sandboxes:  # a policy that cannot run this workload fails here
            check_policy_fits(workload, agent_cfg)
        second = agents[successor] if successor != SAME else None
        if second is not None and (successor, wid) not in sandboxes:
            check_policy_fits(workload, second)
            check_handoff(agent_cfg, second, workload)
        if (wid, variant_name, str(cont)) not in schedules:
            schedule = effective_schedule(workload, variant_cfg)
            layout_for(workload, variant_cfg)  # a standards layout the workload cannot take fails here
            schedules[wid, variant_name, str(cont)] = (
                [{"session": s.name, "prompt_source": s.prompt_source, "prompt": s.prompt, "cleave": str(s.cleave)}
                 for s in schedule],
                trial_stages(workload, variant_cfg, len(schedule), cont),
                [s.cleave for s in schedule],
            )
        schedule_cfg, stages, rules = schedules[wid, variant_name, str(cont)]
        if len(schedule_cfg) == 1 and not cont.is_reset:
            # One session (the uninterrupted control): nothing continues, in any mode; it is the reset
            # trial, planned once (and the control every mode's share cut is measured against).
            cont = Continuation()
            if trial_id(wid, arm_name, handoff_name(agent_name, successor), variant_name, seed) in planned:
                continue
        if not cont.is_reset and (variant_cfg.get("inject") or {}).get("withhold"):
            raise SpecSnapError(f"continuation {cont} is refused with variant {variant_name!r}: it withholds facts after "
                                "the cut, and a trace, a summary or a resumed conversation would carry them across; "
                                "run it with continuation reset")
        if not cont.is_reset and (agent_name, successor, str(cont), len(schedule_cfg)) not in continued:
            check_continuation(cont, agent_cfg, second, len(schedule_cfg))
            continued[agent_name, successor, str(cont), len(schedule_cfg)] = continuation_block(cont)
        for who in (agent_cfg, second) if second is not None else (agent_cfg,):
            if (who["name"], wid, variant_name) not in metered:
                check_policy_meters(who, variant_cfg, rules)
                metered.add((who["name"], wid, variant_name))
        if (agent_name, wid) not in sandboxes:
            sandboxes[agent_name, wid] = sandbox_settings(backend, cfg["sandbox"], Path(results), agent_cfg, workload)
        if second is not None and (successor, wid) not in sandboxes:
            sandboxes[successor, wid] = sandbox_settings(backend, cfg["sandbox"], Path(results), second, workload)
            if sandboxes[successor, wid] != sandboxes[agent_name, wid]:
                raise SpecSnapError(f"a handoff from {agent_name} to {successor} on {wid} needs one sandbox for both, "
                                    f"and the {backend} backend gives them different images; name one image that "
                                    "holds both harnesses (sandbox.docker.image=harnesses) or use bwrap")
        name = handoff_name(agent_name, successor)
        tid = trial_id(wid, arm_name, name, variant_name, seed, str(cont))
        planned.add(tid)
        baseline = ({"token_baseline": {"trial": trial_id(wid, arm_name, name, CONTROL_VARIANT, seed)}}
                    if any(rule.needs_baseline for rule in rules) else {})
        trials.append(
            {
                "trial_id": tid,
                "study": study,
                "run": run,
                "workload": workload_record,
                "arm": arm_cfgs[arm_name, wid],
                "agent": agent_cfg,
                **({"successor": second} if second is not None else {}),
                **({"continuation": continued[agent_name, successor, str(cont), len(schedule_cfg)]}
                   if not cont.is_reset else {}),
                "variant": variant_cfg,
                "seed": seed,
                "schedule": schedule_cfg,
                **baseline,
                "stages": stages,
                "sandbox": sandboxes[agent_name, wid],
                "session": cfg["session"],
                "scoring": cfg["scoring"],
            }
        )
        combo = (wid, arm_name, name, variant_name, str(cont))
        full_check.append(combo not in seen)
        seen.add(combo)
    if backend == "docker":  # the images' build contexts and what they copy in: a change plans new images
        sources.update(_image_sources({s["docker"][k] for s in sandboxes.values() for k in ("image", "score_image")}))
    _link_controls(trials)
    _validate_trials(trials, full_check)
    prices = read_prices()
    budget = _budget(cfg)
    if subset is not None:
        trials = _subset(trials, subset, study, list(overrides), Path(results))
    return Plan(study, study_dir / "plan", trials, run, tuple(overrides), tuple(sorted(sources)), agents,
                statistics=_statistics(cfg), prices=prices.to_dict(), budget=budget,
                subset=subset.to_dict() if subset else None)


BUDGET_KEYS = ("max_usd", "trial_max_usd")
PRICE_REPLAY = "price_replay"  # replay calls priced at list prices, for a test of the budget itself


def _budget(cfg: dict[str, Any]) -> dict[str, Any]:
    """The ``budget`` settings (docs/cost.md): ``max_usd`` for the run, ``trial_max_usd`` for any one
    trial, each a number > 0 or null; ``price_replay``, true or false."""
    budget = dict(cfg.get("budget") or {})
    unknown_keys = sorted(set(budget) - {*BUDGET_KEYS, PRICE_REPLAY})
    if unknown_keys:
        raise SpecSnapError(f"unknown budget setting {unknown_keys[0]!r}", (*BUDGET_KEYS, PRICE_REPLAY))
    price_replay = budget.get(PRICE_REPLAY, False)
    if not isinstance(price_replay, bool):
        raise SpecSnapError(f"budget.{PRICE_REPLAY} is {price_replay!r}: true or false")
    return {**{k: check_limit(f"budget.{k}", budget.get(k)) for k in BUDGET_KEYS}, PRICE_REPLAY: price_replay}


def check_limit(name: str, value: Any) -> float | None:
    """A budget limit: a number of dollars > 0, or None (no limit)."""
    if value is None or value == "null":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not 0 < number < float("inf"):
        raise SpecSnapError(f"{name} is {value!r}: a number of dollars > 0, or null for no limit")
    return number


def _subset(trials: list[dict[str, Any]], subset: Subset, study: str, overrides: list[str],
            results: Path) -> list[dict[str, Any]]:
    """The trials of a rerun batch (docs/statistics.md#run-to-run-stability): those of the chosen
    cells of the finished run ``subset.of``, which must hold this very study and overrides."""
    finished = results / subset.of / "plan"
    try:
        recorded = json.loads((finished / STUDY_FILE).read_text())
        cells = read_cells(finished / "cells.tsv")
    except (OSError, ValueError) as exc:
        raise SpecSnapError(f"rerun_of={subset.of}: no finished run's plan at {finished} ({exc})") from None
    if (recorded.get("study"), recorded.get("overrides_key")) != (study, override_key(overrides)):
        raise SpecSnapError(f"rerun_of={subset.of} holds study {recorded.get('study')!r} with overrides "
                            f"{recorded.get('overrides')}; a rerun repeats its trials, so it takes the same study and "
                            f"overrides (specsnap rerun --from {subset.of} reads them for you)")
    chosen = subset_trials(cells, subset)
    kept = [t for t in trials if t["trial_id"] in chosen]
    missing = sorted(chosen - {t["trial_id"] for t in kept})
    if missing:
        raise SpecSnapError(f"rerun_of={subset.of}: {len(missing)} of its chosen trials are no longer in the study as "
                            f"planned now (e.g. {missing[0]}): the config changed since it ran")
    return kept


def read_prices() -> PriceTable:
    """``conf/prices.yaml`` (docs/cost.md), checked: the plan carries it (``plan/prices.json``) to the
    stages that price calls and to the aggregate. No file: an empty table (every cost unknown)."""
    import yaml

    path = conf_dir() / PRICES_CONF
    return PriceTable.parse(yaml.safe_load(path.read_text()) if path.is_file() else None)


def _statistics(cfg: dict[str, Any]) -> dict[str, Any]:
    """The ``statistics`` settings (docs/statistics.md), checked before any work."""
    from sdcs_bench.pipeline.stats import Settings

    try:
        return Settings.from_config(cfg.get("statistics")).to_dict()
    except (ValueError, TypeError) as exc:
        raise SpecSnapError(f"bad statistics settings: {exc}") from None


@functools.cache
def _image_digest(name: str, root: str, results: str) -> str:
    """Once per image and project in a plan (hashing a context with the Node runtime takes a moment)."""
    from sdcs_bench.pipeline.images import carried
    from sdcs_bench.sandbox.images import image_digest

    return image_digest(name, carried(name, results))[:12]


def _image_sources(images: set[str]) -> set[str]:
    """The files an image's digest reads, for the plan's record of its inputs: the catalogue, the
    harness pins (a generated image's key), and each image's and its parents' host files."""
    from sdcs_bench.sandbox.images import host_files, parent_image

    out = {"containers", "harnesses/pins.yaml"}
    todo = list(images)
    while todo:
        name = todo.pop()
        out.update(str(p) for p in host_files(name))
        parent = parent_image(name)
        if parent:
            todo.append(parent)
    return out


def check_unconfined(backend: str, cfg: dict[str, Any], agents: Any) -> None:
    """The ``local`` backend runs an agent unconfined on the host (it reads what the user can read,
    reaches the host's network): with a real agent (not a reference policy) only when the user says
    so (``sandbox.allow_unconfined=true``), and then said once, before any work."""
    real = sorted(a["name"] for a in agents if not a.get("reference"))
    if backend != "local" or not real:
        return
    if not cfg.get("allow_unconfined"):
        raise SpecSnapError(f"the local sandbox backend would run {', '.join(real)} unconfined on this host (it could "
                            "read your files and keys and reach your network); use bwrap or docker, or say "
                            "sandbox.allow_unconfined=true to run it so anyway", ("bwrap", "docker"))
    print(f"specsnap: {', '.join(real)} will run UNCONFINED on this host (sandbox backend local, "
          "sandbox.allow_unconfined=true)", file=sys.stderr)


def sandbox_settings(backend: str, cfg: dict[str, Any], results: Path, agent: dict[str, Any],
                     workload: Any) -> dict[str, Any]:
    """A trial's sandbox: its backend and, for docker, the images its sessions and its scoring run
    in, with the records their build_image jobs write (the stages take them as input; checked
    against ``containers/images.yaml`` here, before any work), and the per-container limits."""
    limits = Limits.from_config(cfg.get("limits")).to_dict()
    if backend != "docker":
        return {"backend": backend, "limits": limits}
    from sdcs_bench.agents.install import harness_home, pins
    from sdcs_bench.pipeline.layout import CacheLayout
    from sdcs_bench.sandbox.images import carriable, engine, family_names, image_names

    docker = dict(cfg.get("docker") or {})
    image = str(docker.pop("image", "auto"))
    choices = ["auto", *image_names()]
    if image not in choices:
        raise unknown("image (sandbox.docker.image)", image, choices)
    # auto: a real repository's scoring runs in its environment's image, and so do its sessions
    # unless the agent is a real harness CLI, which runs in its own image.
    # (Not where what the image would carry lies under /tmp, which each container's private /tmp hides:
    # the parent image then runs with the host's copy mounted, as a named image does.)
    env = (f"env-{workload.id}" if workload.is_real_repo and "env" in family_names()
           and carriable(CacheLayout(str(results)).root) else None)
    harness = agent.get("harness") if agent.get("harness") in pins() and carriable(harness_home()) else None
    if image == "auto":
        session = (f"harness-{harness}" if harness and "harness" in family_names()
                   else env or ("harnesses" if agent.get("harness") in pins() else "base"))
        score = env or "base"
    else:
        session = score = image
    engine()  # no engine answering is one line now, not a failed job later
    cache = CacheLayout(str(results))
    record = {name: cache.image_record(name, _image_digest(name, str(project_root()), str(results)))
              for name in {session, score}}
    return {"backend": backend, "limits": limits, "docker": {**docker, "image": session, "image_record": record[session],
                                           "score_image": score, "score_image_record": record[score]}}


def _arm_sources(arm_cfg: dict[str, Any]) -> list[str]:
    """The project files an arm's ``source:`` entries read (a workload's own files are covered by
    its directory)."""
    out = []
    for raw in arm_cfg.get("files") or []:
        src = raw.get("source")
        if isinstance(src, (str, list)):
            out += [str(s) for s in (src if isinstance(src, list) else [src])]
    return out


# What differs between two trials that differ only by seed (everything else is shared, see make_plan).
SEED_KEYS = ("trial_id", "seed")


def _validate_trials(trials: list[dict], full: list[bool] | None = None) -> None:
    """Check every trial against ``workflow/schemas/trial.schema.yaml``. The schema is checked and
    compiled once; a trial that equals an already validated one but for its seed (``full`` false)
    is checked on the keys that differ (:data:`SEED_KEYS`)."""
    import jsonschema
    import yaml

    schema = yaml.safe_load((project_root() / "workflow" / "schemas" / "trial.schema.yaml").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    seed_only = cls({"type": "object", "required": [k for k in SEED_KEYS if k in schema.get("required", ())],
                     "properties": {k: v for k, v in schema.get("properties", {}).items() if k in SEED_KEYS}})
    for i, trial in enumerate(trials):
        error = jsonschema.exceptions.best_match((validator if full is None or full[i] else seed_only).iter_errors(trial))
        if error is not None:
            where = "/".join(map(str, error.absolute_path)) or "(top level)"
            raise SpecSnapError(f"trial {trial['trial_id']}: config invalid at {where}: {error.message}") from None


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
    ident = plan.directory / STUDY_FILE
    # The first spelling of the overrides is kept: an equal run spelled differently rewrites nothing.
    files[ident] = ident.read_text() if _same_identity(plan) else json.dumps(_identity(plan), indent=2) + "\n"
    return files


STUDY_FILE = "study.json"
STATISTICS_FILE = "statistics.json"  # (StudyLayout.statistics_file)
PRICES_FILE = "prices.json"  # (StudyLayout.prices_file)
PRICES_CONF = "prices.yaml"
BUDGET_FILE = "budget.json"  # (StudyLayout.budget_file)


def trial_json(trial: dict[str, Any], parts: dict[int, str] | None = None) -> str:
    """``json.dumps(trial, indent=2, sort_keys=True)``, character for character, with each top-level
    value a trial shares with others (its arm, agent, workload, schedule: see :func:`make_plan`)
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
            "overrides_key": override_key(plan.overrides), **({"subset": plan.subset} if plan.subset else {})}


def _stale(plan: Plan, files: dict[Path, str]) -> list[Path]:
    trials_dir = plan.directory / "trials"
    return sorted(p for p in trials_dir.glob("*.json") if p not in files) if trials_dir.is_dir() else []


def _differs(files: dict[Path, str]) -> list[Path]:
    return [p for p, text in files.items() if not (p.is_file() and p.read_text() == text)]


def write_plan(plan: Plan, progress: Callable[..., None] | None = None) -> list[str]:
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
        if progress and path.parent.name == "trials":
            progress()
    for stale in _stale(plan, files):
        stale.unlink()
    # Results that travelled without their modification times (dvc pull): finished stages whose
    # recorded inputs are these very bytes are put back after them in time, so Snakemake keeps them.
    restored = restore_order(plan.study_dir, {t["trial_id"]: list(t["stages"]) for t in plan.trials})
    if restored:
        print(f"specsnap: {len(restored)} finished job(s) in {plan.study_dir} were older than their inputs but made "
              "from the same bytes (checked by SHA-256): kept as done", file=sys.stderr)
    atomic_write(plan.directory.parent / INPUTS_FILE, json.dumps(_inputs_record(plan), indent=2) + "\n")
    return changed


# --- Is the plan on disk still what planning would write? -------------------------------------
# Composing conf/ costs seconds, and Snakemake parses the Snakefile (and so plans) on every
# invocation, a no-op rerun included. write_plan records in plan.inputs.json (beside plan/, not in
# it: the record is this machine's, while plan/ is versioned with the results) what the plan was
# made from: the command (study, overrides, run), the machine's answers planning depends on (the
# project and work roots, the sandbox backend ``auto`` finds, PATH), and the size and
# modification time of every file it read (conf/, the trial schema, the package's own code, the
# workload directories and arm sources the plan names) and of every plan file it wrote. When
# all of these are unchanged, composing again would write the same files, so it is skipped.
INPUTS_FILE = "plan.inputs.json"
PLAN_FORMAT = 1


def _fixed_sources() -> list[Path]:
    return [conf_dir(), project_root() / "workflow" / "schemas", Path(__file__).resolve().parents[1]]


def _walk(root: Path, out: list[tuple[str, int, int]], skip: tuple[str, ...] = ("__pycache__",)) -> None:
    try:
        entries = list(os.scandir(root))
    except NotADirectoryError:
        st = root.stat()
        out.append((str(root), st.st_size, st.st_mtime_ns))
        return
    except FileNotFoundError:
        out.append((str(root), -1, -1))
        return
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.name in skip or entry.name.startswith(TMP_PREFIX):
            continue
        if entry.is_dir():
            _walk(Path(entry.path), out, skip)
        else:
            st = entry.stat()
            out.append((entry.path, st.st_size, st.st_mtime_ns))


def _inputs_digest(study: str, overrides: tuple[str, ...] | list[str], run: str, plan_dir: Path,
                   sources: tuple[str, ...] | list[str], subset: dict[str, Any] | None = None) -> str:
    files: list[tuple[str, int, int]] = []
    for root in [*_fixed_sources(), *(project_root() / s for s in sources)]:
        _walk(Path(root), files)
    _walk(plan_dir, files)
    ident = {
        "format": PLAN_FORMAT, "study": study, "overrides": list(overrides), "run": run,
        "plan_dir": str(plan_dir.resolve()), "root": str(project_root()),
        "work_root": str(study_work_root(plan_dir.parent)), "auto_backend": resolve_backend_name("auto"),
        "path": os.environ.get("PATH", ""), "subset": subset,
    }
    return hashlib.sha256(json.dumps([ident, files]).encode()).hexdigest()


def _inputs_record(plan: Plan) -> dict[str, Any]:
    return {"digest": _inputs_digest(plan.study, plan.overrides, plan.run, plan.directory, plan.sources, plan.subset),
            "sources": list(plan.sources), "agents": plan.agents or {}}


def plan_is_current(study: str, overrides: list[str] | tuple[str, ...] = (), results: Path = Path("results"),
                    name: str | None = None, subset: Subset | None = None) -> bool:
    """Whether ``results/<run>/plan`` is what planning would write now (see :data:`INPUTS_FILE`);
    cheap: no composition. The agents' readiness (a key, an installed harness) is checked again."""
    name = name or (subset.default_name if subset else None)
    plan_dir = Path(results) / run_name(study, overrides, name) / "plan"
    try:
        recorded = json.loads((plan_dir.parent / INPUTS_FILE).read_text())
        digest, sources, agents = recorded["digest"], recorded["sources"], recorded["agents"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if digest != _inputs_digest(study, tuple(overrides), run_name(study, overrides, name), plan_dir, sources,
                                subset.to_dict() if subset else None):
        return False
    for agent_cfg in agents.values():
        check_agent_ready(agent_cfg)
    return True


def ensure_plan(study: str, overrides: list[str] | tuple[str, ...] = (), results: Path = Path("results"),
                name: str | None = None, subset: Subset | None = None) -> list[str] | None:
    """Plan the run unless its plan is current; then hold the run lock, as :func:`write_plan` does
    (a busy directory whose plan is current is read as it is). Returns the changed trials, or None
    when the plan was current and nothing was composed or written."""
    from sdcs_bench.pipeline.runlock import StudyBusy, hold_study_lock

    if plan_is_current(study, overrides, results, name, subset):
        try:
            hold_study_lock(Path(results) / run_name(study, overrides, name or (subset.default_name if subset else None)))
        except StudyBusy:
            pass
        return None
    return write_plan(make_plan(study, list(overrides), Path(results), name, subset=subset))


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
