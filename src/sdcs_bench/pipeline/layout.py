"""Where every file of a study lives: the one place that names them.

The Snakemake rules (``workflow/rules/common.smk``) and the Python stages both take paths from
here, so a file is named once. Paths are plain strings built by formatting, so the rules can
pass wildcard patterns (``TrialLayout(run_dir, "{trial}").stage_json("session_{k}")``).

    results/<run>/
      plan/study.json  plan/cells.tsv  plan/trials/<trial>.json  plan/repos/<workload>.json
    results/_cache/   shared by every run under one results directory (``CacheLayout``):
      sources/<pin>/source.json + the archive + tree/      a real repository's source, by its hash
      envs/<key>/env.json + venv/                           its environment, by interpreter and pins
      images/<name>/<digest>.json                           a docker image as built (tag, image id)
      trials/<trial>/<stage>/stage.json, snapshot.tar.gz        every stage
        scaffold/manifest.json
        session_<k>/ledger.jsonl, transcript.jsonl, agent.stderr.log, cleave.diff,
                     events.jsonl, residency.json, abstention.json (docs/coherence.md),
                     carry.tar.gz (the resume and compact modes only)
        handoff_<k>/ ledger.jsonl, carry.tar.gz, context.md (a continuation mode but reset: what crosses)
                     (and the harness's own records, native/; attempts/<n>/ after an infrastructure retry)
        inject/      (the injection record is in its stage.json)
        score/scorecard.json
      logs/<rule>/<trial>[.<stage>].log   benchmarks/<rule>/<trial>[.<stage>].tsv
      scorecards.csv  ledger.csv  calls.csv  paired.csv  leaderboard.{csv,md,json}  plots/  aggregate.json
      report/index.html  report/trials/<trial>.html  report/report.json   (``specsnap report``)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sdcs_bench.coherence.session import ABSTENTION, EVENTS, RESIDENCY
from sdcs_bench.sandbox.environment import RECORD as ENV_RECORD
from sdcs_bench.sandbox.source import RECORD as SOURCE_RECORD
from sdcs_bench.trial.continuation import STATE_MODES

STAGE_FILE = "stage.json"
SNAPSHOT = "snapshot.tar.gz"
MANIFEST = "manifest.json"
LEDGER = "ledger.jsonl"
TRANSCRIPT = "transcript.jsonl"
AGENT_STDERR = "agent.stderr.log"
CLEAVE_DIFF = "cleave.diff"
SCORECARD = "scorecard.json"
CARRY = "carry.tar.gz"  # the harness state a resume or compact continuation carries (empty otherwise)
CONTEXT = "context.md"  # what a trace, summary or notes continuation adds to the next session's prompt
WRITER_INPUT = "writer_input.md"  # a summary's or notes' writer's input: exactly what it was given
NOTES_REPLY = "reply.txt"  # a notes writer's answer as it came (context.md: rendered, when it keeps the schema)
STATE_SUFFIXES = tuple(f"__{mode}" for mode in STATE_MODES)  # the trial ids whose sessions carry state
LEADERBOARD_EXTS = ("csv", "md", "json")
AGGREGATE_RECORD = "aggregate.json"
STUDY_RULES = ("aggregate", "report")  # the rules that run once per study, not per trial


def stage_rule(stage: str) -> str:
    """The Snakemake rule that runs a stage (``session_3`` -> ``session``, ``handoff_2`` -> ``handoff``)."""
    return "session" if stage.startswith("session_") else "handoff" if stage.startswith("handoff_") else stage


@dataclass(frozen=True)
class RunLayout:
    run_dir: str

    @property
    def plan_dir(self) -> str:
        return f"{self.run_dir}/plan"

    @property
    def cells(self) -> str:
        return f"{self.plan_dir}/cells.tsv"

    @property
    def study_file(self) -> str:
        return f"{self.plan_dir}/study.json"

    @property
    def statistics_file(self) -> str:
        """The study's ``statistics`` settings (resamples, level, seed), read by the aggregate."""
        return f"{self.plan_dir}/statistics.json"

    @property
    def prices_file(self) -> str:
        """The price table (conf/prices.yaml) as planned: what the aggregate and a budget price calls by."""
        return f"{self.plan_dir}/prices.json"

    @property
    def budget_file(self) -> str:
        """The budget as planned (conf's ``budget``); the run's effective limits: ``budget/budget.json``."""
        return f"{self.plan_dir}/budget.json"

    def repo_file(self, workload: str) -> str:
        """A real repository's source pin, environment and interpreter, as planned."""
        return f"{self.plan_dir}/repos/{workload}.json"

    def trial_file(self, trial: str) -> str:
        return f"{self.plan_dir}/trials/{trial}.json"

    def trial(self, trial: str) -> TrialLayout:
        return TrialLayout(self.run_dir, trial)

    @property
    def by_hand_dir(self) -> str:
        """Trials a person ran by hand and scored into this run (``evaluate-sandbox --run``)."""
        return f"{self.run_dir}/by_hand"

    def by_hand_card(self, trial: str) -> str:
        return f"{self.by_hand_dir}/{trial}/scorecard.json"

    @property
    def scorecards(self) -> str:
        return f"{self.run_dir}/scorecards.csv"

    @property
    def ledger(self) -> str:
        return f"{self.run_dir}/ledger.csv"

    @property
    def calls(self) -> str:
        return f"{self.run_dir}/calls.csv"

    @property
    def paired(self) -> str:
        """Paired differences against each axis's baseline (docs/statistics.md)."""
        return f"{self.run_dir}/paired.csv"

    def leaderboard(self, ext: str) -> str:
        return f"{self.run_dir}/leaderboard.{ext}"

    @property
    def plots_dir(self) -> str:
        """The study's plots (PNG and SVG), written by aggregate (:mod:`.plots`)."""
        return f"{self.run_dir}/plots"

    @property
    def report_dir(self) -> str:
        """The static HTML report (:mod:`.report`)."""
        return f"{self.run_dir}/report"

    @property
    def report_index(self) -> str:
        return f"{self.report_dir}/index.html"

    @property
    def report_record(self) -> str:
        """What the report was made from (the SHA-256 of every input), written last by the report."""
        return f"{self.report_dir}/report.json"

    @property
    def aggregate_record(self) -> str:
        """What the tables were made from (the SHA-256 of every input), written last by aggregate."""
        return f"{self.run_dir}/{AGGREGATE_RECORD}"

    def aggregate_outputs(self) -> list[str]:
        """Every file the aggregate rule declares, its record last."""
        return [self.scorecards, self.ledger, self.calls, self.paired, *(self.leaderboard(e) for e in LEADERBOARD_EXTS),
                self.plots_dir, self.aggregate_record]

    def log(self, rule: str, name: str) -> str:
        return f"{self.run_dir}/logs/{rule}/{name}.log" if rule not in STUDY_RULES else f"{self.run_dir}/logs/{rule}.log"

    def benchmark(self, rule: str, name: str) -> str:
        return (f"{self.run_dir}/benchmarks/{rule}/{name}.tsv" if rule not in STUDY_RULES
                else f"{self.run_dir}/benchmarks/{rule}.tsv")


