"""The generic ``command`` adapter: any headless agent, described entirely in its agent YAML.

    harness: command
    provider: openai
    options:
      argv: [my-agent, --prompt, "{prompt}", --model, "{model}"]
      env: {OPENAI_BASE_URL: "{endpoint}/v1", OPENAI_API_KEY: "{api_key}"}
      prompt_via: argv          # argv | stdin
      ro_binds: []              # extra read-only paths the agent needs inside the sandbox

Placeholders: ``{prompt}``, ``{workdir}``, ``{home}``, ``{endpoint}`` (the session's model
proxy), ``{model}``, ``{python}`` (SpecSnap's interpreter), ``{harness_files}`` (the directory of
helper files shipped with SpecSnap, e.g. ``tiny_agent.py``), ``{api_key}`` (environment only: it
is never written to a file). Its cleave
is the watcher's kill backed by the git guard; its native token report, if any, is not parsed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import Invocation, SessionContext
from sdcs_bench.agents.real import RealHarness


HARNESS_FILES = Path(__file__).with_name("harness_files")


class CommandHarness(RealHarness):
    name = "command"

    def _values(self, ctx: SessionContext) -> dict[str, str]:
        return {"prompt": ctx.session.prompt, "workdir": str(ctx.workdir), "home": str(ctx.home),
                "endpoint": ctx.endpoint or "", "model": str(self.cfg.model), "python": sys.executable,
                "harness_files": str(HARNESS_FILES), "api_key": ctx.api_key or ""}

    @staticmethod
    def _fill(text: str, values: dict[str, str]) -> str:
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        return text

    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        opts = self.options
        if not opts.get("argv"):
            raise SpecSnapError(f"agent {self.cfg.name!r} (harness command) needs options.argv")
        values = self._values(ctx)
        argv = [self._fill(str(a), values) for a in opts["argv"]]
        exe = shutil.which(argv[0]) if "/" not in argv[0] else argv[0]
        if not exe:
            raise SpecSnapError(f"agent {self.cfg.name!r}: command {argv[0]!r} is not on PATH")
        argv[0] = str(Path(exe).resolve())
        env = {k: self._fill(str(v), values) for k, v in (opts.get("env") or {}).items()}
        return argv, env

    def invocation(self, ctx: SessionContext) -> Invocation:
        argv, env = self.command(ctx)
        opts = self.options
        stdin = ctx.session.prompt.encode() if opts.get("prompt_via") == "stdin" else None
        binds = [Path(argv[0]).parent, HARNESS_FILES, *(Path(p) for p in opts.get("ro_binds") or [])]
        return Invocation(argv=argv, env=env, stdin=stdin, ro_binds=[p for p in binds if p.exists()], network=True)

    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        return None
