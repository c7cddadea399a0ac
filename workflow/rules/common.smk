# Input functions and wildcard constraints. The run's start-up (config check, run name, plan, run
# lock, bytecode, budget, the cells table) is one call: sdcs_bench.pipeline.startup.start_run.
import inspect
import os  # (the rules' params take directories with os.path)
import re

from snakemake.common import overwrite_function_params
from snakemake.exceptions import WorkflowError

from sdcs_bench.pipeline.layout import LEADERBOARD_EXTS, SCORECARD
from sdcs_bench.pipeline.plan import API_PROVIDERS, CELLS_VAR
from sdcs_bench.pipeline.startup import start_run

RUN = start_run(workflow, config)
STUDY = RUN.layout
STUDY_DIR = RUN.dir
TRIAL = STUDY.trial("{trial}")
PLAN_DIR = STUDY.plan_dir
CACHE = RUN.cache
CELLS = RUN.cells
IN_STORAGE = RUN.in_storage
SOURCE_PLANS = RUN.source_plans
ENV_PLANS = RUN.env_plans
IMAGES = RUN.images
IMAGE_DIGESTS = RUN.image_digests
IMAGE_NEEDS = RUN.image_needs
shell.prefix(RUN.shell_prefix)


# Snakemake 9's job rate limiter (on by default, 100 jobs a second) starts a one-second timer thread
# after every scheduling round, and each timer starts another round: the rounds multiply with every
# finished job (the smoke study's 146 jobs made 6,117 of them), each re-reading the inputs of every
# ready job, a fifth of a core on a small machine (docs/benchmarks.md#a-trials-own-overhead). Left
# at its default it limits nothing a run needs (the profiles cap cluster jobs with `jobs:`), so it
# is switched off just before the first job (the scheduler exists from then on); any other limit,
# from the command line or a profile, is kept.
#
# A local run's stage jobs start warm (sdcs_bench/warm.py): one server, started here, imports what
# the stages run once, and each stage job's `specsnap` has it run the job in a forked process
# instead of paying an interpreter and its imports. `--config warm_jobs=false` runs every job cold;
# a cluster's jobs always do.
onstart:
    from sdcs_bench.pipeline.scheduling import drop_default_rate_limit

    drop_default_rate_limit(getattr(workflow, "scheduler", None))
    if RUN.warm_jobs(workflow, config):
        from sdcs_bench import warm

        # (its imports done before the first job: every stage job runs warm)
        warm.start(wait_s=60)


onsuccess:
    from sdcs_bench import warm

    warm.stop()


onerror:
    from sdcs_bench import warm

    warm.stop()


# Without a shared file system a job is handed the cells table in this environment variable.
if IN_STORAGE:

    envvars:
        CELLS_VAR,


# A trial id's characters (plan.trial_id), not the list of planned trials: a pattern of 10,000
# alternatives is matched and substituted for every job and made a large grid's DAG take hours.
# A trial outside the plan is refused by cell() below.
wildcard_constraints:
    trial=r"[A-Za-z0-9_.-]+",
    k=r"[1-9][0-9]*",
    pin="|".join(map(re.escape, SOURCE_PLANS)) or "(?!)",
    env="|".join(map(re.escape, ENV_PLANS)) or "(?!)",
    image="|".join(map(re.escape, IMAGES)) or "(?!)",
    digest="|".join(map(re.escape, IMAGE_DIGESTS)) or "(?!)",


# The trials whose sessions carry their harness's state (an id ending __resume or __compact) have
# a session rule of their own (session_state); these patterns split the session stages between the
# two. (Matched against the text before "/session_<k>/", hence the look-ahead up to the slash.)
STATE_TRIAL = r"[A-Za-z0-9_.-]+__(?:resume|compact)"
NO_STATE_TRIAL = r"(?![A-Za-z0-9_.-]*__(?:resume|compact)/)[A-Za-z0-9_.-]+"


def declared(func):
    """``func`` with its parameters worked out once. Snakemake looks them up for every input, params
    and resource function of every job (twice for each call), through ``inspect.signature`` unless
    the function carries them already, as the wrappers of ``snakemake.ioutils`` do: ``declared``
    gives them the same way (and ``__signature__`` for anything else that inspects it).
    """
    func.__signature__ = inspect.signature(func)
    overwrite_function_params(func, func.__signature__.parameters)
    return func


def cell(trial):
    """The plan's row of a trial; a trial the plan does not hold is one clear error."""
    try:
        return CELLS[trial]
    except KeyError:
        raise WorkflowError(
            f"trial {trial!r} is not in the plan of {STUDY_DIR} ({len(CELLS)} trials: "
            f"see {STUDY.cells})"
        ) from None