@dataclass(frozen=True)
class CacheLayout:
    """Where real repositories' sources and environments are cached: once per pin (the source's
    SHA-256 or commit; the environment's key) for every run under ``results``."""

    results: str

    @property
    def root(self) -> str:
        return f"{Path(self.results).as_posix()}/_cache"

    def source_dir(self, pin: str) -> str:
        return f"{self.root}/sources/{pin}"

    def source_record(self, pin: str) -> str:
        return f"{self.source_dir(pin)}/{SOURCE_RECORD}"

    def env_dir(self, key: str) -> str:
        return f"{self.root}/envs/{key}"

    def env_record(self, key: str) -> str:
        return f"{self.env_dir(key)}/{ENV_RECORD}"

    def image_record(self, name: str, digest: str) -> str:
        """The docker backend's image ``name`` as built (its tag and image id), by the digest of
        its build context: a changed Dockerfile is a new record, so a new build."""
        return f"{self.root}/images/{name}/{digest}.json"


@dataclass(frozen=True)
class TrialLayout:
    run_dir: str
    trial: str

    @property
    def trial_dir(self) -> str:
        return f"{self.run_dir}/trials/{self.trial}"

    def stage_dir(self, stage: str) -> str:
        return f"{self.trial_dir}/{stage}"

    def stage_json(self, stage: str) -> str:
        return f"{self.stage_dir(stage)}/{STAGE_FILE}"

    def snapshot(self, stage: str) -> str:
        return f"{self.stage_dir(stage)}/{SNAPSHOT}"

    def file(self, stage: str, name: str) -> str:
        return f"{self.stage_dir(stage)}/{name}"

    @property
    def carries_state(self) -> bool:
        """A trial whose sessions leave their harness's state for the next (``resume``, ``compact``:
        its id ends with the mode, trial/continuation.py): its session stages also declare ``carry``."""
        return self.trial.endswith(STATE_SUFFIXES)

    def outputs(self, stage: str, carry: bool | None = None) -> dict[str, str]:
        """Every file the stage's rule declares as its output (``carry``: a session's carried state;
        default: whether the trial carries state)."""
        out = {"stage": self.stage_json(stage)}
        if stage != "score":
            out["snapshot"] = self.snapshot(stage)
        if stage == "scaffold":
            out["manifest"] = self.file(stage, MANIFEST)
        elif stage.startswith("session_"):
            out |= {"ledger": self.file(stage, LEDGER), "transcript": self.file(stage, TRANSCRIPT),
                    "stderr": self.file(stage, AGENT_STDERR), "cleave_diff": self.file(stage, CLEAVE_DIFF),
                    "events": self.file(stage, EVENTS), "residency": self.file(stage, RESIDENCY),
                    "abstention": self.file(stage, ABSTENTION)}
            if self.carries_state if carry is None else carry:
                out["carry"] = self.file(stage, CARRY)
        elif stage.startswith("handoff_"):
            out |= {"ledger": self.file(stage, LEDGER), "carry": self.file(stage, CARRY),
                    "context": self.file(stage, CONTEXT)}
        elif stage == "score":
            out["scorecard"] = self.file(stage, SCORECARD)
        return out

    def log(self, stage: str) -> str:
        rule = stage_rule(stage)
        return RunLayout(self.run_dir).log(rule, self.trial if rule == stage else f"{self.trial}.{stage}")

    def benchmark(self, stage: str) -> str:
        rule = stage_rule(stage)
        return RunLayout(self.run_dir).benchmark(rule, self.trial if rule == stage else f"{self.trial}.{stage}")


def trial_layout(stage_dir: Path) -> TrialLayout:
    """The layout of the trial a stage directory belongs to (``<study>/trials/<trial>/<stage>``)."""
    stage_dir = Path(stage_dir)
    return TrialLayout(str(stage_dir.parent.parent.parent), stage_dir.parent.name)
