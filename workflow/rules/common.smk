# Plan loading, input functions and wildcard constraints. All logic lives in sdcs_bench.
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import use_project

# The project is the checkout this Snakefile is in (never the one the package was installed from):
# every job, local or on a cluster node, reads conf/ and tiers/ from here.
PROJECT_ROOT = str(use_project(Path(workflow.main_snakefile).parent))
from sdcs_bench.pipeline.plan import API_PROVIDERS, make_plan, read_cells, run_name, write_plan



def stop(message):
    """Bad input: one line on the terminal, no traceback, exit status 2, before any job."""
    print(f"specsnap: error: {message}", file=sys.stderr)
    sys.exit(2)


validate(config, schema="../schemas/config.schema.yaml")

STUDY = config["study"]
RESULTS = config["results"]
try:
    # results/<study>, or results/<study>+<digest of the overrides>, or results/<name>
    RUN = run_name(STUDY, list(config["overrides"]), config.get("name") or None)
except SpecSnapError as exc:
    stop(exc)
STUDY_DIR = f"{RESULTS}/{RUN}"
PLAN_DIR = f"{STUDY_DIR}/plan"
TRIAL_DIR = f"{STUDY_DIR}/trials/{{trial}}"
# Rules call the `specsnap` CLI installed beside this interpreter, activated or not.
shell.prefix(f'export PATH="{Path(sys.executable).parent}:$PATH" SPECSNAP_ROOT="{PROJECT_ROOT}"; ')

# Compose conf/ once, in the main process only: cluster and remote jobs re-parse this file and
# must read the plan this run started with, never compose (or see a config edited mid-run).
# write_plan takes the study directory's run lock first: a second run of the same directory
# writes nothing (and is refused if its plan differs).
if workflow.is_main_process:
    try:
        write_plan(make_plan(STUDY, list(config["overrides"]), Path(RESULTS), config.get("name") or None))
    except SpecSnapError as exc:
        stop(exc)
    except OSError as exc:
        from sdcs_bench.core.fsutil import disk_error_message

        stop(disk_error_message(exc) or exc)

CELLS = {cell["trial"]: cell for cell in read_cells(f"{PLAN_DIR}/cells.tsv")}


wildcard_constraints:
    trial="|".join(re.escape(t) for t in CELLS) or "(?!)",
    k=r"[1-9][0-9]*",


def stages(trial):
    return CELLS[trial]["stages"].split(",")


def stage_outputs(trial, stage):
    base = f"{STUDY_DIR}/trials/{trial}/{stage}"
    return {"previous": f"{base}/stage.json", "snapshot": f"{base}/snapshot.tar.gz"}


def api_units(provider):
    """Resource function: 1 for a session that calls ``provider``'s API, else 0."""
    return lambda wildcards: int(CELLS[wildcards.trial].get("api") == provider)


def trial_config(wildcards):
    return CELLS[wildcards.trial]["config"]


def stage_before(trial, here):
    order = stages(trial)
    if here not in order:
        raise WorkflowError(f"trial {trial} has no stage {here}")
    return stage_outputs(trial, order[order.index(here) - 1])


def previous_session_stage(wildcards):
    """The stage before session k of this trial (scaffold, session k-1, or inject)."""
    return stage_before(wildcards.trial, f"session_{wildcards.k}")


def previous_inject_stage(wildcards):
    return stage_before(wildcards.trial, "inject")


def injection_record(wildcards):
    """The score stage also reads the injection record, when the trial has one."""
    if "inject" in stages(wildcards.trial):
        return {"injection": f"{STUDY_DIR}/trials/{wildcards.trial}/inject/stage.json"}
    return {}


def session_records(wildcards):
    """The score stage reads every session's record from its stage (never from the sandbox)."""
    order = stages(wildcards.trial)
    return [f"{STUDY_DIR}/trials/{wildcards.trial}/{s}/stage.json" for s in order if s.startswith("session_")]


def last_session_stage(wildcards):
    order = stages(wildcards.trial)
    return stage_outputs(wildcards.trial, order[order.index("score") - 1])


def scorecards():
    return [f"{STUDY_DIR}/trials/{trial}/score/scorecard.json" for trial in CELLS]


def get_final_output():
    return [f"{STUDY_DIR}/leaderboard.{ext}" for ext in ("csv", "md", "json")]
