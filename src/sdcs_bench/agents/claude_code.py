"""Claude Code (``claude``), driven headless through the session's model proxy.

- Command: ``claude -p PROMPT --output-format json --dangerously-skip-permissions --settings JSON
  --model M`` with cwd = the sandbox. Never ``--bare``: it silently drops the hooks.
- Endpoint: ``ANTHROPIC_BASE_URL`` = the proxy, ``ANTHROPIC_API_KEY`` = ``ctx.api_key`` (environment
  only), ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``. ``IS_SANDBOX=1`` lets the skip-permissions
  flag run as root (we are inside bubblewrap).
- Private state: ``CLAUDE_CONFIG_DIR`` = ``HOME/.claude`` (sessions under ``projects/``, the
  ``.claude.json`` state), auto-memory off.
- Context: this version reads the repository's ``AGENTS.md`` natively, as "project instructions"
  (observed in the request body), so nothing is written for it.
- Exact stop (``--settings`` hooks): PostToolUse on ``Edit|Write|MultiEdit|NotebookEdit`` prints
  ``{"continue": false}`` once the cleave fired; PreToolUse on every tool denies (exit 2) after
  the cleave, so a ``git commit`` issued in the same reply as the edit never runs.
- Native usage: the final JSON result's ``modelUsage`` (per model, every sub-agent and side call
  included): ``inputTokens`` excludes the cache, so the four fields are already disjoint. Falls
  back to the result's ``usage`` block (main model only) when ``modelUsage`` is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import Invocation, SessionContext
from sdcs_bench.agents.helpers import copy_records, home_files, json_lines, proxy_env_flag
from sdcs_bench.agents.real import RealHarness

EDIT_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"


class ClaudeCodeHarness(RealHarness):
    name = "claude_code"
    pin = "claude_code"
    context_via = "AGENTS.md read natively (project instructions)"
    exact_stop = True
    repo_memory_globs = ("CLAUDE.md", "CLAUDE.local.md", "*/CLAUDE.md", ".claude/*", ".mcp.json")
    unsupported_continuations = {}  # resume (--session-id, then --resume) and compact (/compact), checked on the pin
    # The opening of every compaction prompt of the pinned version (/compact's and its variants').
    compaction_request = "Your task is to create a detailed summary"

    def config_dir(self, ctx: SessionContext) -> Path:
        return ctx.home / ".claude"

    def settings(self, ctx: SessionContext) -> dict[str, Any]:
        def hook(mode: str) -> list[dict[str, Any]]:
            return [{"type": "command", "command": self.hook_command(mode, ctx), "timeout": 30}]

        return {
            "hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": hook("pre")}],
                "PostToolUse": [{"matcher": EDIT_TOOLS, "hooks": hook("post")}],
            },
            "autoUpdates": False,
            "includeCoAuthoredBy": False,
            **dict(self.options.get("settings") or {}),
        }

    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        config = self.config_dir(ctx)
        config.mkdir(parents=True, exist_ok=True)
        if self.compacting(ctx):
            # The compact continuation: the resumed conversation gets ``/compact`` as its first user
            # message, then the session's prompt; headless, a slash command is only read from a
            # stream-json input (checked on the pinned version: its compaction request reaches the
            # proxy and the next request carries the summary, not the history).
            argv = [str(self.binary()), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                    "--verbose"]
        else:
            argv = [str(self.binary()), "-p", ctx.session.prompt, "--output-format", "json"]
        argv += ["--dangerously-skip-permissions", "--settings", json.dumps(self.settings(ctx))]
        if self.cfg.model:
            argv += ["--model", str(self.cfg.model)]
        if ctx.conversation:  # resume, compact: a conversation of a fixed id, resumed after the first session
            argv += ["--resume", ctx.resume_id] if ctx.resuming else ["--session-id", ctx.conversation]
        argv += [str(a) for a in self.options.get("extra_args") or []]
        env = {
            **proxy_env_flag(),
            "IS_SANDBOX": "1",
            "ANTHROPIC_BASE_URL": ctx.endpoint or "",
            "ANTHROPIC_API_KEY": ctx.api_key or "",
            "CLAUDE_CONFIG_DIR": str(config),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        return argv, env

    @staticmethod
    def compacting(ctx: SessionContext) -> bool:
        return ctx.resuming and (ctx.continuation or {}).get("mode") == "compact"

    def invocation(self, ctx: SessionContext) -> Invocation:
        inv = super().invocation(ctx)
        if self.compacting(ctx):
            turns = ("/compact", ctx.session.prompt)
            inv.stdin = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": t}}) + "\n"
                                for t in turns).encode()
        return inv

    def carried_state(self, ctx: SessionContext) -> list[str]:
        """The conversation's transcript, ``projects/<the sandbox's path>/<id>.jsonl`` under its config
        directory: all ``--resume`` reads (checked on the pinned version)."""
        if not ctx.conversation:
            return []
        return [rel for rel in home_files(ctx.home, ".claude/projects") if rel.rsplit("/", 1)[-1] == f"{ctx.conversation}.jsonl"]

    def compaction(self, ctx: SessionContext) -> dict[str, Any] | None:
        """Its stream's ``compact_boundary`` event (trigger, tokens before and after) and the summary
        message its transcript marks ``isCompactSummary``."""
        boundary = next((d for d in json_lines(ctx.stage_dir / "transcript.jsonl")
                         if d.get("type") == "system" and d.get("subtype") == "compact_boundary"), None)
        if boundary is None:
            return None
        meta = boundary.get("compact_metadata") or boundary.get("compactMetadata") or {}
        meta = meta if isinstance(meta, dict) else {}
        # The summary: in this conversation's own transcript, the first compact summary after this
        # session's compaction (the transcript carried in holds earlier sessions' lines too).
        summary, after = None, False
        for path in sorted(self.native_dir(ctx).glob(f"**/{ctx.conversation}.jsonl")):
            for d in json_lines(path):
                if d.get("type") == "system" and d.get("subtype") == "compact_boundary" and d.get("uuid") == boundary.get("uuid"):
                    after = True
                elif after and d.get("isCompactSummary") and summary is None:
                    content = (d.get("message") or {}).get("content")
                    summary = content if isinstance(content, str) else json.dumps(content)

        def count(value: Any) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return {"by": "harness", "trigger": str(meta.get("trigger"))[:40], "tokens_before": count(meta.get("pre_tokens")),
                "tokens_after": count(meta.get("post_tokens")), "summary": (summary or "")[:20_000] or None}

    def keep_records(self, ctx: SessionContext) -> list[str]:
        """The session transcript(s) under ``CLAUDE_CONFIG_DIR/projects`` (sub-agents' included)."""
        kept = copy_records(ctx.home, ".claude/projects", "**/*.jsonl", self.native_dir(ctx))
        return [p.relative_to(ctx.stage_dir).as_posix() for p in kept]

    @staticmethod
    def result(transcript: Path) -> dict[str, Any] | None:
        """The final ``result`` object (``--output-format json``: one object; stream-json: the last
        ``type == "result"`` line)."""
        found = None
        text = transcript.read_text(errors="replace").strip()
        candidates = [text] + text.splitlines()[::-1]
        for chunk in candidates:
            try:
                data = json.loads(chunk)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("type") == "result":
                found = data
                break
        return found

    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        result = self.result(transcript)
        if result is None:
            return None
        per_model = result.get("modelUsage")
        if isinstance(per_model, dict) and per_model:
            total = TokenUsage(source="native")
            for m in per_model.values():
                total = total + TokenUsage(
                    uncached_input=int(m.get("inputTokens") or 0), cache_read=int(m.get("cacheReadInputTokens") or 0),
                    cache_write=int(m.get("cacheCreationInputTokens") or 0), output=int(m.get("outputTokens") or 0),
                    source="native")
            return total
        u = result.get("usage")
        if not isinstance(u, dict):
            return None
        return TokenUsage(uncached_input=int(u.get("input_tokens") or 0),
                          cache_read=int(u.get("cache_read_input_tokens") or 0),
                          cache_write=int(u.get("cache_creation_input_tokens") or 0),
                          output=int(u.get("output_tokens") or 0), source="native")
