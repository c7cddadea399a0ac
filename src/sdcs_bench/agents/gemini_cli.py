"""Gemini CLI (``gemini``), driven headless through the session's model proxy.

- Command: ``gemini -p PROMPT -o json --yolo --skip-trust -m M``, cwd = the sandbox.
- Endpoint: ``GOOGLE_GEMINI_BASE_URL`` = the proxy, ``GEMINI_API_KEY`` = ``ctx.api_key`` (environment
  only), and the user settings' ``security.auth.selectedType = "gemini-api-key"`` (without it the
  CLI exits 41 asking for an auth method).
- Private state: ``GEMINI_CLI_HOME`` = HOME; settings, chats (``.gemini/tmp/*/chats``) and
  ``projects.json`` all land in the private HOME. Telemetry and usage statistics off.
- Context: the settings' ``context.fileName = ["GEMINI.md", "AGENTS.md"]`` makes the CLI load the
  arm's ``AGENTS.md`` as a context file beside its own ``GEMINI.md``.
- Exact stop (settings ``hooks``): AfterTool on ``write_file|replace`` prints ``{"continue": false}``
  once the cleave fired; BeforeTool on every tool blocks (exit 2) after the cleave, so a
  ``run_shell_command`` with ``git commit`` issued in the same reply never runs.
- Native usage: the stdout report's ``stats.models.*.tokens`` (every model, side calls and
  sub-agents included; printed at exit, also after a hook's stop): ``prompt`` includes ``cached``
  (its ``input`` is ``prompt - cached``). Disjoint: uncached = prompt - cached + tool, cache_read =
  cached, output = candidates, reasoning = thoughts; Gemini has no cache write. Without a report
  (killed), the chat files in the private HOME, whose per-message ``input`` INCLUDES ``cached``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import SessionContext
from sdcs_bench.agents.helpers import copy_records, home_files, json_lines, proxy_env_flag, write_file
from sdcs_bench.agents.real import RealHarness

EDIT_TOOLS = "write_file|replace"
CONTEXT_FILES = ["GEMINI.md", "AGENTS.md"]


class GeminiCliHarness(RealHarness):
    name = "gemini_cli"
    pin = "gemini_cli"
    unsupported_continuations = {
        "compact": "its /compress is interactive only (google-gemini/gemini-cli#10150)",
    }
    context_via = "settings context.fileName = [GEMINI.md, AGENTS.md]"
    exact_stop = True
    repo_memory_globs = ("GEMINI.md", "*/GEMINI.md", ".gemini/*", ".geminiignore")

    def settings(self, ctx: SessionContext) -> dict[str, Any]:
        def hook(mode: str) -> list[dict[str, Any]]:
            return [{"name": f"specsnap-cleave-{mode}", "type": "command",
                     "command": self.hook_command(mode, ctx), "timeout": 30000}]

        return {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "context": {"fileName": CONTEXT_FILES},
            "hooksConfig": {"enabled": True, "notifications": False},
            "hooks": {
                "BeforeTool": [{"matcher": "*", "hooks": hook("pre")}],
                "AfterTool": [{"matcher": EDIT_TOOLS, "hooks": hook("post")}],
            },
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            **dict(self.options.get("settings") or {}),
        }

    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        write_file(ctx.home / ".gemini" / "settings.json", json.dumps(self.settings(ctx), indent=2))
        argv = [str(self.binary()), "-p", ctx.session.prompt, "-o", "json", "--yolo", "--skip-trust"]
        if self.cfg.model:
            argv += ["-m", str(self.cfg.model)]
        if ctx.conversation:  # resume: a conversation of a fixed id, resumed after the first session
            argv += ["--resume", str(ctx.resume_id)] if ctx.resuming else ["--session-id", ctx.conversation]
        argv += [str(a) for a in self.options.get("extra_args") or []]
        env = {
            **proxy_env_flag(),
            "GEMINI_CLI_HOME": str(ctx.home),
            "GOOGLE_GEMINI_BASE_URL": ctx.endpoint or "",
            "GEMINI_API_KEY": ctx.api_key or "",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_TELEMETRY_ENABLED": "false",
        }
        return argv, env


    def carried_state(self, ctx: SessionContext) -> list[str]:
        """Its chat files (``.gemini/tmp/<project>/chats/``, reached without a link) and the file that
        maps the project to them: what ``--resume`` reads."""
        if not ctx.conversation:
            return []
        found = [rel for rel in home_files(ctx.home, ".gemini/tmp")
                 if "/chats/" in rel and ctx.conversation[:8] in rel.rsplit("/", 1)[-1]]
        return found + [p for p in (".gemini/projects.json",) if (ctx.home / p).is_file()]

    def keep_records(self, ctx: SessionContext) -> list[str]:
        """The chat files (``.gemini/tmp/<project>/chats/``): every message and tool call of the session."""
        kept = copy_records(ctx.home, ".gemini/tmp", "*/chats/*.json*", self.native_dir(ctx))
        return [p.relative_to(ctx.stage_dir).as_posix() for p in kept]

    # ------------------------------------------------------------------ what it reported

    @staticmethod
    def report(transcript: Path) -> dict[str, Any] | None:
        """The ``-o json`` object on stdout (printed at exit, also after a hook's stop)."""
        text = transcript.read_text(errors="replace")
        try:
            data = json.loads(text[text.find("{"):] if "{" in text else text)  # any stray line before it
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        report = self.report(transcript)
        models = ((report or {}).get("stats") or {}).get("models")
        if isinstance(models, dict) and models:
            total = TokenUsage(source="native")
            for m in models.values():
                t = m.get("tokens") or {}
                prompt, cached = int(t.get("prompt") or 0), int(t.get("cached") or 0)
                total = total + TokenUsage(uncached_input=prompt - cached + int(t.get("tool") or 0), cache_read=cached,
                                           output=int(t.get("candidates") or 0),
                                           reasoning=int(t.get("thoughts") or 0), source="native")
            return total
        return self.session_file_usage(ctx.home)

    @staticmethod
    def session_file_usage(home: Path) -> TokenUsage | None:
        """Fallback when stdout has no report (a killed harness): the chat files in the private HOME,
        one line per message update (the last update of a message id counts); ``input`` there
        INCLUDES ``cached``."""
        last: dict[str, dict[str, Any]] = {}
        for path in sorted(home.glob(".gemini/tmp/*/chats/*.jsonl")):
            for event in json_lines(path):
                if event.get("type") == "gemini" and isinstance(event.get("tokens"), dict):
                    last[f"{path.name}:{event.get('id')}"] = event["tokens"]
        if not last:
            return None
        total = TokenUsage(source="native")
        for t in last.values():
            prompt, cached = int(t.get("input") or 0), int(t.get("cached") or 0)
            total = total + TokenUsage(uncached_input=prompt - cached + int(t.get("tool") or 0), cache_read=cached,
                                       output=int(t.get("output") or 0), reasoning=int(t.get("thoughts") or 0),
                                       source="native")
        return total
