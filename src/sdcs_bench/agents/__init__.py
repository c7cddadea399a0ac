"""Agents: a harness (how to run it) plus its settings. One small adapter module per harness.

Adapters are loaded by name on first use, so a harness's module (and whatever it imports) costs
nothing to a study that does not run it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from sdcs_bench.core.errors import unknown
from sdcs_bench.agents.base import Harness, Invocation, SessionContext
from sdcs_bench.trial.components import AgentConfig, agent_kind

ADAPTERS: dict[str, str] = {
    "reference": "reference:ReferenceHarness",
    "command": "command:CommandHarness",
    "claude_code": "claude_code:ClaudeCodeHarness",
    "codex": "codex:CodexHarness",
    "gemini_cli": "gemini_cli:GeminiCliHarness",
    "opencode": "opencode:OpencodeHarness",
    "aider": "aider:AiderHarness",
    "mini_swe_agent": "mini_swe_agent:MiniSweAgentHarness",
}


def harness_class(kind: str) -> type[Harness]:
    module, cls = ADAPTERS[kind].split(":")
    return getattr(import_module(f"{__name__}.{module}"), cls)


def make_harness(agent_cfg: AgentConfig | dict[str, Any]) -> Harness:
    agent = AgentConfig.of(agent_cfg)
    if agent.harness not in ADAPTERS:
        raise unknown(f"harness of agent {agent.name!r}:", agent.harness, ADAPTERS)
    return harness_class(agent.harness)(agent)


__all__ = ["agent_kind", "ADAPTERS", "Harness", "Invocation", "SessionContext", "harness_class", "make_harness"]
