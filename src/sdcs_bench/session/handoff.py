"""The ``summary`` continuation's model call (docs/protocol.md#continuation-modes): between two
sessions, the same agent's model is asked, through a proxy of its own (replay or forward, as the
agent's sessions use), for a summary of the previous session's transcript, with the fixed,
versioned prompt of ``conf/continuation/``. Its ledger is the trial's handoff cost.

The request is the provider's plainest: one user message, no tools, not streamed (Anthropic
Messages, OpenAI Responses, Gemini generateContent). The request carries a stand-in token; in
forward mode the proxy puts the real key in its place on the way upstream (never into a file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sdcs_bench.agents.credentials import api_key, new_session_token, proxy_mode
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.trial.components import AgentConfig
from sdcs_bench.proxy import INFRA_STATUSES, ModelProxy
from sdcs_bench.session.budget import Budget
from sdcs_bench.session.redact import redact_record

MAX_OUTPUT_TOKENS = 2048


def _request(provider: str, model: str, system: str, text: str, key: str) -> tuple[str, dict[str, str], dict]:
    if provider == "anthropic":
        return ("/v1/messages", {"x-api-key": key, "anthropic-version": "2023-06-01"},
                {"model": model, "max_tokens": MAX_OUTPUT_TOKENS, "system": system,
                 "messages": [{"role": "user", "content": text}]})
    if provider == "openai":
        return ("/v1/responses", {"authorization": f"Bearer {key}"},
                {"model": model, "instructions": system, "input": text, "max_output_tokens": MAX_OUTPUT_TOKENS})
    if provider == "gemini":
        return (f"/v1beta/models/{model}:generateContent", {"x-goog-api-key": key},
                {"systemInstruction": {"parts": [{"text": system}]},
                 "contents": [{"role": "user", "parts": [{"text": text}]}],
                 "generationConfig": {"maxOutputTokens": MAX_OUTPUT_TOKENS}})
    raise SpecSnapError(f"the summary continuation needs a model provider (anthropic, openai, gemini), not {provider!r}")


def _answer(provider: str, data: dict[str, Any]) -> str:
    """The text of a reply (empty when it has none)."""
    if provider == "anthropic":
        return "".join(b.get("text", "") for b in data.get("content") or [] if isinstance(b, dict))
    if provider == "openai":
        return "".join(c.get("text", "") for item in data.get("output") or [] if isinstance(item, dict)
                       for c in item.get("content") or [] if isinstance(c, dict) and c.get("type") == "output_text")
    parts = ((data.get("candidates") or [{}])[0].get("content") or {}).get("parts") or []
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict))


def model_summary(agent_cfg: AgentConfig | dict[str, Any], *, system: str, transcript: str, stage_dir: Path, key: str,
                  timeout_s: float = 600.0, budget: Budget | None = None) -> tuple[str, dict[str, Any]]:
    """Ask the agent's model for the summary; its text and the call's record (tokens from the
    proxy's ledger, ``stage_dir/ledger.jsonl``). ``key`` names the replay script's entries
    (``handoff_<k>``)."""
    import httpx

    from sdcs_bench.proxy import ReplayScript

    agent_cfg = AgentConfig.of(agent_cfg)
    provider, model = agent_cfg.provider, str(agent_cfg.model or "")
    mode = proxy_mode(agent_cfg)
    ledger = Path(stage_dir) / "ledger.jsonl"
    secret = api_key(agent_cfg)  # (replay: a dummy; forward: from the environment, never written)
    token = new_session_token()  # what the request carries; the proxy puts the real key in its place
    path, headers, body = _request(provider, model, system, transcript, token)
    # (under the run's budget, docs/cost.md: the call is refused once it is reached, and charged)
    guard: dict[str, Any] = {"provider": provider, "session_token": token}
    if budget is not None and budget.active:
        guard["refusal"] = budget.refusal
    if mode == "replay":
        data = agent_cfg.replay_script_data
        script = (ReplayScript.from_data(data, Path(str(agent_cfg.replay_script)))
                  if data is not None else None)
        if script is None or (key not in script.sessions and "*" not in script.sessions):
            raise SpecSnapError(f"agent {agent_cfg.name!r}: its replay script has no entries {key!r} for the "
                                "summary continuation's model call")
        proxy = ModelProxy(mode="replay", model=model or script.model, script=script.for_session(key, {}), ledger=ledger,
                           **guard)
    else:
        upstreams = {provider: str(agent_cfg.endpoint)} if agent_cfg.endpoint else None
        proxy = ModelProxy(mode="forward", upstreams=upstreams, ledger=ledger, credential=secret, **guard)
    with proxy:
        try:
            resp = httpx.post(proxy.url + path, json=body, headers={**headers, "content-type": "application/json"},
                              timeout=timeout_s)
            status, data = resp.status_code, (resp.json() if resp.content else {})
        except (httpx.HTTPError, ValueError) as exc:
            status, data = 0, {"error": type(exc).__name__}
    rows = proxy.ledger.rows
    if budget is not None and budget.active:
        for row in rows:
            if row.get("kind") == "generate" and row.get("status") == 200 and not row.get("refused"):
                budget.charge(row)
    tokens = proxy.ledger.totals() if rows else TokenUsage(source="none")
    text = _answer(provider, data) if status == 200 and isinstance(data, dict) else ""
    record = {"by": "model", "mode": mode, "status": status, "calls": len(rows), "tokens": tokens.to_dict(),
              "infra_failure": (f"the summary call answered {status}" if status in INFRA_STATUSES or status in (0, 502)
                                else None)}
    if status != 200:
        record["error"] = json.dumps(data)[:500]
    if budget is not None and budget.refused is not None:
        record["budget"] = budget.record()
    return text, redact_record(record, [secret] if mode == "forward" and secret else [])
