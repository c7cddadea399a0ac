"""opencode (sst/opencode), driven headless.

    opencode run --format json --auto -m specsnap/MODEL PROMPT      (cwd = the sandbox repository)

- Endpoint: the whole config comes in ``OPENCODE_CONFIG_CONTENT`` (no file): one provider
  ``specsnap`` whose ``baseURL`` is the session's proxy (``{endpoint}/v1``) and whose ``apiKey``
  is ``{env:SPECSNAP_OPENCODE_API_KEY}``: the key lives in the environment only.
  ``OPENCODE_DISABLE_MODELS_FETCH=1`` stops the models.dev catalogue download.
- Provider package: for ``provider: openai`` it is ``@ai-sdk/openai`` (opencode's own OpenAI
  path: the Responses API over SSE with ``max_output_tokens``, reasoning effort/summary,
  ``store: false``). ``@ai-sdk/openai-compatible`` (Chat Completions) sends ``max_tokens``, which
  OpenAI rejects for GPT-5 models with a 400 (observed in the request body; opencode issues
  #5421, #40885), so it is only the default for other providers; ``options.provider_npm``
  overrides. Both packages are bundled in the binary: nothing is installed for them.
- Side calls: every session starts with a title-generation call on the small model (here the
  same model); it goes through the proxy like any call, and opencode never counts it itself.
- npm at start: for every config directory (the private ``~/.config/opencode``) opencode forks a
  background ``npm install @opencode-ai/plugin`` into it, even with ``OPENCODE_PURE=1``. It tolerates a
  failure (a "background dependency install failed" warning in its log), so by default the
  session runs with ``npm_config_offline=true`` and fetches nothing (``options.npm_offline:
  false`` lets it reach the registry; note the variable also reaches the agent's own shell).
- Context: opencode reads ``AGENTS.md`` at the repository root natively (its project rules).
- Tools: for a ``gpt-*`` model the edit tool is ``apply_patch`` (``patchText``), beside
  ``bash``, ``read``, ``glob``, ``grep``, ``task`` (sub-agents), ``todowrite``, ``webfetch``,
  ``skill``.
- Stop: none exact. A plugin can abort, but parallel tool calls race it, so the cleave is the
  watcher's process-group kill backed by the git guard (and the proxy refusing later calls).
- Tokens: each finished step has a ``step-finish`` part with ``tokens``: ``input`` EXCLUDES
  ``cache.read``/``cache.write``; ``output`` excludes ``reasoning``. Read from opencode's
  database (``$XDG_DATA_HOME/opencode/opencode.db``: every session, so sub-agents too), else
  from the ``step_finish`` events of the ``--format json`` stdout (the run's own session only).
  A step cut by the kill records nothing (its message keeps zeros), and the title call is
  never counted: native = proxy − title call(s) on a clean run.
- History: opencode's db, snapshots, logs and caches go to the XDG dirs, all inside the
  private HOME.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.agents.base import SessionContext
from sdcs_bench.agents.helpers import _inside_without_links, json_lines, proxy_env_flag
from sdcs_bench.agents.real import RealHarness

KEY_VAR = "SPECSNAP_OPENCODE_API_KEY"  # the key's only home: the harness process's environment
PROVIDER = "specsnap"


class OpencodeHarness(RealHarness):
    name = "opencode"
    pin = "opencode"
    context_via = "AGENTS.md read natively (opencode project rules)"
    exact_stop = False
    repo_memory_globs = (".opencode/*", "opencode.json", "opencode.jsonc")

    @property
    def model(self) -> str:
        return str(self.cfg.model)

    @property
    def sdk_package(self) -> str:
        """The AI SDK provider package opencode talks through (bundled in its binary)."""
        default = "@ai-sdk/openai" if self.provider == "openai" else "@ai-sdk/openai-compatible"
        return str(self.options.get("provider_npm") or default)

    def config(self, ctx: SessionContext) -> dict:
        model = f"{PROVIDER}/{self.model}"
        return {
            "$schema": "https://opencode.ai/config.json",
            "provider": {
                PROVIDER: {
                    "npm": self.sdk_package,
                    "name": "SpecSnap proxy",
                    "options": {"baseURL": f"{ctx.endpoint}/v1", "apiKey": "{env:" + KEY_VAR + "}"},
                    "models": {self.model: {"name": self.model, "tool_call": True}},
                }
            },
            "model": model,
            "small_model": model,
            "autoupdate": False,
            "share": "disabled",
        }

    def data_dir(self, ctx: SessionContext) -> Path:
        return ctx.home / ".local" / "share"

    def command(self, ctx: SessionContext) -> tuple[list[str], dict[str, str]]:
        argv = [str(self.binary()), "run", "--format", "json", "--auto", "-m", f"{PROVIDER}/{self.model}",
                ctx.session.prompt]
        env = {
            **proxy_env_flag(),
            "OPENCODE_CONFIG_CONTENT": json.dumps(self.config(ctx)),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "XDG_CONFIG_HOME": str(ctx.home / ".config"),
            "XDG_DATA_HOME": str(self.data_dir(ctx)),
            "XDG_CACHE_HOME": str(ctx.home / ".cache"),
            "XDG_STATE_HOME": str(ctx.home / ".local" / "state"),
            KEY_VAR: ctx.api_key or "",
        }
        if self.options.get("npm_offline", True):
            env["npm_config_offline"] = "true"
        return argv, env


    # ------------------------------------------------------------------ its store

    MAX_EXPORT_ROWS = 200_000

    def keep_records(self, ctx: SessionContext) -> list[str]:
        """opencode's store (its SQLite database in the private HOME), exported as JSON lines to
        ``native/opencode/store.jsonl``: one line per session (``id``, ``parent_id``) and per part
        (``session_id``, ``message_id``, the message's ``role``, ``time``, the part's ``data``). The
        database is opened read-only and untrusted (the agent can write the HOME)."""
        rows: list[dict] = []
        for db in sorted((self.data_dir(ctx) / "opencode").glob("opencode*.db")):
            if not _inside_without_links(ctx.home, db) or not db.is_file():
                continue
            try:
                rows += self._export(db)
            except (sqlite3.Error, ValueError):
                continue  # a kill mid-write, another schema: the stdout is the normaliser's fallback
        if not rows:
            return []
        out = self.native_dir(ctx) / "store.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows[: self.MAX_EXPORT_ROWS]))
        return [out.relative_to(ctx.stage_dir).as_posix()]

    def _export(self, db: Path) -> list[dict]:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            con.execute("PRAGMA trusted_schema = OFF")
            sessions = [{"kind": "session", "id": sid, "parent_id": parent}
                        for sid, parent in con.execute("SELECT id, parent_id FROM session")]
            roles = {}
            for mid, data in con.execute("SELECT id, data FROM message"):
                try:
                    roles[mid] = json.loads(data).get("role")
                except (ValueError, AttributeError):
                    roles[mid] = None
            parts = []
            for pid, mid, sid, created, data in con.execute(
                    "SELECT id, message_id, session_id, time_created, data FROM part ORDER BY time_created, id"):
                try:
                    parsed = json.loads(data)
                except ValueError:
                    continue
                parts.append({"kind": "part", "id": pid, "message_id": mid, "session_id": sid, "role": roles.get(mid),
                              "time": created, "data": parsed})
        finally:
            con.close()
        return sessions + parts

    # ------------------------------------------------------------------ tokens

    @staticmethod
    def _usage(tokens: dict) -> TokenUsage:
        cache = tokens.get("cache") or {}
        return TokenUsage(uncached_input=int(tokens.get("input") or 0), cache_read=int(cache.get("read") or 0),
                          cache_write=int(cache.get("write") or 0), output=int(tokens.get("output") or 0),
                          reasoning=int(tokens.get("reasoning") or 0), source="native")

    def db_usage(self, ctx: SessionContext) -> TokenUsage | None:
        """Every finished step of every session in opencode's database (the run's session and the
        sub-agent sessions its ``task`` tool started); None when no step finished."""
        found = []
        for db in sorted((self.data_dir(ctx) / "opencode").glob("opencode*.db")):
            try:
                con = sqlite3.connect(db)
                try:
                    rows = con.execute("SELECT data FROM part").fetchall()
                finally:
                    con.close()
            except sqlite3.Error:
                continue  # a kill mid-write, or another schema: the stdout is the fallback
            for (data,) in rows:
                part = json.loads(data)
                if part.get("type") == "step-finish" and isinstance(part.get("tokens"), dict):
                    found.append(self._usage(part["tokens"]))
        return sum(found, TokenUsage(source="native")) if found else None

    def stdout_usage(self, transcript: Path) -> TokenUsage | None:
        """``step_finish`` events of the ``--format json`` stream (the run's own session only)."""
        found = []
        for ev in json_lines(transcript):
            if ev.get("type") != "step_finish":
                continue
            part = ev.get("part")
            if isinstance(part, dict) and isinstance(part.get("tokens"), dict):
                found.append(self._usage(part["tokens"]))
        return sum(found, TokenUsage(source="native")) if found else None

    def native_usage(self, ctx: SessionContext, transcript: Path) -> TokenUsage | None:
        db = self.db_usage(ctx)
        return db if db is not None else self.stdout_usage(transcript)
