"""mini-swe-agent (``mini``), driven headless through the session's model proxy.

- Command: ``mini -y --exit-immediately -t PROMPT -m openai/M -c CONFIG -o TRAJ
  --environment-class mswea_env.SpecSnapEnvironment`` with stdin at EOF and cwd = the sandbox.
  ``CONFIG`` (in the private HOME) is the pinned package's own ``mini.yaml`` (tool calling: one
  ``bash`` tool, parallel calls allowed) with our settings merged in: the model's ``api_base``, no
  cost limit (SpecSnap's timeout and budget govern), the environment's repository.
- Endpoint: litellm ``model.model_kwargs.api_base`` = ``PROXY/v1`` (provider openai; ``PROXY``
  for anthropic); ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` = ``ctx.api_key``, environment only.
  ``LITELLM_LOCAL_MODEL_COST_MAP`` keeps litellm offline; ``MSWEA_COST_TRACKING=ignore_errors``
  lets an unpriced model run.
- Private state: ``MSWEA_GLOBAL_CONFIG_DIR`` (its ``.env`` and last-run trajectory) and the
  trajectory (``-o``) are in the private HOME; the trajectory is copied to the stage directory.
- Context: mini reads no context file. The arm's ``AGENTS.md`` is prepended to the first user
  message (the config's ``instance_template``), as the harnesses that read it natively do.
- Exact stop: ``harness_files/mswea_env.py``, a local-environment subclass that, after each
  command, raises mini's ``InterruptAgentFlow`` (exit) once the cleave has fired: the rest of the
  reply's commands never run and mini exits by itself. (mini marks the raising command "not
  executed", as it does its own submit command; the command's output is in the exit message.)
  A single command that edits and commits (``... > x.py && git commit``) is split by the git
  guard, which refuses the commit.
- Native usage: the trajectory's per-call ``extra.response.usage`` (litellm, OpenAI shape):
  ``prompt_tokens`` INCLUDES ``prompt_tokens_details.cached_tokens`` (and, for Anthropic,
  ``cache_creation_input_tokens``); ``completion_tokens`` includes ``reasoning_tokens``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.proxy.wire import chat_usage
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import SessionContext
from sdcs_bench.agents.helpers import copy_record, proxy_env_flag
from sdcs_bench.agents.real import RealHarness

HARNESS_FILES = Path(__file__).with_name("harness_files")
ENV_CLASS = "mswea_env.SpecSnapEnvironment"
KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
API_BASES = {"openai": "{endpoint}/v1", "anthropic": "{endpoint}"}  # litellm appends its own paths


class MiniSweAgentHarness(RealHarness):
    name = "mini_swe_agent"
    pin = "mini_swe_agent"
    context_via = "AGENTS.md prepended to the task message (instance_template of the private config)"
    exact_stop = True
    repo_memory_globs = (".mini-swe-agent/*", "*.traj.json")

    def state_dir(self, ctx: SessionContext) -> Path:
        return ctx.home / ".config" / "mini-swe-agent"

    def trajectory(self, ctx: SessionContext) -> Path:
        return self.state_dir(ctx) / "specsnap.traj.json"

    def sandbox_paths(self) -> list[Path]:
        return [*super().sandbox_paths(), HARNESS_FILES]

    def builtin_config(self) -> dict[str, Any]:
        """The pinned package's own config (default ``mini.yaml``), read from its virtualenv."""
        name = str(self.options.get("config") or "mini.yaml")
        venv = self.binary().parent.parent
        found = sorted(venv.glob(f"lib/python*/site-packages/minisweagent/config/{name}"))
        if not found:
            raise SpecSnapError(f"mini-swe-agent config {name!r} not found under {venv}")
        return yaml.safe_load(found[0].read_text()) or {}

    def model_name(self) -> str:
        model = str(self.cfg.model)
        return model if "/" in model else f"{self.provider}/{model}"

    def config(self, ctx: SessionContext) -> dict[str, Any]:
        config = self.builtin_config()
        agent = config.setdefault("agent", {})
        agent["cost_limit"] = float(self.options.get("cost_limit", 0))
        agents_md = self.agents_md(ctx)
        if agents_md is not None:
            text = agents_md.read_text(errors="replace")
            text = text.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}")  # stays literal
            agent["instance_template"] = (
                f"# AGENTS.md instructions for {ctx.workdir}\n\n<INSTRUCTIONS>\n{{% raw %}}{text}{{% endraw %}}\n"
                f"</INSTRUCTIONS>\n\n" + str(agent.get("instance_template", "{{task}}"))
            )
        model = config.setdefault("model", {})
        kwargs = model.setdefault("model_kwargs", {})
        kwargs["api_base"] = API_BASES[self.provider].format(endpoint=ctx.endpoint)
        env = config.setdefault("environment", {})
        env["cwd"] = str(ctx.workdir)
        env["specsnap_repo"] = str(ctx.workdir)
        for key, value in (self.options.get("config_overrides") or {}).items():
            section = config.setdefault(str(key), {})
            if isinstance(section, dict) and isinstance(value, dict):
                section.update(value)
            else:
                config[str(key)] = value
        return config

    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        if self.provider not in API_BASES:
            raise SpecSnapError(f"agent {self.cfg.name!r}: the mini_swe_agent adapter drives providers "
                                f"{sorted(API_BASES)} (got {self.provider!r})")
        state = self.state_dir(ctx)
        state.mkdir(parents=True, exist_ok=True)
        config_file = state / "specsnap.yaml"
        config_file.write_text(yaml.safe_dump(self.config(ctx), sort_keys=False, allow_unicode=True))
        argv = [str(self.binary()), "-y", "--exit-immediately", "-t", ctx.session.prompt, "-m", self.model_name(),
                "-c", str(config_file), "-o", str(self.trajectory(ctx)), "--environment-class", ENV_CLASS]
        env = {
            **proxy_env_flag(),
            KEY_VARS[self.provider]: ctx.api_key or "",
            "PYTHONPATH": str(HARNESS_FILES),
            "MSWEA_CONFIGURED": "true",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_GLOBAL_CONFIG_DIR": str(state),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONUNBUFFERED": "1",
        }
        return argv, env

    def keep_records(self, ctx: SessionContext) -> list[str]:
        """The trajectory (every message, tool call and command output), as ``mini.traj.json``."""
        return ["mini.traj.json"] if copy_record(self.trajectory(ctx), ctx.stage_dir / "mini.traj.json", ctx.home) else []

    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        kept = ctx.stage_dir / "mini.traj.json"  # the HOME is deleted after this (a link there is never followed)
        if not copy_record(self.trajectory(ctx), kept, ctx.home):
            return None
        data = json.loads(kept.read_text())
        total, found = TokenUsage(source="native"), False
        for message in data.get("messages") or []:
            response = (message.get("extra") or {}).get("response") if isinstance(message, dict) else None
            usage = response.get("usage") if isinstance(response, dict) else None
            if not isinstance(usage, dict):
                continue
            found = True
            total = total + chat_usage(usage, source="native", litellm=True)
        return total if found else None
