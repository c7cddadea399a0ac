"""Aider (``aider``), driven headless through the session's model proxy.

- Command: ``aider --message PROMPT --model openai/M --openai-api-base PROXY/v1 --no-stream
  --no-auto-commits --no-dirty-commits --no-gitignore ...`` with cwd = the sandbox. One
  ``--message`` is one exchange: the reply's edits are applied at once, then any reflection
  aider makes itself (a file the reply mentioned is added and the model asked again, lint errors
  fixed; at most three) and the shell commands the reply suggested.
- Shell commands: aider is the only way this harness can commit (auto-commits are off), so its
  suggested shell commands stay on. ``--yes-always`` would decline them (they need an explicit
  yes), so instead aider runs without it, with ``--no-fancy-input`` and stdin at EOF: every
  confirmation takes its default, which is "yes" for adding files, creating files, fixing lint
  errors and running the suggested commands. URL scraping and model-warning links are switched
  off so that no default sends it to the web.
- Endpoint: ``OPENAI_API_KEY`` = ``ctx.api_key`` (environment only); ``LITELLM_LOCAL_MODEL_COST_MAP``
  keeps litellm offline, and aider's own model-info cache in the private HOME is seeded from the
  pinned litellm's bundled price map, so it never fetches one from GitHub.
- Private state: the chat and input histories (which aider writes into the repository by default)
  and the analytics log go to the private HOME; analytics are never sent anywhere.
- Context: aider reads no context file by itself; the arm's ``AGENTS.md`` is added as a read-only
  chat file (``--read AGENTS.md``, aider's way of giving conventions).
- Exact stop: none (no hook). The watcher kills aider at the cleave and the git guard refuses any
  commit; a reply's edits are written before its shell commands run, so an ``edit`` plus a
  ``git commit`` suggested in the same reply never lands. Known gap: aider creates a NEW file by
  touching it empty and writing its content just after; the watcher counts the empty file's close
  as the completed edit and often kills aider in between (an empty file is what survives).
- Repository writes: ``.aider.tags.cache.v4/`` (its repo-map cache, SQLite), recorded as repo
  memory. Aider would normally add ``.aider*`` to the tracked ``.gitignore`` (``--no-gitignore``
  stops that); instead the private HOME's global git ignore file (``~/.config/git/ignore``) lists
  it, so a ``git add -A`` of the session does not commit aider's cache.
- Native usage: the analytics log's ``message_send`` events (one per main-model reply):
  ``prompt_tokens`` (cached tokens included: aider does not split them out for OpenAI) and
  ``completion_tokens`` (reasoning included). Totals match the proxy; the split does not.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import SessionContext
from sdcs_bench.agents.helpers import copy_record, copy_records, json_lines, proxy_env_flag
from sdcs_bench.agents.real import RealHarness

ANALYTICS_LOG = ".aider-specsnap/analytics.jsonl"


class AiderHarness(RealHarness):
    name = "aider"
    pin = "aider"
    context_via = "AGENTS.md added read-only to the chat (--read AGENTS.md)"
    exact_stop = False
    repo_memory_globs = (".aider*",)  # (fnmatch: also everything under .aider.tags.cache.v4/)

    def analytics_log(self, ctx: SessionContext) -> Path:
        return ctx.home / ANALYTICS_LOG

    def _seed_model_info(self, ctx: SessionContext) -> None:
        """Aider fetches litellm's price map from GitHub unless its HOME cache holds a fresh copy:
        seed the cache with the map the pinned litellm ships (offline, and the same every run)."""
        venv = self.binary().parent.parent
        bundled = sorted(venv.glob("lib/python*/site-packages/litellm/model_prices_and_context_window_backup.json"))
        if bundled:
            cache = ctx.home / ".aider" / "caches"
            cache.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bundled[0], cache / "model_prices_and_context_window.json")

    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        if self.provider != "openai":
            raise SpecSnapError(f"agent {self.cfg.name!r}: the aider adapter drives provider openai only "
                                f"(got {self.provider!r})")
        state = self.analytics_log(ctx).parent
        state.mkdir(parents=True, exist_ok=True)
        self._seed_model_info(ctx)
        ignore = ctx.home / ".config" / "git" / "ignore"  # git's default core.excludesFile
        ignore.parent.mkdir(parents=True, exist_ok=True)
        ignore.write_text(".aider*\n")
        model = str(self.cfg.model)
        argv = [
            str(self.binary()), "--message", ctx.session.prompt,
            "--model", model if "/" in model else f"openai/{model}",
            "--openai-api-base", f"{ctx.endpoint}/v1",
            "--no-stream", "--no-pretty", "--no-fancy-input",
            "--no-auto-commits", "--no-dirty-commits", "--no-gitignore",
            "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings", "--no-detect-urls",
            "--analytics-disable", "--analytics-log", str(self.analytics_log(ctx)),
            "--chat-history-file", str(state / "chat.history.md"),
            "--input-history-file", str(state / "input.history"),
            "--encoding", "utf-8",
        ]
        if self.agents_md(ctx) is not None:
            argv += ["--read", "AGENTS.md"]
        argv += [str(a) for a in self.options.get("extra_args") or []]
        env = {
            **proxy_env_flag(),
            "OPENAI_API_KEY": ctx.api_key or "",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "AIDER_CHECK_UPDATE": "false",
            "PYTHONUNBUFFERED": "1",
        }
        return argv, env

    def keep_records(self, ctx: SessionContext) -> list[str]:
        """The chat history (aider's only record of what it read, edited and ran)."""
        kept = copy_records(ctx.home, ".aider-specsnap", "chat.history.md", self.native_dir(ctx))
        return [p.relative_to(ctx.stage_dir).as_posix() for p in kept]

    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        log = self.analytics_log(ctx)
        # the HOME is deleted after this (a link planted there is never followed)
        if not copy_record(log, ctx.stage_dir / "aider.analytics.jsonl", ctx.home):
            return None
        total, found = TokenUsage(source="native"), False
        for event in json_lines(log):  # (a killed run's half-written last line is skipped)
            if event.get("event") != "message_send":
                continue
            props = event.get("properties") or {}
            found = True
            total = total + TokenUsage(uncached_input=int(props.get("prompt_tokens") or 0),
                                       output=int(props.get("completion_tokens") or 0), source="native")
        return total if found else None
