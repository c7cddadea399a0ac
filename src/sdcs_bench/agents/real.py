"""What every real harness adapter shares: its binary, its endpoint, its key, its sandbox needs.

An adapter (one small module per harness) subclasses :class:`RealHarness` and supplies
``command`` (the headless command line and any config files it writes into the session's private
HOME), ``native_usage`` (its own token report, as disjoint components) and, where it has them,
the exact-stop hooks. The session runner supplies the rest: the sandbox, the private HOME, the
model proxy on ``ctx.endpoint``, the watcher, the git guard and the timeout.

Agent config keys read here (``conf/agent/NAME.yaml``):

    harness: claude_code      # which adapter
    provider: anthropic       # anthropic | openai | gemini: the real endpoint, the concurrency resource
    model: claude-sonnet-4-5  # passed to the harness as its model name
    api_key_env: ANTHROPIC_API_KEY
    proxy: forward            # forward (real model) | replay (scripted, offline)
    replay_script: null       # replay mode: path relative to the project root
    endpoint: null            # forward mode: the real endpoint (default: the provider's)
    binary: null              # default: the pinned install (harnesses/pins.yaml)
    stop_grace_s: 10          # exact-stop harnesses: how long the hook's clean exit may take
    options: {}               # adapter-specific
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from abc import abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from sdcs_bench.agents.install import harness_home, resolve_binary
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import Harness, Invocation, SessionContext

HOOK_SCRIPT = Path(__file__).with_name("harness_files") / "cleave_hook.py"
REPLAY_KEY = "specsnap-replay-not-a-key"  # what a harness is handed in replay mode


class RealHarness(Harness):
    # The pin name in harnesses/pins.yaml (None: the adapter runs a binary of the user's).
    pin: ClassVar[str | None] = None
    # How the arm's AGENTS.md reaches this harness (recorded on every session).
    context_via: ClassVar[str] = "not exposed"

    @property
    def provider(self) -> str:
        return str(self.cfg["provider"])

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.cfg["options"] or {})

    def binary(self) -> Path:
        return resolve_binary(self.pin or self.name, self.cfg.get("binary"))

    def hook_command(self, mode: str, ctx: SessionContext) -> str:
        """The shell command a harness runs as its pre-/post-tool hook."""
        return f"{sys.executable} -I -B {HOOK_SCRIPT} {mode} --repo {ctx.workdir}"

    def sandbox_paths(self) -> list[Path]:
        """Read-only paths the harness needs inside the sandbox: its install, the node runtime."""
        paths = [harness_home(), HOOK_SCRIPT]
        node = shutil.which("node")
        if node:
            paths.append(Path(node).resolve().parent.parent)
        if self.cfg.get("binary"):
            paths.append(self.binary().parent)
        return [p for p in paths if p.exists()]

    def invocation(self, ctx: SessionContext) -> Invocation:
        argv, env = self.command(ctx)
        return Invocation(argv=argv, env=env, ro_binds=self.sandbox_paths(), network=True)

    @abstractmethod
    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        """The headless command line and its environment (after writing any config into ctx.home)."""

    def usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        try:
            return self.native_usage(ctx, transcript)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # a killed harness may leave no (or half a) report: absent, not zero

    @abstractmethod
    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        """The harness's own token report for the session, normalised to disjoint components
        (source ``native``); None when the harness left none."""

    def agents_md(self, ctx: SessionContext) -> Path | None:
        path = ctx.workdir / "AGENTS.md"
        return path if path.is_file() else None

    def context_exposure(self, ctx: SessionContext) -> str:
        if self.agents_md(ctx) is None:
            return "none (no AGENTS.md in the repository)"
        return str(self.options.get("context_via") or self.context_via)


def json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, skipping anything else (a killed writer's half line)."""
    for line in path.read_text(errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def write_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def proxy_env_flag() -> dict[str, str]:
    """Environment every real harness gets: no telemetry, no update checks, no colour."""
    return {"NO_COLOR": "1", "DO_NOT_TRACK": "1", "TERM": os.environ.get("TERM", "dumb")}


def proxy_mode(agent_cfg: dict[str, Any]) -> str:
    mode = str(agent_cfg["proxy"])
    if mode not in ("forward", "replay"):
        from sdcs_bench.core.errors import SpecSnapError

        raise SpecSnapError(f"agent {agent_cfg.get('name')!r}: proxy {mode!r} is not valid", ("forward", "replay"))
    return mode


def api_key(agent_cfg: dict[str, Any]) -> str:
    """The key a real harness is handed: from the environment only (forward mode), or a dummy
    (replay mode). Missing → one clear error, raised before any session starts."""
    from sdcs_bench.core.errors import SpecSnapError

    if proxy_mode(agent_cfg) == "replay":
        return REPLAY_KEY
    var = agent_cfg.get("api_key_env")
    if not var:
        raise SpecSnapError(f"agent {agent_cfg.get('name')!r} runs in forward mode but names no api_key_env")
    value = os.environ.get(str(var), "")
    if not value:
        raise SpecSnapError(
            f"agent {agent_cfg.get('name')!r} needs its API key in the environment variable {var} "
            f"(provider {agent_cfg.get('provider')}); set it{_replay_hint(agent_cfg)}"
        )
    return value


def _replay_hint(agent_cfg: dict[str, Any]) -> str:
    """The offline stand-in for this agent's harness, if the project has one."""
    from sdcs_bench.core.errors import SpecSnapError
    from sdcs_bench.core.paths import conf_dir

    replay = f"replay_{agent_cfg.get('harness')}"
    try:
        known = (conf_dir() / "agent" / f"{replay}.yaml").is_file()
    except SpecSnapError:  # a pipeline stage on a node without conf/
        known = False
    if known:
        return f", or test the harness offline with its replay agent (agent={replay})"
    return ""


def secret_values(agent_cfg: dict[str, Any] | None = None) -> list[str]:
    """Every API key in this process's environment (what a redaction pass must never let through)."""
    names = set(KEY_ENV_NAMES)
    if agent_cfg and agent_cfg.get("api_key_env"):
        names.add(str(agent_cfg["api_key_env"]))
    values = {os.environ[n] for n in names if len(os.environ.get(n, "")) >= 8}
    return sorted(values, key=len, reverse=True)


KEY_ENV_NAMES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                 "OPENROUTER_API_KEY", "AZURE_OPENAI_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY")
