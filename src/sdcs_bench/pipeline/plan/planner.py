"""Compose conf/ once into a study plan (docs/architecture.md): :func:`make_plan` makes one trial
of every cell the grid yields (:func:`.grid.walk`), each a function of the cell and one memo of the
parts trials share; :func:`ensure_plan` plans a run unless its plan on disk is current.

Snakemake reads the plan's files and never composes config itself, so a cluster job sees exactly
the plan its run started with, and a config change rewrites (and so reruns) only the trials
it affects: files whose content did not change are not touched.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import ArmNotApplicable, SpecSnapError, one_line, skipped_line
from sdcs_bench.core.paths import conf_dir, project_root
from sdcs_bench.pipeline.images import image_sources, sandbox_settings
from sdcs_bench.pipeline.plan.compat import (
    check_agent_ready,
    check_continuation,
    check_handoff,
    check_policy_fits,
    check_policy_meters,
    check_unconfined,
    trial_agent,
)
from sdcs_bench.pipeline.plan.current import plan_is_current
from sdcs_bench.pipeline.plan.files import Plan, write_plan
from sdcs_bench.pipeline.plan.grid import HANDOFF, SAME, Cell, handoff_name, study_grid, trial_id, walk
from sdcs_bench.pipeline.plan.overrides import run_name, split_overrides
from sdcs_bench.pipeline.plan.settings import (
    SAME_WRITER,
    budget_settings,
    conf_prices,
    handoff_settings,
    rerun_subset,
    statistics_settings,
)
from sdcs_bench.pipeline.repos import repo_plan
from sdcs_bench.pipeline.stability import Subset
from sdcs_bench.sandbox import resolve_backend_name
from sdcs_bench.sandbox.limits import Limits
from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.components import AgentConfig, StudyConfig, VariantConfig
from sdcs_bench.trial.continuation import Continuation, handoff_stage
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial.standards import layout_for
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.trial.workload_model import CleaveRule

CONTROL_VARIANT = "uninterrupted"  # the run whose tokens a cut at a share of them is measured against
# What differs between two trials that differ only by seed (everything else is shared, see _Memo).
SEED_KEYS = ("trial_id", "seed")


def make_plan(study: str, overrides: list[str] = (), results: Path = Path("results"), name: str | None = None,
              progress: Callable[..., None] | None = None, subset: Subset | None = None, keys: bool = True) -> Plan:
    """The plan of a study (``keys=False``: without asking for API keys, for a plan that runs nothing)."""
    config.check_option("study", study)
    run = run_name(study, overrides, name or (subset.default_name if subset else None))
    run_dir = Path(results) / run
    grid_overrides, hydra_overrides = split_overrides(list(overrides))
    cfg = _compose(study, hydra_overrides)
    grid = study_grid(StudyConfig.from_dict(cfg["study"]).grid, grid_overrides)
    config.prefetch((axis, name) for axis in ("agent", "arm", "variant") for name in grid[axis])
    backend = resolve_backend_name(cfg["sandbox"]["backend"])
    Limits.from_config(cfg["sandbox"].get("limits"))  # a bad limit is one line, before any work
    agents = {name: check_agent_ready(config.entity("agent", name), key=keys)
              for name in dict.fromkeys([*grid["agent"], *(s for s in grid["successor"] if s != SAME)])}
    check_unconfined(backend, cfg["sandbox"], agents.values())
    memo = _Memo(study, run, Path(results), cfg, backend, agents, progress, grid["variant"])
    memo.writer, memo.source = _handoff_writer(cfg, grid, keys)
    trials = [t for t in (_trial(memo, cell) for cell in walk(grid, lambda cell: _check_cell(memo, cell)))
              if t is not None]
    if memo.refused:  # every refused combination, in one message
        raise refusals(memo.refused)
    if memo.inapplicable and not trials:  # every cell's arm lacks its file: nothing would run
        raise none_applicable(memo.inapplicable)
    if backend == "docker":  # the images' build contexts and what they copy in: a change plans new images
        memo.sources.update(image_sources({s["docker"][k] for s in memo.sandboxes.values()
                                           for k in ("image", "score_image")}))
    _link_controls(trials)
    _validate_trials(trials, memo.full_check)
    prices = conf_prices()
    budget = budget_settings(cfg)
    if subset is not None:
        trials = rerun_subset(trials, subset, study, list(overrides), Path(results))
    return Plan(study, run_dir / "plan", trials, run, tuple(overrides), tuple(sorted(memo.sources)), memo.records,
                statistics=statistics_settings(cfg), prices=prices.to_dict(), budget=budget,
                subset=subset.to_dict() if subset else None,
                not_applicable=tuple(exc.record() for exc in memo.inapplicable.values()))


def ensure_plan(study: str, overrides: list[str] | tuple[str, ...] = (), results: Path = Path("results"),
                name: str | None = None, subset: Subset | None = None) -> list[str] | None:
    """Plan the run unless its plan is current; then hold the run lock, as :func:`.write_plan` does
    (a busy directory whose plan is current is read as it is). Returns the changed trials, or None
    when the plan was current and nothing was composed or written."""
    from sdcs_bench.pipeline.runlock import StudyBusy, hold_study_lock

    if plan_is_current(study, overrides, results, name, subset):
        try:
            hold_study_lock(Path(results) / run_name(study, overrides, name or (subset.default_name if subset else None)))
        except StudyBusy:
            pass
        return None
    plan = make_plan(study, list(overrides), Path(results), name, subset=subset)
    for record in plan.not_applicable:  # (Snakemake's start-up plans here: its user sees these on stderr)
        print(f"specsnap: {skipped_line(record)}", file=sys.stderr)
    return write_plan(plan)


def _handoff_writer(cfg: dict[str, Any], grid: dict[str, list[str]], keys: bool) -> tuple[AgentConfig | None, str]:
    """The run's ``handoff`` settings: the agent whose model writes every summary and notes (None: the
    model of the session handed over), ready to run, and what it reads (docs/protocol.md#who-writes-a-handoff)."""
    name, source = handoff_settings(cfg)
    written = any(Continuation.parse(c).is_written or (Continuation.parse(c).fallback or Continuation()).is_written
                  for c in grid["continuation"])
    if name == SAME_WRITER or not written:
        return None, source
    writer = check_agent_ready(config.entity("agent", name), key=keys)
    if writer.reference:
        models = [n for n in config.options("agent") if not _is_reference(n)]
        raise SpecSnapError(f"handoff.writer is {name!r}, a reference policy: a summary or notes is written by a "
                            "model (a real or replay agent); a reference policy handed over writes its own", models)
    return writer, source


def _is_reference(name: str) -> bool:
    """Whether an agent's own file declares it a reference policy (read alone: this only names choices)."""
    try:
        return bool((config.read_yaml(conf_dir() / "agent" / f"{name}.yaml") or {}).get("reference"))
    except (SpecSnapError, OSError, AttributeError):
        return True  # (a broken agent file is said where it is used)


def _compose(study: str, hydra_overrides: list[str]) -> dict[str, Any]:
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
    return cfg


class _Memo:
    """Everything a trial holds but its seed, worked out once per workload, arm, variant, agent and
    pair of them (a fingerprint reads every file of the workload): a large grid costs a dict per
    trial. Trials share these parts (json.dumps only reads them); the first failing combination
    still raises first, as the grid is walked in the same order. ``once`` says whether a check
    (``kind`` and its key) is still to be done."""

    def __init__(self, study: str, run: str, results: Path, cfg: dict[str, Any], backend: str,
                 agents: dict[str, AgentConfig], progress: Callable[..., None] | None,
                 grid_variants: list[str] = ()) -> None:
        self.study, self.run, self.results, self.cfg, self.backend = study, run, results, cfg, backend
        self.grid_variants = list(grid_variants)
        self.agents = agents  # ready to run, typed (built once): what the checks read
        self.records = {name: trial_agent(cfg) for name, cfg in agents.items()}  # what a trial carries
        self.progress = progress
        self.writer: AgentConfig | None = None  # handoff.writer (None: the model handed over); handoff.source
        self.source = "trace"
        self.workloads: dict[str, tuple[Any, dict[str, Any]]] = {}
        self.arms: dict[str, Arm] = {}
        self.arm_cfgs: dict[tuple[str, str], dict[str, Any]] = {}
        # per (arm, workload) whose file the workload lacks: its cells are skipped (said once, in the plan)
        self.inapplicable: dict[tuple[str, str], ArmNotApplicable] = {}
        self.variants: dict[str, dict[str, Any]] = {}
        self.schedules: dict[tuple[str, str, str], tuple[list[dict[str, str]], list[str], list[Any]]] = {}
        self.sandboxes: dict[tuple[str, str], dict[str, Any]] = {}  # docker's images follow the agent and the workload
        self.continued: dict[tuple[str, str, str, int], dict[str, Any]] = {}  # per agent pair, mode, sessions
        self.refused: dict[tuple[str, str, str], str] = {}  # per agent, successor, mode: why (all said at the end)
        self.checked: set[tuple] = set()
        self.sources: set[str] = set()
        self.seen: set[tuple[str, str, str, str, str]] = set()
        self.full_check: list[bool] = []  # per trial: validate all of it, or only what differs from an equal trial of another seed

    def once(self, *key: Any) -> bool:
        if key in self.checked:
            return False
        self.checked.add(key)
        return True

    def workload(self, wid: str) -> tuple[Any, dict[str, Any]]:
        if wid not in self.workloads:
            workload = load_workload(wid)
            record = {"id": workload.id, "dir": _relative(workload.root), "fingerprint": workload.fingerprint()}
            if workload.is_real_repo:
                record["repo"] = repo_plan(workload, self.results)
            if workload.generated:
                record["generate"] = {"family": workload.generated[0], "seed": workload.generated[1]}
            self.workloads[wid] = workload, record
            self.sources.add(record["dir"])
        return self.workloads[wid]

    def arm(self, name: str, workload: Any) -> dict[str, Any] | None:
        """The arm's config for the workload; None where it places a file of the workload's own
        directory that the workload lacks (kept in ``inapplicable``: that cell is skipped)."""
        if name not in self.arms:  # a missing arm file fails here, before any work
            entity = config.entity("arm", name)
            self.arms[name] = Arm.from_config(entity)
            self.sources.update(_arm_sources(entity))
        key = (name, workload.id)
        if key not in self.arm_cfgs and key not in self.inapplicable:
            try:
                self.arm_cfgs[key] = self.arms[name].for_workload(workload.id, workload.root).to_config()
            except ArmNotApplicable as exc:
                self.inapplicable[key] = exc
        return self.arm_cfgs.get(key)

    def variant(self, name: str) -> VariantConfig:
        """The variant, typed (built once); a trial carries its mapping (``raw``)."""
        if name not in self.variants:
            self.variants[name] = VariantConfig.from_dict(config.entity("variant", name))
        return self.variants[name]

    def schedule(self, wid: str, variant: str, cont: Continuation) -> tuple[list[dict[str, str]], list[str], list[Any]]:
        """The sessions' prompts and cut rules, the stages, and the rules alone."""
        if (wid, variant, str(cont)) not in self.schedules:
            workload, variant_cfg = self.workloads[wid][0], self.variants[variant]
            schedule = effective_schedule(workload, variant_cfg)
            layout_for(workload, variant_cfg)  # a standards layout the workload cannot take fails here
            self.schedules[wid, variant, str(cont)] = (
                [{"session": s.name, "prompt_source": s.prompt_source, "prompt": s.prompt, "cleave": str(s.cleave)}
                 for s in schedule],
                trial_stages(workload, variant_cfg, len(schedule), cont),
                [s.cleave for s in schedule],
            )
        return self.schedules[wid, variant, str(cont)]

    def cuts_at_share(self) -> bool:
        """Whether a variant of the grid cuts at a share of the uninterrupted control's tokens."""
        return any(self.variant(v).cleave and CleaveRule.parse(self.variant(v).cleave).needs_baseline
                   for v in self.grid_variants)

    def sandbox(self, agent: str, workload: Any) -> dict[str, Any]:
        if (agent, workload.id) not in self.sandboxes:
            self.sandboxes[agent, workload.id] = sandbox_settings(self.backend, self.cfg["sandbox"], self.results,
                                                                  self.agents[agent], workload)
        return self.sandboxes[agent, workload.id]


def _check_cell(memo: _Memo, cell: Cell) -> int:
    """A cell's parts, composed and checked (a policy that cannot run its workload, a handoff it
    cannot make, a layout the workload cannot take fail here); its number of sessions."""
    if memo.progress:
        memo.progress()
    workload, _ = memo.workload(cell.workload)
    memo.arm(cell.arm, workload)
    memo.variant(cell.variant)
    if memo.once("fits", cell.agent, cell.workload):
        check_policy_fits(workload, memo.agents[cell.agent])
    if cell.successor != SAME:
        if memo.once("fits", cell.successor, cell.workload):
            check_policy_fits(workload, memo.agents[cell.successor])
        if memo.once("handoff", cell.agent, cell.successor):
            check_handoff(memo.agents[cell.agent], memo.agents[cell.successor], workload)
    sessions = len(memo.schedule(cell.workload, cell.variant, cell.continuation)[0])
    # A handoff under a one-session variant would run the first agent alone under a pair's name; the
    # one exception is the uninterrupted control a share cut of the same grid is measured against.
    if cell.successor != SAME and sessions == 1 and not (cell.variant == CONTROL_VARIANT and memo.cuts_at_share()):
        raise SpecSnapError(f"variant {cell.variant!r} runs workload {cell.workload} as one session, so successor "
                            f"{cell.successor!r} would never run: a handoff needs two sessions; hand off under a "
                            f"variant that cuts (e.g. none), or run {cell.variant} with successor=[same]")
    return sessions


def _trial(memo: _Memo, cell: Cell) -> dict[str, Any] | None:
    """The trial of one cell (checked by :func:`_check_cell`, folded by :func:`.grid.walk`); None
    when its arm lacks a file of the workload's own (kept in ``memo.inapplicable``) or its continuation
    mode is refused for its agents (kept in ``memo.refused``)."""
    wid, cont = cell.workload, cell.continuation
    workload, workload_record = memo.workload(wid)
    arm = memo.arm(cell.arm, workload)
    if arm is None:
        return None
    variant_cfg = memo.variant(cell.variant)
    first = memo.agents[cell.agent]
    second = memo.agents[cell.successor] if cell.successor != SAME else None
    schedule_cfg, stages, rules = memo.schedule(wid, cell.variant, cont)
    if not cont.is_reset and variant_cfg.inject is not None and variant_cfg.inject.withhold:
        raise SpecSnapError(f"continuation {cont} is refused with variant {cell.variant!r}: it withholds facts after "
                            "the cut, and a trace, a summary or a resumed conversation would carry them across; "
                            "run it with continuation reset")
    continued = (cell.agent, cell.successor, str(cont), len(schedule_cfg))
    if (cell.agent, cell.successor, str(cont)) in memo.refused:
        return None
    if not cont.is_reset and continued not in memo.continued:
        asked = cont
        if cont.is_choice:  # a mode per pair: the preferred one where every agent of the trial can do it
            try:
                check_continuation(cont.resolved(True), first, second, len(schedule_cfg), memo.writer)
                cont = cont.resolved(True)
            except SpecSnapError:
                cont = cont.resolved(False)
        try:
            check_continuation(cont, first, second, len(schedule_cfg), memo.writer)
        except SpecSnapError as exc:  # said with every other refused combination once the grid is walked
            memo.refused[cell.agent, cell.successor, str(asked)] = str(exc)
            return None
        # (what the trial got, and for a mode per pair what it asked for)
        memo.continued[continued] = {**continuation_block(cont, memo.writer, memo.source),
                                     **({"asked": str(asked)} if asked.is_choice else {})}
    for who in (first, second) if second is not None else (first,):
        if memo.once("meters", who.name, wid, cell.variant):
            check_policy_meters(who, variant_cfg, rules)
    sandbox = memo.sandbox(cell.agent, workload)
    if second is not None and memo.once("one sandbox", cell.agent, cell.successor, wid):
        if memo.sandbox(cell.successor, workload) != sandbox:
            raise SpecSnapError(f"a handoff from {cell.agent} to {cell.successor} on {wid} needs one sandbox for both, "
                                f"and the {memo.backend} backend gives them different images; name one image that "
                                "holds both harnesses (sandbox.docker.image=harnesses) or use bwrap")
    baseline = ({"token_baseline": {"trial": trial_id(wid, cell.arm, cell.name, CONTROL_VARIANT, cell.seed)}}
                if any(rule.needs_baseline for rule in rules) else {})
    combo = (wid, cell.arm, cell.name, cell.variant, str(cell.continuation))
    memo.full_check.append(combo not in memo.seen)
    memo.seen.add(combo)
    return {
        "trial_id": cell.trial_id,
        "study": memo.study,
        "run": memo.run,
        "workload": workload_record,
        "arm": arm,
        "agent": memo.records[cell.agent],
        **({"successor": memo.records[cell.successor]} if second is not None else {}),
        **({"continuation": memo.continued[continued]} if not cont.is_reset else {}),
        "variant": variant_cfg.raw,
        "seed": cell.seed,
        "schedule": schedule_cfg,
        **baseline,
        "stages": stages,
        "sandbox": sandbox,
        "session": memo.cfg["session"],
        "scoring": memo.cfg["scoring"],
    }


def refusals(refused: dict[tuple[str, str, str], str]) -> SpecSnapError:
    """The refused (agent, successor, mode) combinations of a grid: one's own line alone; several,
    a first line and one line for each."""
    if len(refused) == 1:
        return SpecSnapError(next(iter(refused.values())))
    lines = [f"  {handoff_name(agent, successor).replace(HANDOFF, ' then ')}, {mode}: {why}"
             for (agent, successor, mode), why in refused.items()]
    return SpecSnapError(f"{len(refused)} combinations of agent, successor and continuation in this grid are refused "
                         "(drop them from the grid, or give them a mode they can do):\n" + "\n".join(lines))


def none_applicable(inapplicable: dict[tuple[str, str], ArmNotApplicable]) -> SpecSnapError:
    """A grid whose every cell's arm lacks its workload file: one's own error alone; several, a first
    line and one line for each (arm, workload)."""
    if len(inapplicable) == 1:
        return next(iter(inapplicable.values()))
    lines = [f"  {exc}" for exc in inapplicable.values()]
    return SpecSnapError(f"no cell of this grid can run: each of its {len(inapplicable)} (arm, workload) pairs "
                         "places a file of the workload's own directory that the workload does not have:\n"
                         + "\n".join(lines))


def trial_stages(workload, variant: VariantConfig | dict[str, Any], n_sessions: int,
                 continuation: Continuation = Continuation()) -> list[str]:
    """scaffold, session_1 .. session_N, score; with ``inject`` after the session a variant names,
    and a ``handoff_<k>`` right before every session k >= 2 in a continuation mode but ``reset``."""
    from sdcs_bench.sandbox.withhold import check_spec as check_withhold

    variant = VariantConfig.of(variant)
    stages = ["scaffold"]
    inject = variant.inject
    if variant.withhold:  # before session 1: done by the scaffold, no stage of its own
        check_withhold(workload, variant.withhold, variant.name)
    if inject:
        from sdcs_bench.sandbox.poison import VERSIONS, poisonable_workloads

        after = inject.after_session
        if inject.withhold:
            check_withhold(workload, inject.withhold, variant.name)
        elif not workload.poison:
            raise SpecSnapError(f"variant {variant.name!r} plants the poison pill, which workload {workload.id} "
                                "does not define", poisonable_workloads())
        elif inject.poison not in VERSIONS:
            raise SpecSnapError(f"variant {variant.name!r}: unknown poison version {inject.poison!r}", VERSIONS)
        if not 1 <= after < n_sessions:
            raise SpecSnapError(f"variant {variant.name!r} injects after session {after}, but workload "
                                f"{workload.id} has {n_sessions} session(s): it must fall between two sessions")
    for i in range(1, n_sessions + 1):
        if i >= 2 and not continuation.is_reset:
            stages.append(handoff_stage(i))
        stages.append(f"session_{i}")
        if inject and i == inject.after_session:
            stages.append("inject")
    return [*stages, "score"]


def continuation_block(cont: Continuation, writer: AgentConfig | None = None, source: str = "trace") -> dict[str, Any]:
    """The trial file's ``continuation``: the mode and, for ``summary`` and ``notes``, the versioned
    prompt (the stages read no conf/), and who writes it from what where the run's ``handoff``
    settings differ from the default (the model handed over, from the trace)."""
    from sdcs_bench.trial import notes

    block: dict[str, Any] = {"name": str(cont), "mode": cont.mode}
    if cont.budget is not None:
        block["budget"] = cont.budget
    if cont.mode == "summary":
        block["summary_prompt"] = config.read_yaml(conf_dir() / "continuation" / "summary.yaml")
    if cont.mode == "notes":
        prompt = config.read_yaml(conf_dir() / "continuation" / "notes.yaml")
        if prompt.get("schema") != notes.VERSION:
            raise SpecSnapError(f"conf/continuation/notes.yaml asks for notes in schema {prompt.get('schema')!r}, and "
                                f"SpecSnap validates {notes.VERSION!r}: make the prompt's schema and its text match it")
        block["notes_prompt"] = prompt
    if cont.is_written and writer is not None:
        block["writer"] = trial_agent(writer)
    if cont.is_written and source != "trace":
        block["source"] = source
    return block


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


def _relative(path: Path) -> str:
    """A project path as the trial records it: relative to the project root (a cluster node may
    hold the project elsewhere), absolute when it lies outside."""
    try:
        return Path(path).resolve().relative_to(project_root()).as_posix()
    except ValueError:
        return str(Path(path).resolve())


def _arm_sources(arm_cfg: dict[str, Any]) -> list[str]:
    """The project files an arm's ``source:`` entries read (a workload's own files are covered by
    its directory)."""
    out = []
    for raw in arm_cfg.get("files") or []:
        src = raw.get("source")
        if isinstance(src, (str, list)):
            out += [str(s) for s in (src if isinstance(src, list) else [src])]
    return out


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
