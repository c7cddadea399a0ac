"""A trial's components, typed: the agent (and its reference policy), the variant, the study.

The user-facing contract of every component is its YAML file under ``conf/`` and the JSON schema a
trial file is checked against (``workflow/schemas/trial.schema.yaml``; ``tests/test_components.py``
checks each model's fields against it). The planner composes a component once, fills its defaults
from ``conf/`` (an agent's from ``agent_defaults`` in ``conf/config.yaml``: the one home of an agent
setting's default), checks it against the schema and writes it into the trial file; a stage reads it
back as one of these models, built once, and reads attributes. The arm
(:class:`sdcs_bench.trial.arms.Arm`), the continuation
(:class:`sdcs_bench.trial.continuation.Continuation`) and the workload
(:class:`sdcs_bench.trial.workload_model.Workload`) have their models beside their own code.

Each model keeps the mapping it was read from (``to_dict``): that is what a trial file, a scorecard
or a record carries, byte for byte as the plan wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sdcs_bench.core.errors import SpecSnapError

REFERENCE_KIND = "reference policy"
REPLAY_KIND = "replay (scripted, no model)"
BY_HAND_KIND = "by hand"  # a person ran the agent and scored the sandbox (evaluate-sandbox --run)
MODEL_KIND = "model"


def _need(data: Mapping[str, Any], key: str, what: str) -> Any:
    try:
        return data[key]
    except (KeyError, TypeError):
        raise SpecSnapError(f"{what} lacks {key!r}; it was written by another version of SpecSnap: "
                            "rerun `specsnap plan`") from None


@dataclass(frozen=True)
class Keep:
    """A stochastic policy's draws (docs/statistics.md): each requirement kept with ``probability``
    (an arm's own in ``by_arm``), ``paired`` (every arm draws the same uniforms for a seed) or
    ``independent`` draws."""

    probability: float
    by_arm: Mapping[str, float] = field(default_factory=dict)
    draws: str = "paired"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Keep | None:
        if not data:
            return None
        return cls(float(data.get("probability", 1.0)), dict(data.get("by_arm") or {}), str(data.get("draws", "paired")))

    def probability_for(self, arm: str) -> float:
        return float(self.by_arm.get(arm, self.probability))


@dataclass(frozen=True)
class Policy:
    """A reference policy's behaviour preset (an agent file's ``policy:``; docs/agents.md). The
    defaults of its optional settings are here and nowhere else."""

    knows_sprint: str = "from_prompt"  # always | from_prompt | from_hints
    notes: str = "none"  # trial.policy_rules.NOTE_STYLES, or ``facts`` (a fact-driven policy)
    acts: bool = True
    revert_uncommitted: bool = False
    diff_check: bool = False
    hash_check: bool = False
    turn_delay_s: float = 0.0
    on_missing_fact: str | None = None  # a fact-driven policy: skip | fabricate | abstain
    standards: str | None = None  # a standards policy: follow_standard | follow_code
    keep: Keep | None = None  # a stochastic policy

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Policy:
        data = dict(data or {})
        known = {k: data[k] for k in ("knows_sprint", "notes", "acts", "revert_uncommitted", "diff_check",
                                      "hash_check", "on_missing_fact", "standards") if k in data}
        if "turn_delay_s" in data:
            known["turn_delay_s"] = float(data["turn_delay_s"])
        return cls(**known, keep=Keep.from_dict(data.get("keep")))

    @property
    def oracle(self) -> bool:
        return self.knows_sprint == "always"

    @property
    def fact_driven(self) -> bool:
        return self.on_missing_fact is not None


@dataclass(frozen=True)
class AgentConfig:
    """One agent as a trial runs it (``conf/agent/<name>.yaml`` with ``agent_defaults`` filled in: every
    setting the schema requires is there, and none has a default here)."""

    name: str
    harness: str
    label: str
    reference: bool
    replay: bool
    provider: str
    model: str | None
    proxy: str  # forward | replay | none
    api_key_env: str | None
    endpoint: str | None
    binary: str | None
    replay_script: str | None
    stop_grace_s: float
    network: bool
    options: Mapping[str, Any]
    policy: Policy
    replay_script_data: Mapping[str, Any] | None = None  # replay: the script's content, embedded at planning
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentConfig:
        what = f"agent {data.get('name', '?')!r}" if isinstance(data, Mapping) else "an agent"
        need = lambda key: _need(data, key, what)  # noqa: E731
        return cls(
            name=str(need("name")), harness=str(need("harness")), label=str(need("label")),
            reference=bool(need("reference")), replay=bool(need("replay")), provider=str(need("provider")),
            model=need("model"), proxy=str(need("proxy")), api_key_env=need("api_key_env"), endpoint=need("endpoint"),
            binary=need("binary"), replay_script=need("replay_script"), stop_grace_s=float(need("stop_grace_s")),
            network=bool(need("network")), options=dict(need("options") or {}), policy=Policy.from_dict(need("policy")),
            replay_script_data=data.get("replay_script_data"), raw=data)

    @classmethod
    def of(cls, agent: AgentConfig | Mapping[str, Any]) -> AgentConfig:
        """The model of ``agent`` (itself when it is one: built once)."""
        return agent if isinstance(agent, AgentConfig) else cls.from_dict(agent)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)

    @property
    def kind(self) -> str:
        return _kind(self.reference, self.proxy)

    @property
    def api(self) -> str:
        """The provider whose API a session of this agent calls ("none": reference policies, replays)."""
        return self.provider if self.kind == MODEL_KIND else "none"


def _kind(reference: bool, proxy: str | None) -> str:
    """How an agent's rows are labelled everywhere they appear: only a real harness calling a real
    model (proxy ``forward``) produces model results."""
    if reference:
        return REFERENCE_KIND
    if proxy == "replay":
        return REPLAY_KIND
    return MODEL_KIND


def session_agent(first: Any, successor: Any, index: int) -> Any:
    """Who runs session ``index`` of a trial (1-based): the successor after the first, in a handoff
    (so handoff_<k> hands over session k - 1's agent). Typed or as a trial file's mappings."""
    return successor if successor is not None and index >= 2 else first


def agent_kind(agent: AgentConfig | Mapping[str, Any]) -> str:
    """:attr:`AgentConfig.kind` of an agent, typed or as a trial file's mapping."""
    if isinstance(agent, AgentConfig):
        return agent.kind
    return _kind(bool(agent.get("reference")), agent.get("proxy"))


def api_provider(agent: AgentConfig | Mapping[str, Any]) -> str:
    """:attr:`AgentConfig.api` of an agent, typed or as a trial file's mapping."""
    return str(agent.provider if isinstance(agent, AgentConfig) else agent["provider"]) \
        if agent_kind(agent) == MODEL_KIND else "none"


@dataclass(frozen=True)
class Injection:
    """What a variant does between two sessions: plant a poison pill (``poison``: v1, v2, v3) or
    withhold a coherence workload's facts (``withhold``), after session ``after_session``."""

    after_session: int = 1
    poison: str | None = None
    withhold: Mapping[str, Any] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Injection | None:
        if not data:
            return None
        return cls(int(data.get("after_session", 1)), data.get("poison"), data.get("withhold"))


@dataclass(frozen=True)
class VariantConfig:
    """One variant (``conf/variant/<name>.yaml``, or a composition ``a+b``: trial.config)."""

    name: str
    description: str = ""
    schedule: str = "as_workload"  # as_workload | single_session
    cleave: str | None = None  # a cut rule over every session's own (docs/protocol.md#cut-points)
    inject: Injection | None = None
    withhold: Mapping[str, Any] | None = None  # before session 1 (docs/coherence.md)
    standards: Mapping[str, Any] | None = None  # the standards family's layout axes
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantConfig:
        return cls(name=str(_need(data, "name", "a variant")), description=str(data.get("description", "")),
                   schedule=str(data.get("schedule", "as_workload")), cleave=data.get("cleave"),
                   inject=Injection.from_dict(data.get("inject")), withhold=data.get("withhold"),
                   standards=data.get("standards"), raw=data)

    @classmethod
    def of(cls, variant: VariantConfig | Mapping[str, Any]) -> VariantConfig:
        return variant if isinstance(variant, VariantConfig) else cls.from_dict(variant)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)

    @property
    def withheld_spec(self) -> Mapping[str, Any] | None:
        """The withholding this variant does, before session 1 or between sessions (or None)."""
        return self.withhold or (self.inject.withhold if self.inject is not None else None) or None

    @property
    def withholding(self) -> tuple[Mapping[str, Any], int | None] | None:
        """``(spec, after_session)`` of a variant that withholds facts: ``after_session`` None means
        before session 1 (at the scaffold); None when the variant withholds nothing."""
        if self.withhold:
            return self.withhold, None
        if self.inject is not None and self.inject.withhold:
            return self.inject.withhold, self.inject.after_session
        return None


@dataclass(frozen=True)
class StudyConfig:
    """One study (``conf/study/<name>.yaml``): its name, what it is, its grid (the axes' values; what
    each axis means and how the grid is walked: pipeline/plan/grid.py)."""

    name: str
    description: str
    grid: Mapping[str, Any]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StudyConfig:
        grid = _need(data, "grid", f"study {data.get('name', '?')!r}")
        if not isinstance(grid, Mapping):
            raise SpecSnapError(f"study {data.get('name', '?')!r}: grid must be a mapping of axes to values")
        return cls(str(_need(data, "name", "a study")), str(data.get("description", "")), dict(grid))
