"""The credential policy of real agents: a key comes from the environment only and is never
written to a file (every key's text is what the redaction pass removes). The harness never holds
it: each session's harness is handed a fresh stand-in (:func:`new_session_token`), the only
credential its model proxy accepts; in forward mode the proxy puts the real key in its place on
the way upstream (docs/agents.md#the-model-proxy)."""

from __future__ import annotations

import os
import secrets
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial.components import AgentConfig

REPLAY_KEY = "specsnap-replay-not-a-key"  # what a harness is handed in replay mode
SESSION_TOKEN_PREFIX = "specsnap-session-"


def new_session_token() -> str:
    """A fresh random stand-in for one session's API key (``specsnap-session-`` + 32 hex digits):
    what the harness is handed, in both modes, and what its proxy (``ModelProxy(session_token=…)``)
    requires of every request. Worth nothing anywhere else, and nothing once the session ends."""
    return SESSION_TOKEN_PREFIX + secrets.token_hex(16)


def proxy_mode(agent_cfg: AgentConfig | dict[str, Any]) -> str:
    agent = AgentConfig.of(agent_cfg)
    if agent.proxy not in ("forward", "replay"):
        raise SpecSnapError(f"agent {agent.name!r}: proxy {agent.proxy!r} is not valid", ("forward", "replay"))
    return agent.proxy


def api_key(agent_cfg: AgentConfig | dict[str, Any]) -> str:
    """The agent's real key: from the environment only (forward mode), or a dummy (replay mode).
    It goes to the session's proxy (``ModelProxy(credential=…)``), never to the harness. Missing →
    one clear error, raised before any session starts."""
    agent = AgentConfig.of(agent_cfg)
    if proxy_mode(agent) == "replay":
        return REPLAY_KEY
    var = agent.api_key_env
    if not var:
        raise SpecSnapError(f"agent {agent.name!r} runs in forward mode but names no api_key_env")
    value = os.environ.get(str(var), "")
    if not value:
        raise SpecSnapError(
            f"agent {agent.name!r} needs its API key in the environment variable {var} "
            f"(provider {agent.provider}); set it{_replay_hint(agent)}"
        )
    return value


def _replay_hint(agent: AgentConfig) -> str:
    """The offline stand-in for this agent's harness, if the project has one."""
    from sdcs_bench.core.paths import conf_dir

    replay = f"replay_{agent.harness}"
    try:
        known = (conf_dir() / "agent" / f"{replay}.yaml").is_file()
    except SpecSnapError:  # a pipeline stage on a node without conf/
        known = False
    if known:
        return f", or test the harness offline with its replay agent (agent={replay})"
    return ""


def secret_values(agent_cfg: AgentConfig | dict[str, Any] | None = None) -> list[str]:
    """Every API key in this process's environment (what a redaction pass must never let through)."""
    names = set(KEY_ENV_NAMES)
    if agent_cfg and AgentConfig.of(agent_cfg).api_key_env:
        names.add(str(AgentConfig.of(agent_cfg).api_key_env))
    values = {os.environ[n] for n in names if len(os.environ.get(n, "")) >= 8}
    return sorted(values, key=len, reverse=True)


KEY_ENV_NAMES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                 "OPENROUTER_API_KEY", "AZURE_OPENAI_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY")
