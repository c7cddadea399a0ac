"""What every real harness adapter shares: its binary, its endpoint, its key, its sandbox needs.

An adapter (one small module per harness) subclasses :class:`RealHarness` and supplies
``command`` (the headless command line and any config files it writes into the session's private
HOME), ``native_usage`` (its own token report, as disjoint components) and, where it has them,
the exact-stop hooks. The session runner supplies the rest: the sandbox, the private HOME, the
model proxy on ``ctx.endpoint``, the watcher, the git guard and the timeout.

Agent config keys read here (``conf/agent/NAME.yaml``, defaults in ``conf/config.yaml`` ``agent_defaults``;
the key policy is :mod:`sdcs_bench.agents.credentials`, shared helpers :mod:`sdcs_bench.agents.helpers`):

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

import shutil
import sys
from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from sdcs_bench.agents.install import harness_home, resolve_binary
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import Harness, Invocation, SessionContext

HOOK_SCRIPT = Path(__file__).with_name("harness_files") / "cleave_hook.py"


class RealHarness(Harness):
    # The pin name in harnesses/pins.yaml (None: the adapter runs a binary of the user's).
    pin: ClassVar[str | None] = None
    # How the arm's AGENTS.md reaches this harness (recorded on every session).
    context_via: ClassVar[str] = "not exposed"

    @property
    def provider(self) -> str:
        return self.cfg.provider

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.cfg.options)

    def binary(self) -> Path:
        return resolve_binary(self.pin or self.name, self.cfg.binary)

    def hook_command(self, mode: str, ctx: SessionContext) -> str:
        """The shell command a harness runs as its pre-/post-tool hook."""
        return f"{sys.executable} -I -B {HOOK_SCRIPT} {mode} --repo {ctx.workdir}"

    def sandbox_paths(self) -> list[Path]:
        """Read-only paths the harness needs inside the sandbox: its install, the node runtime."""
        paths = [harness_home(), HOOK_SCRIPT]
        node = shutil.which("node")
        if node:
            paths.append(Path(node).resolve().parent.parent)
        if self.cfg.binary:
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