@declared
def source_plan(wildcards):
    """The plan file a source job reads, marked ``ancient`` because the cache is named by the pin's
    hash, so a newer plan file (another run planning the same pin) never makes it stale.
    """
    return ancient(SOURCE_PLANS[wildcards.pin])


@declared
def environment_plan(wildcards):
    """The plan file an environment job reads (``ancient``, as for the source)."""
    return ancient(ENV_PLANS[wildcards.env])


@declared
def repo_inputs(wildcards):
    """A real-repository trial's stages take its cached source and environment (``ancient``, as
    above: rebuilding the shared cache for one run must not rerun another run's trials).
    """
    row = cell(wildcards.trial)
    return {key: ancient(row[key]) for key in ("source", "environment") if row[key]}


# Stages take repo_inputs only in a plan with real repositories (a function fewer per job otherwise).
REPO_INPUTS = [unpack(repo_inputs)] if SOURCE_PLANS or ENV_PLANS else []


@declared
def image_inputs(wildcards):
    """A docker trial's sessions run in its image: they take the image's record as input, so the
    image is built first and a rebuilt image reruns them."""
    image = cell(wildcards.trial).get("image")
    return {"image": image} if image else {}


@declared
def score_image_inputs(wildcards):
    """As image_inputs, for the image a docker trial's scoring runs in."""
    image = cell(wildcards.trial).get("score_image")
    return {"image": image} if image else {}


@declared
def image_needs(wildcards):
    """What an image's build copies in that another job makes, a repository environment (``ancient``,
    as for the stages: the cache is named by its key)."""
    need = IMAGE_NEEDS.get(CACHE.image_record(wildcards.image, wildcards.digest))
    return {"environment": ancient(need)} if need else {}


# Stages take image inputs only in a plan with docker trials (a function fewer per job otherwise).
IMAGE_INPUTS = [unpack(image_inputs)] if IMAGES else []
SCORE_IMAGE_INPUTS = [unpack(score_image_inputs)] if IMAGES else []


def stages(trial):
    return cell(trial)["stages"].split(",")


def per_trial(value):
    """A resource taken from each trial's row of the plan: one number when every trial of the plan
    has the same (declared once: Snakemake evaluates a function for every job, which costs a large
    grid's DAG minutes), else a function of the trial."""
    values = {value(row) for row in CELLS.values()}
    if len(values) <= 1:
        return values.pop() if values else 0
    return declared(lambda wildcards: value(cell(wildcards.trial)))


def api_units(provider):
    """Resource: 1 for a session that calls ``provider``'s API, else 0 (in a handoff, the sessions
    after the first are the successor's)."""
    if not any(row.get("successor_api") for row in CELLS.values()):
        return per_trial(lambda row: int(row.get("api") == provider))

    def units(wildcards):
        row = cell(wildcards.trial)
        api = (
            row["successor_api"]
            if row.get("successor_api") and int(wildcards.k) >= 2
            else row.get("api")
        )
        return int(api == provider)

    return declared(units)


def handoff_api_units(provider):
    """Resource: 1 for a handoff whose summary calls ``provider``'s API (the summarised session's
    agent: the successor's from handoff_3 on), else 0 (a trace, a resume: no call)."""

    def units(wildcards):
        row = cell(wildcards.trial)
        if not wildcards.trial.endswith("__summary"):
            return 0
        api = (
            row["successor_api"]
            if row.get("successor_api") and int(wildcards.k) - 1 >= 2
            else row.get("api")
        )
        return int(api == provider)

    return declared(units)


HANDOFF_API_RESOURCES = (
    {f"api_{p}": handoff_api_units(p) for p in API_PROVIDERS}
    if RUN.calls_api and any(t.endswith("__summary") for t in CELLS)
    else {}
)


# The api_<provider> resources of a session, in a plan where some session calls an API. Snakemake
# evaluates every declared resource of every job, so a plan of reference policies declares none.
API_RESOURCES = (
    {f"api_{p}": api_units(p) for p in API_PROVIDERS} if RUN.calls_api else {}
)


def runtime_min(stage_kind):
    """Resource: a job's wall-time limit in minutes, from the trial's own settings (the session
    timeout times its attempts, plus backoff; the scoring timeout), for cluster executors.
    """
    return per_trial(lambda row: int(row[f"{stage_kind}_runtime_min"]))


# Every stage reads its trial's file: a pattern, not a function (nothing to evaluate per job).
TRIAL_FILE = STUDY.trial_file("{trial}")


