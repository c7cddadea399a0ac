"""One trial, typed: everything a stage needs, read once from the trial file the plan wrote.

``specsnap plan`` composes ``conf/`` and writes one resolved file per trial
(``results/<run>/plan/trials/<trial>.json``, checked against ``workflow/schemas/trial.schema.yaml``):
the arm's file texts, the agent's settings with every default filled in from ``conf/config.yaml``
(and a replay script's content), the schedule with its prompt texts. :class:`TrialSpec` parses
that file; a stage reads it, its predecessor's outputs and the workload's own files, never
``conf/``. So a cluster job runs exactly the plan its study was started with.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import project_root, run_work_root
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.components import REFERENCE_KIND, AgentConfig, Injection, VariantConfig, session_agent
from sdcs_bench.trial.continuation import Continuation
from sdcs_bench.trial.repo import source_tree
from sdcs_bench.trial.workload import load_workload_dir
from sdcs_bench.trial.workload_model import CleaveRule, SessionSpec, Workload

@dataclass(frozen=True)
class SessionSettings:
    timeout_s: float
    infra_retries: int
    infra_backoff_s: float


@dataclass(frozen=True)
class TrialSpec:
    trial_id: str
    study: str
    run: str
    workload_id: str
    workload_dir: str  # relative to the project root (or absolute)
    workload_fingerprint: str
    arm_config: dict[str, Any]
    agent: AgentConfig
    variant: VariantConfig
    seed: int
    schedule: tuple[SessionSpec, ...]
    stages: tuple[str, ...]
    backend: str
    sandbox_options: dict[str, Any]  # the backend's own settings (docker: image record, limits)
    session: SessionSettings
    scoring_timeout_s: float
    scoring_sentinels: dict[str, Any]
    work_dir: Path
    raw: dict[str, Any] = field(repr=False, compare=False)
    successor: AgentConfig | None = None  # a handoff: the agent of every session after the first
    continuation: Continuation = Continuation()  # how every session after the first continues
    file: Path | None = field(default=None, compare=False)  # the trial file it was read from

    @classmethod
    def load(cls, path: Path) -> TrialSpec:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise SpecSnapError(f"trial file {path} does not exist; run `specsnap plan` first") from None
        except ValueError as exc:
            raise SpecSnapError(f"trial file {path} is not valid JSON: {exc}") from None
        # <run>/plan/trials/<trial>.json
        return dataclasses.replace(cls.from_dict(data, run_dir=path.parent.parent.parent), file=path)

    @classmethod
    def from_dict(cls, data: dict[str, Any], run_dir: Path | None = None) -> TrialSpec:
        """The trial, with its live sandbox under the work root of ``run_dir`` (its run's
        directory; ``results/<run>`` when not given). Where the sandbox lives is decided here, where
        the stage runs, and never written into the trial file: the plan is the same in every clone
        and on every machine, so a clone that pulled finished results finds them up to date."""
        run_dir = Path(run_dir) if run_dir is not None else Path("results") / str(data.get("run", ""))
        try:
            return cls(
                trial_id=data["trial_id"],
                study=data["study"],
                run=data["run"],
                workload_id=data["workload"]["id"],
                workload_dir=data["workload"]["dir"],
                workload_fingerprint=data["workload"]["fingerprint"],
                arm_config=data["arm"],
                agent=AgentConfig.from_dict(data["agent"]),
                variant=VariantConfig.from_dict(data["variant"]),
                seed=int(data["seed"]),
                schedule=tuple(
                    SessionSpec(s["session"], s["prompt"], s["prompt_source"], CleaveRule.parse(s["cleave"]))
                    for s in data["schedule"]
                ),
                stages=tuple(data["stages"]),
                backend=data["sandbox"]["backend"],
                sandbox_options={**(data["sandbox"].get(data["sandbox"]["backend"]) or {}),
                                 "limits": data["sandbox"].get("limits")},
                session=SessionSettings(float(data["session"]["timeout_s"]), int(data["session"]["infra_retries"]),
                                        float(data["session"]["infra_backoff_s"])),
                scoring_timeout_s=float(data["scoring"]["timeout_s"]),
                scoring_sentinels=dict(data["scoring"]["sentinels"]),
                work_dir=run_work_root(run_dir) / data["trial_id"],
                raw=data,
                successor=AgentConfig.from_dict(data["successor"]) if data.get("successor") else None,
                continuation=Continuation.from_trial(data.get("continuation")),
            )
        except (KeyError, TypeError) as exc:
            raise SpecSnapError(f"trial {data.get('trial_id', '?')}: the trial file lacks {exc}; "
                                "it was written by another version of SpecSnap: rerun `specsnap plan`") from None

    # -- what the stages use -------------------------------------------------------------------
    @property
    def score_sandbox_options(self) -> dict[str, Any]:
        """The backend's settings for scoring: docker scores in the workload's image (a real
        repository's environment), which may differ from the one the agent's sessions ran in."""
        options = dict(self.sandbox_options)
        if "score_image_record" in options:
            options["image"], options["image_record"] = options.pop("score_image"), options.pop("score_image_record")
        return options

    @cached_property
    def workload(self) -> Workload:
        root = Path(self.workload_dir)
        root = root if root.is_absolute() else project_root() / root
        generated = self.raw["workload"].get("generate")
        if generated:  # generated from a seed: written here if this machine does not have it yet
            from sdcs_bench.trial.generated import ensure_generated

            ensure_generated(self.workload_id, str(generated["family"]), int(generated["seed"]), root)
        workload = load_workload_dir(root)
        repo = self.raw["workload"].get("repo")
        if repo:  # a real repository: its cached source and environment, as the plan placed them
            return workload.with_source(source_tree(repo["source_dir"]), Path(repo["environment_dir"]))
        return workload

    @cached_property
    def arm(self) -> Arm:
        return Arm.from_config(self.arm_config)

    def agent_for(self, index: int) -> AgentConfig:
        """The agent that runs session ``index``: the successor after the first, in a handoff."""
        return session_agent(self.agent, self.successor, index)

    @property
    def agent_name(self) -> str:
        """The trial's agent as its id, scorecard and leaderboard name it (``a.then.b``: a handoff)."""
        return self.agent.name if self.successor is None else f"{self.agent.name}.then.{self.successor.name}"

    @property
    def agent_kind(self) -> str:
        return self.agent.kind

    @property
    def is_reference(self) -> bool:
        """Only reference policies ran (every session of the trial)."""
        return self.agent_kind == REFERENCE_KIND and (self.successor is None or self.successor.kind == REFERENCE_KIND)

    @property
    def api(self) -> str:
        return self.agent.api

    @property
    def sandbox_dir(self) -> Path:
        """The live sandbox: the same path in every session of the trial."""
        return self.work_dir / "sandbox"

    @property
    def coherence(self) -> dict[str, Any]:
        """What the workload authors about this trial as plain data (``authored``: file -> the files
        it depends on; ``withheld``: paths whose facts are withheld), or {} (docs/coherence.md). The
        trial file's own ``coherence`` block, else what a workload that authors facts (the motifs
        family) states for the trial's variant."""
        if self.raw.get("coherence"):
            return dict(self.raw["coherence"])
        facts = self.workload.facts
        if facts is None:
            return {}
        spec = self.variant.withheld_spec
        return {"authored": {path: list(deps) for path, deps in facts.neighbourhood},
                "withheld": list(facts.withheld_secrets(int(spec["k"]))) if spec else []}

    def session_coherence(self, index: int) -> dict[str, Any]:
        """:attr:`coherence` as session ``index`` meets it: facts withheld only after a session
        (SpecSnap's ``withhold_after_cleave`` twist) are still there before, so nothing counts as
        withheld for the sessions up to it (writing such a file then is not fabricating it)."""
        data = self.coherence
        inject = self.variant.inject
        if inject is not None and inject.withhold and index <= inject.after_session and data.get("withheld"):
            data = {**data, "withheld": []}
        return data

    @property
    def injection(self) -> Injection | None:
        """What the variant's ``inject`` stage does between two sessions (a poison pill, or
        withholding a coherence workload's facts), or None."""
        return self.variant.inject

    @property
    def withhold_before_s1(self) -> tuple[int, str] | None:
        """``(k, mode)`` of a variant that withholds facts before session 1 (at the scaffold)."""
        spec = self.variant.withhold
        return (int(spec["k"]), str(spec["mode"])) if spec else None

    def labels(self) -> dict[str, Any]:
        """What identifies the trial on its scorecard and on every leaderboard row."""
        return {
            "trial": self.trial_id,
            "study": self.study,
            "run": self.run,
            "agent": self.agent_name,
            "agent_kind": self.agent_kind,
            "harness": self.agent.harness,
            "model": self.agent.model,
            **({"successor": {"name": self.successor.name, "agent_kind": self.successor.kind,
                              "harness": self.successor.harness, "model": self.successor.model}}
               if self.successor is not None else {}),
            "variant": self.variant.name,
            "continuation": str(self.continuation),
            # a mode per pair (<mode>_or_<fallback>): what the grid asked for; ``continuation`` is what it got
            **({"continuation_asked": asked} if (asked := (self.raw.get("continuation") or {}).get("asked")) else {}),
            "seed": self.seed,
        }

    @property
    def conversation(self) -> str:
        """The id a harness's conversation is started and resumed under (``resume``, ``compact``):
        a UUID fixed by the trial, so a rerun of a stage uses the same one."""
        import uuid

        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"specsnap:{self.run}/{self.trial_id}"))

    def session_continuation(self, index: int) -> dict[str, Any] | None:
        """What session ``index`` is told of the continuation (``SessionContext.continuation``):
        the mode, and in the modes that carry the harness's state its conversation's id and
        whether it resumes it. None under ``reset`` (the session runs as it always did)."""
        if self.continuation.is_reset:
            return None
        out: dict[str, Any] = {"mode": self.continuation.mode}
        if self.continuation.carries_state:
            out |= {"conversation": self.conversation, "resume": index >= 2}
        return out
