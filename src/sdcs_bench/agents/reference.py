"""The built-in reference policies: deterministic agents with no model (docs/agents.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import Harness, Invocation, SessionContext
from sdcs_bench.agents.stochastic import dropped
from sdcs_bench.trial.components import AgentConfig
from sdcs_bench.trial.standards import policy_briefing

POLICY_SCRIPT = Path(__file__).with_name("reference_policy.py")
FACT_POLICY_SCRIPT = Path(__file__).with_name("fact_policy.py")
POLICY_CHANNEL = Path(__file__).with_name("policy_channel.py")  # both scripts ask the controller through it
POLICY_RULES = Path(__file__).resolve().parents[1] / "trial" / "policy_rules.py"  # loaded by the policy, by path


def fact_briefing(params: dict, prompt: str, workload, *, handshake: bool = False, pause_s: float = 0.0) -> dict:
    """A fact-driven policy's briefing (docs/coherence.md): per motif, where its secret lives and
    every file the sprint asks for as a template. No value: those it must find in the sandbox. With
    ``handshake`` (a session cut at an edit) it asks the controller after each write."""
    return {
        "params": dict(params),
        "prompt": prompt,
        "handshake": handshake,
        "pause_s": pause_s,
        "facts": [
            {"id": m.id, "index": m.index, "secret": m.secret, "name": m.name,
             "edits": [{"path": e.path, "template": e.template.read_text()} for e in m.edits]}
            for m in (workload.facts.motifs if workload.facts is not None else ())
        ],
    }


def policy_params(agent_cfg: AgentConfig | dict, notes_file: str | None) -> dict:
    """What a reference policy's process is told: its agent file's ``policy`` settings, as the
    trial file states them, and the notes file of the trial's arm. The arm is the one source of that
    name (a policy keeps notes only where the arm put the file); the closed forms read it from the
    arm too (agents/expectations.py)."""
    return {**(AgentConfig.of(agent_cfg).raw.get("policy") or {}), "notes_file": notes_file}


POLICY_STATE = ".specsnap-policy"  # a gold-patch policy's conversation state, in its private HOME


# Between two actions of a session that records its writes (every session after the first, for the
# cost of resuming: coherence/resume.py), a pause well beyond the write record's time resolution
# (session/cleave.py MTIME_SLACK_S, 10 ms), so each write is told apart from the next step's call.
RECORD_GAP_S = 0.05


def pause_between_actions(ctx: SessionContext) -> float:
    """How long the policy pauses after each action: ``RECORD_GAP_S`` in a later session that records
    its writes; else nothing. (Where a cut at an edit can land, the cut handshake makes it wait for the
    controller's answer instead: :func:`cut_handshake`.)"""
    return RECORD_GAP_S if ctx.index > 1 else 0.0


def cut_handshake(ctx: SessionContext) -> bool:
    """Does the policy ask the controller before each next action? In a session cut at an edit: the
    controller answers once it has judged every earlier write, so the cut lands exactly at any load."""
    return ctx.session.cleave.edit_limit is not None


class ReferenceHarness(Harness):
    name = "reference"
    unsupported_continuations = {}  # every mode (the fact-driven and standards policies: refused by the plan)

    def carried_state(self, ctx: SessionContext) -> list[str]:
        """Its conversation file (the prompts it was given), as a harness's session file."""
        return [f"{POLICY_STATE}/{ctx.conversation}.json"] if ctx.conversation else []

    def invocation(self, ctx: SessionContext) -> Invocation:
        params = policy_params(self.cfg, ctx.arm.notes_file)
        if params.get("on_missing_fact"):  # a fact-driven policy on a coherence workload
            return Invocation(
                argv=[sys.executable, "-I", "-S", "-B", str(FACT_POLICY_SCRIPT)],
                stdin=json.dumps(fact_briefing(params, ctx.session.prompt, ctx.workload, handshake=cut_handshake(ctx),
                                               pause_s=pause_between_actions(ctx))).encode(),
                ro_binds=[FACT_POLICY_SCRIPT, POLICY_CHANNEL],
                network=False,
            )
        # a stochastic policy (agents/stochastic.py) is told only the requirements it keeps in this trial
        left_out = dropped(params, ctx.arm.name, ctx.seed, (r.id for r in ctx.workload.requirements))
        briefing = {
            "params": {k: v for k, v in params.items() if k != "keep"},
            "prompt": ctx.session.prompt,
            "skills": [
                {
                    "id": req.id,
                    "text": req.text,
                    "gold": req.gold.read_text(),
                    "summary": req.summary,
                    "summary_patch": req.summary_patch.read_text(),
                    "amendment": req.amendment,
                    "superseded": req.superseded_gold.read_text() if req.superseded_gold else None,
                }
                for req in ctx.workload.requirements if req.id not in left_out
            ],
            "baseline": ctx.workload.baseline_gold.read_text() if ctx.workload.baseline_gold else None,
            "hints": [{"text": h.text, "names": list(h.names)} for h in ctx.workload.hints],
            "standards": policy_briefing(ctx.workload.standards) if ctx.workload.standards is not None else None,
            "meter": ctx.session.cleave.metered,  # ask before each metered step (a token or turn cut)
            "handshake": cut_handshake(ctx),
            "pause_s": pause_between_actions(ctx),
            **({"continuation": ctx.continuation} if ctx.continuation else {}),
        }
        return Invocation(  # (-S: a policy is the standard library only; the site's .pth files cost 45 ms a start)
            argv=[sys.executable, "-I", "-S", "-B", str(POLICY_SCRIPT)],
            stdin=json.dumps(briefing).encode(),
            ro_binds=[POLICY_SCRIPT, POLICY_RULES, POLICY_CHANNEL],
            network=False,
        )

    def usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage:
        return TokenUsage(source="none")  # no model is called: zero is exact

    def turns(self, transcript: Path) -> int:
        if not transcript.is_file():
            return 0
        # (a ``committed`` line is the outcome of the action before it, not a turn)
        return sum(1 for line in transcript.read_text().splitlines()
                   if line.startswith("{") and '"action": "committed"' not in line)
