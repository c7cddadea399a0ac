"""OpenAI Codex CLI, driven headless.

    codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -C WORKDIR PROMPT

- Endpoint: ``$CODEX_HOME/config.toml`` (CODEX_HOME inside the private HOME) names a custom model
  provider ``specsnap`` whose ``base_url`` is the session's proxy (``{endpoint}/v1``) and
  ``wire_api = "responses"`` (the Responses API over SSE; Codex refuses the chat wire API). The
  key travels in the environment variable the provider's ``env_key`` names, never in a file.
- Context: Codex reads ``AGENTS.md`` from the repository root natively (its "project doc").
- Stop: none exact. ``exec`` ignores a PostToolUse ``continue: false``, and parallel tool calls
  run their pre-hooks before any tool, so the cleave is the watcher's process-group kill backed
  by the git guard (and the proxy refusing every later model call).
- Tools: a model Codex has no bundled metadata for (``gpt-5`` in 0.171.0) runs on fallback
  metadata: the tools are ``exec_command`` (shell), ``write_stdin``, ``view_image``, sub-agents,
  goals and web search, with no separate ``apply_patch`` tool; Codex's edit path is then
  ``apply_patch <<'EOF' ... EOF`` inside ``exec_command``, which Codex intercepts and applies
  itself (a ``file_change`` item). The replay script uses exactly that.
- Tokens: the rollout file under ``$CODEX_HOME/sessions`` gets one ``token_usage_record`` per
  model response, written as the response completes, so it survives the watcher's kill;
  ``turn.completed.usage`` in the ``--json`` stdout is lost on a kill. ``input_tokens`` INCLUDES
  ``cached_input_tokens``; ``output_tokens`` INCLUDES ``reasoning_output_tokens`` (the Responses
  API convention). The rollout is read first, the stdout as a fallback.
  0.171.0 also reports ``cache_write_input_tokens`` (always 0 over the Responses API, which has no
  cache-write field); it is taken as included in ``input_tokens`` like the cached part.
- History: everything Codex keeps (sessions, SQLite state, memories, logs, skills) lives in
  CODEX_HOME, under the private HOME. Under /tmp Codex prints a warning that it will not create its
  PATH helper aliases (``apply_patch``); the in-process interception of ``apply_patch`` still works.
- Options: ``reasoning_effort`` (``model_reasoning_effort``). Request compression is turned off.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import SessionContext
from sdcs_bench.agents.helpers import copy_records, home_files, json_lines, proxy_env_flag, write_file
from sdcs_bench.agents.real import RealHarness

KEY_VAR = "SPECSNAP_CODEX_API_KEY"  # the env var the provider's env_key names (the key lives only there)


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


ROLLOUTS_READ = 64  # rollout files a resume looks through for its conversation's id
ROLLOUT_HEAD = 1 << 20  # the bytes of a rollout read for its first line (its session_meta)


def _uuid(value: object) -> str | None:
    """A conversation id as a resume names it on the next command line: a UUID, else nothing (the
    rollout is the agent's to write; a value that is not one never reaches an argument)."""
    try:
        return str(uuid.UUID(str(value))) if isinstance(value, str) and len(value) <= 64 else None
    except ValueError:
        return None


class CodexHarness(RealHarness):
    name = "codex"
    pin = "codex"
    unsupported_continuations = {
        "compact": "its auto-compaction is reported never to fire under `codex exec` (openai/codex#16033), and a "
                   "manual compaction exists only in its app-server",
    }
    context_via = "AGENTS.md read natively (Codex project doc)"
    exact_stop = False
    repo_memory_globs = (".codex/*",)

    def codex_home(self, ctx: SessionContext) -> Path:
        return ctx.home / ".codex"

    def config_toml(self, ctx: SessionContext) -> str:
        model = str(self.cfg.model)
        effort = self.options.get("reasoning_effort")
        lines = [
            f"model = {_toml_str(model)}",
            'model_provider = "specsnap"',
            'approval_policy = "never"',
            'sandbox_mode = "danger-full-access"',
            "check_for_update_on_startup = false",
            *([f"model_reasoning_effort = {_toml_str(str(effort))}"] if effort else []),
            "",
            "[model_providers.specsnap]",
            'name = "SpecSnap proxy"',
            f"base_url = {_toml_str(f'{ctx.endpoint}/v1')}",
            f"env_key = {_toml_str(KEY_VAR)}",
            'wire_api = "responses"',
            "",
            "[features]",
            "enable_request_compression = false",  # plain JSON bodies (the proxy has no zstd)
            "",
            "[analytics]",
            "enabled = false",
            "",
            "[history]",
            'persistence = "none"',
            "",
        ]
        return "\n".join(lines)

    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        home = self.codex_home(ctx)
        write_file(home / "config.toml", self.config_toml(ctx))
        argv = [
            str(self.binary()), "exec", "--json", "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check", "-C", str(ctx.workdir),
            # the resume continuation: the conversation its rollout (carried to this HOME) records
            *(["resume", str(ctx.resume_id)] if ctx.resuming else []), ctx.session.prompt,
        ]
        env = {**proxy_env_flag(), "CODEX_HOME": str(home), KEY_VAR: ctx.api_key or ""}
        return argv, env


    def _rollouts(self, ctx: SessionContext) -> list[tuple[str, str | None]]:
        """Each rollout file under ``$CODEX_HOME/sessions`` (relative to the HOME, reached without a
        link) with the conversation id its first line records."""
        from sdcs_bench.core import safefs

        out = []
        found = [rel for rel in home_files(ctx.home, ".codex/sessions")
                 if rel.rsplit("/", 1)[-1].startswith("rollout-") and rel.endswith(".jsonl")]
        for path in found[:ROLLOUTS_READ]:  # (the HOME is the agent's: a bounded number, a bounded head each)
            with safefs.open_regular(ctx.home, path) as fh:
                head = fh.read(ROLLOUT_HEAD).split(b"\n", 1)[0] if fh is not None else b""
            try:
                meta = json.loads(head)
            except ValueError:
                meta = {}
            payload = meta.get("payload") if isinstance(meta, dict) else None
            out.append((path, _uuid(payload.get("id")) if isinstance(payload, dict) else None))
        return out

    @staticmethod
    def _conversation(ctx: SessionContext, rollouts: list[tuple[str, str | None]]) -> str | None:
        """The id of the conversation this session ran: the one it resumed, else its first rollout's."""
        return ctx.resume_id if ctx.resuming else next((sid for _, sid in rollouts if sid), None)

    def session_id(self, ctx: SessionContext) -> str | None:
        return self._conversation(ctx, [] if ctx.resuming else self._rollouts(ctx))

    def carried_state(self, ctx: SessionContext) -> list[str]:
        """The rollout that records the conversation (``codex exec resume`` reads it back)."""
        rollouts = self._rollouts(ctx)
        sid = self._conversation(ctx, rollouts)
        return [path for path, found in rollouts if sid and found == sid]

    def keep_records(self, ctx: SessionContext) -> list[str]:
        """The rollout file of every thread (the session and its sub-agents) under ``$CODEX_HOME/sessions``."""
        kept = copy_records(ctx.home, ".codex/sessions", "**/rollout-*.jsonl", self.native_dir(ctx))
        return [p.relative_to(ctx.stage_dir).as_posix() for p in kept]

    # ------------------------------------------------------------------ tokens

    @staticmethod
    def _usage(u: dict) -> TokenUsage:
        """Codex's counts (inclusive, Responses-API style) as disjoint components. ``input_tokens``
        includes ``cached_input_tokens`` (and, by the same convention, ``cache_write_input_tokens``);
        ``output_tokens`` includes ``reasoning_output_tokens``."""
        inp, cached = int(u.get("input_tokens") or 0), int(u.get("cached_input_tokens") or 0)
        written = int(u.get("cache_write_input_tokens") or 0)
        out, reasoning = int(u.get("output_tokens") or 0), int(u.get("reasoning_output_tokens") or 0)
        return TokenUsage(uncached_input=inp - cached - written, cache_read=cached, cache_write=written,
                          output=out - reasoning, reasoning=reasoning, source="native")

    def rollout_usage(self, ctx: SessionContext) -> TokenUsage | None:
        """Every model call's usage in the rollout files (one per thread: the session and any
        sub-agent), each call counted once. Codex 0.171 writes a ``token_usage_record`` line per
        model response (its ``usage`` is that call's); older versions wrote ``event_msg``
        ``token_count`` events with a cumulative ``total_token_usage`` per thread (the last one
        counts). Lines are flushed per call, so a killed session keeps what it spent."""
        calls: dict[str, TokenUsage] = {}
        cumulative: dict[Path, TokenUsage] = {}
        for path in sorted((self.codex_home(ctx) / "sessions").rglob("rollout-*.jsonl")):
            for n, ev in enumerate(json_lines(path)):  # (a kill can cut the last line: skipped)
                payload = ev.get("payload")
                if not isinstance(payload, dict):
                    continue
                if ev.get("type") == "token_usage_record" and isinstance(payload.get("usage"), dict):
                    key = str(payload.get("response_id") or f"{path}:{n}")
                    calls[key] = self._usage(payload["usage"])
                elif payload.get("type") == "token_count":
                    total = (payload.get("info") or {}).get("total_token_usage")
                    if isinstance(total, dict):
                        cumulative[path] = self._usage(total)
        found = list(calls.values()) or list(cumulative.values())
        return sum(found, TokenUsage(source="native")) if found else None

    def stdout_usage(self, transcript: Path) -> TokenUsage | None:
        """``turn.completed.usage`` of the ``--json`` stream (absent when the session was killed)."""
        found = []
        for ev in json_lines(transcript):
            if ev.get("type") == "turn.completed" and isinstance(ev.get("usage"), dict):
                found.append(self._usage(ev["usage"]))
        return sum(found, TokenUsage(source="native")) if found else None

    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        rollout = self.rollout_usage(ctx)
        return rollout if rollout is not None else self.stdout_usage(transcript)