def stage_before(trial, here):
    order = stages(trial)
    if here not in order:
        raise WorkflowError(f"trial {trial} has no stage {here}")
    before = order[order.index(here) - 1]
    layout = STUDY.trial(trial)
    return {"previous": layout.stage_json(before), "snapshot": layout.snapshot(before)}


@declared
def previous_session_stage(wildcards):
    """The stage before session k of this trial (scaffold, session k-1, inject, or the handoff, with
    what it hands over); for a cut at a share of the uninterrupted run's tokens, that control's
    scorecard too."""
    inputs = stage_before(wildcards.trial, f"session_{wildcards.k}")
    order = stages(wildcards.trial)
    before = order[order.index(f"session_{wildcards.k}") - 1]
    # what a handoff hands this session: its prompt's text, its HOME's state
    if before.startswith("handoff_"):
        outputs = STUDY.trial(wildcards.trial).outputs(before)
        inputs |= {"context": outputs["context"], "carry": outputs["carry"]}
    control = cell(wildcards.trial).get("baseline")
    if control:
        inputs["baseline"] = STUDY.trial(control).file("score", SCORECARD)
    return inputs


@declared
def handoff_inputs(wildcards):
    """The stage before handoff k (session k-1, or the injection after it) and every earlier
    session's record, events and carried state (a trace reads them all, a summary the last).
    """
    inputs = stage_before(wildcards.trial, f"handoff_{wildcards.k}")
    layout = STUDY.trial(wildcards.trial)
    earlier = [f"session_{j}" for j in range(1, int(wildcards.k))]
    inputs["sessions"] = [layout.stage_json(s) for s in earlier]
    inputs["events"] = [layout.outputs(s)["events"] for s in earlier]
    if layout.carries_state:
        inputs["carry"] = layout.outputs(earlier[-1])["carry"]
    return inputs


@declared
def previous_inject_stage(wildcards):
    return stage_before(wildcards.trial, "inject")


@declared
def score_inputs(wildcards):
    """What the score stage reads: the last session's snapshot, every session's record (never the
    copy inside the sandbox) and, for a poison-pill trial, the injection record."""
    layout = STUDY.trial(wildcards.trial)
    order = stages(wildcards.trial)
    inputs = stage_before(wildcards.trial, "score")
    inputs["sessions"] = [
        layout.stage_json(s) for s in order if s.startswith("session_")
    ]
    if "inject" in order:
        inputs["injection"] = layout.stage_json("inject")
    handoffs = [layout.stage_json(s) for s in order if s.startswith("handoff_")]
    if handoffs:  # a continuation mode: what each handoff carried and cost
        inputs["handoffs"] = handoffs
    return inputs


@declared
def stage_record_flags(wildcards, input):
    """The score job's flags naming the records beside the sessions': the injection's, each handoff's."""
    flags = f"--injection {input.injection}" if "injection" in input.keys() else ""
    if "handoffs" in input.keys():
        flags += " " + " ".join(f"--handoff-record {p}" for p in input.handoffs)
    return flags


def scorecards():
    return [STUDY.trial(trial).file("score", SCORECARD) for trial in CELLS]


def session_stages():
    """Every (trial, session stage) of the plan."""
    return [(t, s) for t in CELLS for s in stages(t) if s.startswith("session_")]


def ledgers():
    """Every model-call ledger: each session's, and each handoff's (a summary's call)."""
    return [
        STUDY.trial(t).outputs(s)["ledger"]
        for t in CELLS
        for s in stages(t)
        if s.startswith(("session_", "handoff_"))
    ]


def session_records():
    """Every session's stage.json (the ledger rows take the session's status and agent from it)."""
    return [STUDY.trial(t).stage_json(s) for t, s in session_stages()]


def report_records():
    """The trials' own records a report page reads. They change only with their session's
    stage.json, which the aggregate takes, so on a shared file system the report need only follow
    the aggregate's outputs; without one (a default storage provider) every file it reads must be
    declared, to be fetched."""
    if not IN_STORAGE:
        return []
    files = [STUDY.cells, *(STUDY.trial_file(t) for t in CELLS), *scorecards()]
    files += [
        STUDY.trial(t).stage_json("inject") for t in CELLS if "inject" in stages(t)
    ]
    for trial, stage in session_stages():
        outputs = STUDY.trial(trial).outputs(stage)
        files += [
            outputs[k]
            for k in (
                "stage",
                "snapshot",
                "ledger",
                "transcript",
                "stderr",
                "events",
                "abstention",
                "cleave_diff",
            )
        ]
    return files


def get_final_output():
    return [*(STUDY.leaderboard(ext) for ext in LEADERBOARD_EXTS), STUDY.report_dir]
