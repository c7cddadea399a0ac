"""What can run with what, checked before any work: an agent's readiness, the workloads a policy
fits, handoffs, continuation modes and metered cuts, and the local backend's unconfined agents.

What a reference policy can be planned into is declared on the policy (``capabilities:`` in
``conf/agent/<name>.yaml``, read by :class:`Capabilities`), never inferred from how it behaves.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import project_root
from sdcs_bench.trial import config
from sdcs_bench.trial.components import AgentConfig, VariantConfig, session_agent
from sdcs_bench.trial.continuation import Continuation
from sdcs_bench.trial.notes import VERSION as NOTES_VERSION
from sdcs_bench.trial.workload_model import CleaveRule

CAPABILITIES = "capabilities"  # the agent config's block; a trial does not carry it (see trial_agent)
WORKLOADS = ("with_facts", "without_facts", "any")


@dataclass(frozen=True)
class Capabilities:
    """What an agent can be planned into, as its config declares it (``capabilities:``). A real
    agent declares none and can be planned into anything; a reference policy declares all three.

    - ``meters``: it keeps a meter, so a token or turn cut rule can cut it (docs/protocol.md#cut-points).
    - ``runs_alone``: it runs a whole trial from its own state (facts found, a task queue), so it is
      neither handed off to or from nor continued in any mode but ``reset``.
    - ``workloads``: where it has competence: ``with_facts`` (workloads that author facts,
      docs/coherence.md), ``without_facts`` (the others), or ``any``.
    """

    meters: bool = True
    runs_alone: bool = False
    workloads: str = "any"

    @classmethod
    def of(cls, agent_cfg: AgentConfig | dict[str, Any]) -> Capabilities:
        agent = AgentConfig.of(agent_cfg)
        block = agent.raw.get(CAPABILITIES)  # (planning reads it from the agent's file; a trial does not carry it)
        where = f"agent {agent.name!r} (conf/agent/{agent.name}.yaml {CAPABILITIES}:)"
        keys = ("meters", "runs_alone", "workloads")
        if block is None:
            if agent.reference:
                raise SpecSnapError(f"{where}: a reference policy declares what it can be planned into: "
                                    f"{', '.join(keys)}")
            return cls()
        if not isinstance(block, dict) or set(block) != set(keys):
            raise SpecSnapError(f"{where} is a mapping of exactly {', '.join(keys)}, not {block!r}")
        for key in ("meters", "runs_alone"):
            if not isinstance(block[key], bool):
                raise SpecSnapError(f"{where} {key} is true or false, not {block[key]!r}")
        if block["workloads"] not in WORKLOADS:
            raise SpecSnapError(f"{where} workloads is one of {', '.join(WORKLOADS)}, not {block['workloads']!r}")
        return cls(block["meters"], block["runs_alone"], block["workloads"])


def trial_agent(agent: AgentConfig) -> dict[str, Any]:
    """The agent as a trial carries it: everything but its capabilities, which only planning reads."""
    raw = agent.to_dict()
    return {k: v for k, v in raw.items() if k != CAPABILITIES} if CAPABILITIES in raw else raw


def check_handoff(first: AgentConfig | dict[str, Any], second: AgentConfig | dict[str, Any], workload) -> None:
    """A handoff runs with any pair of agents but the policies that run a whole trial alone."""
    for cfg in (AgentConfig.of(first), AgentConfig.of(second)):
        if Capabilities.of(cfg).runs_alone:
            raise SpecSnapError(f"reference policy {cfg.name!r} runs a whole trial alone; hand off between "
                                "gold-patch reference policies (ref_oracle, ref_amnesiac, ref_verbatim_notes, ...) "
                                "or real agents")


def check_policy_fits(workload, agent_cfg: AgentConfig | dict[str, Any]) -> None:
    """A policy works on the workloads whose competence it declares: the fact-driven policies on
    workloads that author facts (docs/coherence.md); the gold-patch policies elsewhere (a motif's
    gold spans three files, which a cleave would split); a real agent, or a policy that does
    nothing (``acts: false``), anywhere."""
    agent = AgentConfig.of(agent_cfg)
    fits = Capabilities.of(agent).workloads
    if fits == "any":
        return
    from sdcs_bench.sandbox.withhold import withholding_workloads

    if fits == "with_facts" and workload.facts is None:
        raise SpecSnapError(f"reference policy {agent.name!r} works from authored facts, which workload "
                            f"{workload.id} does not have", withholding_workloads())
    if fits == "without_facts" and workload.facts is not None:
        raise SpecSnapError(f"reference policy {agent.name!r} writes gold patches, which on workload "
                            f"{workload.id} span the three files of a motif; use a fact-driven policy or ref_null",
                            [*_fact_driven_agents(), "ref_null"])


def _fact_driven_agents() -> list[str]:
    out = []
    for name in config.options("agent"):
        try:
            if Capabilities.of(config.entity("agent", name)).workloads == "with_facts":
                out.append(name)
        except SpecSnapError:
            continue  # (a broken agent file is said where it is used, not in another's message)
    return out


def check_continuation(cont: Continuation, first: AgentConfig | dict[str, Any],
                       second: AgentConfig | dict[str, Any] | None, n_sessions: int = 2,
                       writer: AgentConfig | None = None) -> None:
    """A continuation mode every agent of the trial can do headless, before any work: one line
    naming the harness and why it cannot (its adapter declares it), or the policy that cannot; for
    a summary or notes written by a replay model (the session's own, or ``writer``: the run's
    ``handoff.writer``), its script's entries for each handoff's model call."""
    from sdcs_bench.agents import make_harness

    first = AgentConfig.of(first)
    second = AgentConfig.of(second) if second is not None else None
    for cfg in (first, second) if second is not None else (first,):
        if Capabilities.of(cfg).runs_alone:
            raise SpecSnapError(f"continuation {cont} is refused for reference policy {cfg.name!r}: it runs a whole "
                                "trial from its own state (facts found, a task queue); use a gold-patch reference "
                                "policy or a real agent")
        why = make_harness(cfg).unsupported_continuations.get(cont.mode)
        if why:
            raise SpecSnapError(f"continuation {cont} is refused for agent {cfg.name!r} (harness {cfg.harness}): "
                                f"{why}")
    if cont.is_written:
        for k in range(2, n_sessions + 1):
            handed = session_agent(first, second, k - 1)  # (the agent of the session handed over)
            if handed.reference:
                continue  # (a reference policy's own summariser writes it)
            who = writer or handed
            sessions = (who.replay_script_data or {}).get("sessions") or {}
            role = "the run's handoff.writer" if writer is not None else "agent"
            if who.proxy == "replay" and f"handoff_{k}" not in sessions and "*" not in sessions:
                raise SpecSnapError(f"continuation {cont.mode} needs the model call of handoff_{k}, which the replay "
                                    f"script of {role} {who.name!r} ({who.replay_script}) does not script: add "
                                    f"entries under sessions: handoff_{k}")
            entries = sessions.get(f"handoff_{k}", sessions.get("*")) or []
            if who.proxy == "replay" and cont.mode == "notes" and not any(_writes_notes(e) for e in entries):
                raise SpecSnapError(f"continuation notes needs its handoff_{k} call answered in the notes schema, which "
                                    f"the replay script of {role} {who.name!r} ({who.replay_script}) does not script "
                                    f"(its summary would be taken for the notes): add an entry under sessions: "
                                    f"handoff_{k} with match: {NOTES_VERSION!r}")
    if cont.mode == "compact":
        who = session_agent(first, second, 2)  # (the agent of sessions 2 onwards, whose harness compacts)
        marker = make_harness(who).compaction_request
        data = who.replay_script_data or {}
        sessions = {str(key): v for key, v in (data.get("sessions") or {}).items()}
        for k in range(2, n_sessions + 1):
            entries = sessions.get(str(k), data.get("responses")) or []
            if who.proxy == "replay" and marker and not any(_answers(entry, marker) for entry in entries):
                raise SpecSnapError(f"continuation compact needs the compaction request of session {k} answered, which "
                                    f"the replay script of agent {who.name!r} ({who.replay_script}) does not script "
                                    f"(its next reply would be taken for the summary): add an entry with match: "
                                    f"{marker!r} under sessions: {k}")
    if cont.carries_state and second is not None and second.harness != first.harness:
        raise SpecSnapError(f"continuation {cont} resumes the first agent's own conversation, which "
                            f"{second.name!r} (harness {second.harness}) cannot: hand off with trace:<budget> "
                            "or summary")


def _writes_notes(entry: Any) -> bool:
    """Whether a replay script's handoff entry is meant for the notes call: it is served only to
    the notes prompt (its ``match`` names the schema), or its answer is notes."""
    if not isinstance(entry, dict):
        return False
    match = entry.get("match")
    text = str(entry.get("text", ""))
    return (isinstance(match, str) and "specsnap-notes" in match) or (text.lstrip().startswith("{")
                                                                      and NOTES_VERSION in text)


def _answers(entry: Any, marker: str) -> bool:
    """Whether a replay script's entry is served to the harness's compaction request: its ``match``
    is part of what that request is known to say (or says it and more)."""
    match = entry.get("match") if isinstance(entry, dict) else None
    return isinstance(match, str) and bool(match) and (match in marker or marker in match)


def check_policy_meters(agent_cfg: AgentConfig | dict[str, Any], variant_cfg: VariantConfig | dict[str, Any],
                        schedule: list[CleaveRule]) -> None:
    """A token or turn cut rule counts model calls; a reference policy stands in with its meter,
    which only the policies that declare one keep (the gold-patch policies, docs/protocol.md#cut-points):
    the fact-driven and the standards policies refuse such a rule here, before any work."""
    rules = sorted({str(rule) for rule in schedule if rule.metered})
    if rules and not Capabilities.of(agent_cfg).meters:
        raise SpecSnapError(f"variant {VariantConfig.of(variant_cfg).name!r} cuts by {', '.join(rules)}, which reference "
                            f"policy {AgentConfig.of(agent_cfg).name!r} does not meter; use an edit rule (nth_py_edit:N) with it, or a "
                            "gold-patch reference policy or a real agent")


def check_agent_ready(agent_cfg: dict[str, Any], key: bool = True) -> AgentConfig:
    """Everything a real agent needs, checked before any work starts: a known harness, its binary
    installed, its replay script valid (replay mode) or its API key in the environment (forward).
    Returns the agent ready to run: a replay script's content embedded, so no stage reads
    ``conf/`` (:func:`trial_agent` is what a trial carries of it): its typed model, built once.
    ``key=False``: the key is not asked for (a plan that runs nothing: an estimate)."""
    from sdcs_bench.agents import make_harness
    from sdcs_bench.agents.credentials import api_key, proxy_mode
    from sdcs_bench.agents.real import RealHarness
    from sdcs_bench.proxy import ReplayScript

    harness = make_harness(agent_cfg)
    if not harness.needs_model:
        return harness.cfg
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
    return AgentConfig.of(agent_cfg)


def check_unconfined(backend: str, cfg: dict[str, Any], agents: Any) -> None:
    """The ``local`` backend runs an agent unconfined on the host (it reads what the user can read,
    reaches the host's network): with a real agent (not a reference policy) only when the user says
    so (``sandbox.allow_unconfined=true``), and then said once, before any work."""
    real = sorted(a.name for a in agents if not a.reference)
    if backend != "local" or not real:
        return
    if not cfg.get("allow_unconfined"):
        raise SpecSnapError(f"the local sandbox backend would run {', '.join(real)} unconfined on this host (it could "
                            "read your files and keys and reach your network); use bwrap or docker, or say "
                            "sandbox.allow_unconfined=true to run it so anyway", ("bwrap", "docker"))
    print(f"specsnap: {', '.join(real)} will run UNCONFINED on this host (sandbox backend local, "
          "sandbox.allow_unconfined=true)", file=sys.stderr)
