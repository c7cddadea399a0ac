"""A trial's session schedule: the workload's own, transformed by the variant (docs/protocol.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdcs_bench.core.errors import unknown
from sdcs_bench.trial.components import VariantConfig
from sdcs_bench.trial.workload_model import NEUTRAL_PROMPT, CleaveRule, SessionSpec, Workload

TRANSFORMS = ("as_workload", "single_session")


def effective_schedule(workload: Workload, variant: VariantConfig | Mapping[str, Any]) -> tuple[SessionSpec, ...]:
    variant = VariantConfig.of(variant)
    kind = variant.schedule
    if kind not in TRANSFORMS:
        raise unknown(f"schedule transform of variant {variant.name!r}:", str(kind), TRANSFORMS)
    sessions = workload.schedule
    if kind == "single_session":
        # The control: everything the schedule would tell the agent, in one session, never cleaved.
        # (the neutral continuation sentence belongs to continuations, not to the control)
        own = [(s.prompt.replace(NEUTRAL_PROMPT, "").strip(), s.prompt_source) for s in sessions]
        prompts = [text for text, _ in own if text]
        sources = [src for text, src in own if text]
        sessions = (SessionSpec("S1", "\n\n".join(prompts), " + ".join(sources), CleaveRule("none")),)
    override = variant.cleave
    if override:
        rule = CleaveRule.parse(override)
        sessions = tuple(
            SessionSpec(s.name, s.prompt, s.prompt_source, rule if s.cleave.active else s.cleave) for s in sessions
        )
    return sessions
