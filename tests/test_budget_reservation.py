"""A budget that cannot be overrun (docs/cost.md#during-a-run-budgets), attacked as a run at the edge
of its cap: several sessions (separate processes, each its own ModelProxy wired to its Budget as
session/runner.py wires them) forward calls at once to a scripted upstream. Before a call is
forwarded its worst case is reserved in the run's locked spend ledger; the run's spend never passes
the cap. And what a replay spends: nothing, so a budget never stops it, unless the run prices replay
for a test of the budget (labelled so)."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from test_cost import _budget_dir

from sdcs_bench.core.prices import PriceTable
from sdcs_bench.core.tokens import count_tokens
from sdcs_bench.proxy import ModelProxy, ReplayScript, read_ledger
from sdcs_bench.proxy import wire
from sdcs_bench.session import budget as budget_mod
from sdcs_bench.session.budget import Budget, spend_path

ROOT = Path(__file__).resolve().parents[1]
TABLE = PriceTable.parse(yaml.safe_load((ROOT / "conf" / "prices.yaml").read_text()))
MODEL = "claude-sonnet-4-5"  # $3 input, $15 output per million
# One call as the upstream answers it: 35,000 input + 40,000 output tokens of claude-sonnet-4-5 = $0.705
# (the call), to a request that carries those 35,000 input tokens and states max_tokens 40,000.
USAGE = {"uncached_input": 35_000, "cache_read": 0, "cache_write": 0, "output": 40_000, "reasoning": 0}
CALL_USD = 0.705
TEXT = " hello" * 35_000
BODY = {"model": MODEL, "max_tokens": 40_000, "messages": [{"role": "user", "content": TEXT}]}


_run_dir = _budget_dir  # a run directory with the price table and the budget's limits


def _upstream(tmp_path: Path, delay_s: float = 0.4, usage: dict | None = None, **entry) -> ModelProxy:
    """The scripted upstream a forwarding proxy relays to (a replay proxy, as tests/test_proxy.py uses)."""
    path = tmp_path / "upstream.yaml"
    path.write_text(json.dumps({"model": MODEL, "responses": [
        {"text": "ok", "usage": usage or USAGE, "repeat": True, "delay_s": delay_s, **entry}]}))
    return ModelProxy(ledger=tmp_path / "upstream.jsonl", script=ReplayScript.load(path).for_session(1, {}))


def _wired(proxy: ModelProxy, budget: Budget) -> ModelProxy:
    """As session/runner.py's _proxy: every answered call's cost goes to the run's spend ledger."""
    counted = proxy.on_answered

    def answered(tokens, seq, at):
        counted(tokens, seq, at)
        budget.charge(proxy.ledger.rows[seq - 1])

    proxy.on_answered = answered
    return proxy


def _session(run: str, trial: str, upstream: str | None, calls: int, barrier, script: str | None = None) -> None:
    """One session in its own process: its proxy, its budget, ``calls`` calls (stopping at the first
    refused one). ``upstream``: forward to it; ``script``: a replay proxy serving that script."""
    budget = Budget(Path(run), trial, "session_1")
    common = {"ledger": Path(run) / f"{trial}.ledger.jsonl", "refusal": lambda: None or budget.refusal()}
    if upstream is not None:
        proxy = ModelProxy(mode="forward", upstreams={"anthropic": upstream}, **common)
    else:
        proxy = ModelProxy(mode="replay", model=MODEL, script=ReplayScript.load(Path(script)).for_session(1, {}),
                           **common)
    with _wired(proxy, budget):
        if barrier is not None:
            barrier.wait(timeout=60)
        for _ in range(calls):
            if httpx.post(proxy.url + "/v1/messages", json=BODY, timeout=60).status_code != 200:
                break
    (Path(run) / f"{trial}.record.json").write_text(json.dumps(budget.record()))


def _sessions(run: Path, upstream: str, trials: list[str], calls: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(trials))
    procs = [ctx.Process(target=_session, args=(str(run), t, upstream, calls, barrier)) for t in trials]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in spend_path(run).read_text().splitlines()]


def _spent(run: Path) -> float:
    return sum(row["cost_usd"] for row in _rows(run))


def _answered(run: Path, trial: str) -> int:
    return sum(1 for r in read_ledger(run / f"{trial}.ledger.jsonl") if r["status"] == 200 and not r["refused"])


# --------------------------------------------------------------------------- the attack


def test_four_sessions_at_the_edge_of_the_cap_never_pass_it(tmp_path):
    """The issue's run: $1.99 of a $2 cap spent, four sessions each make a $0.705 call at once. Each
    session's check saw $1.99 < $2, so all four were answered and the run spent $4.81. Now each call
    reserves its worst case first: none fits, all four are refused, the run stays at $1.99."""
    run = _run_dir(tmp_path, max_usd=2)
    Budget(run, "earlier", "session_1").charge({"model": MODEL, "seq": 1, "kind": "generate", "status": 200,
                                                "usage": {"uncached_input": 100_000, "output": 112_666}})
    assert _spent(run) == pytest.approx(1.99, abs=1e-4)
    trials = [f"trial_{i}" for i in range(4)]
    with _upstream(tmp_path) as upstream:
        _sessions(run, upstream.url, trials, calls=1)
    assert _spent(run) <= 2.0
    assert sum(_answered(run, t) for t in trials) == 0
    for t in trials:
        record = json.loads((run / f"{t}.record.json").read_text())
        assert record["refused_by"] == "run" and "could cost up to" in record["refused"]


def test_concurrent_sessions_from_nothing_spend_at_most_the_cap(tmp_path):
    """From $0 of $2, four sessions each try three $0.705 calls at once (each call 0.4 s in flight).
    Without reservations all four first calls pass the check at $0 ($2.82). With them at most two
    worst cases (~$0.76 each) are held at once, and the run's spend never passes $2."""
    run = _run_dir(tmp_path, max_usd=2)
    trials = [f"trial_{i}" for i in range(4)]
    with _upstream(tmp_path) as upstream:
        _sessions(run, upstream.url, trials, calls=3)
    answered = sum(_answered(run, t) for t in trials)
    assert 1 <= answered <= 2
    assert _spent(run) == pytest.approx(answered * CALL_USD) and _spent(run) <= 2.0
    budget = Budget(run, "after", "session_1")
    assert budget.record()["run_reserved_usd"] == 0  # every reservation became a cost or was released
    kinds = [row.get("kind") for row in _rows(run)]
    assert kinds.count("reserve") == answered and kinds.count("spend") == answered
    # Every session ended refused by the run's budget (so its status is budget_exhausted), never answered past it.
    for t in trials:
        assert json.loads((run / f"{t}.record.json").read_text())["refused_by"] == "run"


def test_a_trial_cap_holds_under_concurrent_calls_of_one_session(tmp_path):
    """One session's harness sending calls in parallel (Claude Code's side calls do) cannot pass
    its trial's cap either: the reservations of its own calls in flight count."""
    run = _run_dir(tmp_path, trial_max_usd=1.0)
    budget = Budget(run, "t", "session_1")
    with _upstream(tmp_path) as upstream, _wired(ModelProxy(
            ledger=tmp_path / "l.jsonl", mode="forward", upstreams={"anthropic": upstream.url},
            refusal=budget.refusal), budget) as proxy:
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            codes = list(pool.map(lambda _: httpx.post(proxy.url + "/v1/messages", json=BODY, timeout=60).status_code,
                                  range(4)))
    assert codes.count(200) == 1 and codes.count(403) == 3
    assert budget.spent()[1] == pytest.approx(CALL_USD) and budget.refused_by == "trial"


# --------------------------------------------------------------------------- the worst case of a call


def _worst(protocol: str, payload: dict, model: str = MODEL, path: str = "/v1/messages"):
    body = json.dumps(payload).encode()
    return budget_mod.worst_case(TABLE, protocol, model, payload, body)


def test_the_worst_case_counts_the_request_and_its_own_output_limit_per_wire():
    text = "def f(x):\n    return x + 1\n" * 200
    sent = count_tokens(json.dumps({"model": MODEL, "max_tokens": 1000, "messages": [{"role": "user",
                                                                                      "content": text}]}))
    w = _worst(wire.ANTHROPIC, {"model": MODEL, "max_tokens": 1000, "messages": [{"role": "user", "content": text}]})
    assert w.input_tokens >= sent  # never fewer than the o200k_base tokens of the request as sent
    assert w.output_tokens == 1000 and w.output_limit == "max_tokens"
    assert w.usd == pytest.approx((w.input_tokens * 3.00 + 1000 * 15.00) / 1e6)
    # OpenAI Chat: max_completion_tokens (or the older max_tokens), times n choices
    chat = _worst(wire.OPENAI_CHAT, {"model": "gpt-5", "max_completion_tokens": 500, "n": 3, "messages": []}, "gpt-5")
    assert chat.output_tokens == 1500 and chat.output_limit == "max_completion_tokens x n=3"
    assert _worst(wire.OPENAI_CHAT, {"model": "gpt-5", "max_tokens": 700, "messages": []}, "gpt-5").output_tokens == 700
    # OpenAI Responses: max_output_tokens (reasoning included)
    resp = _worst(wire.OPENAI_RESPONSES, {"model": "gpt-5", "max_output_tokens": 900, "input": "hi"}, "gpt-5")
    assert resp.output_tokens == 900 and resp.output_limit == "max_output_tokens"
    # Gemini: generationConfig.maxOutputTokens (or its proto name), thinking beside it unless it is off
    gem = _worst(wire.GEMINI, {"contents": [], "generationConfig": {"maxOutputTokens": 800}}, "gemini-2.5-pro")
    assert gem.output_tokens == 800 + budget_mod.GEMINI_THINKING_TOKENS
    off = _worst(wire.GEMINI, {"contents": [], "generation_config": {"max_output_tokens": 800, "candidate_count": 2,
                                                                     "thinking_config": {"thinking_budget": 0}}},
                 "gemini-2.5-pro")
    assert off.output_tokens == 1600


def test_a_request_without_an_output_limit_gets_its_providers_default():
    for protocol, model, family in [(wire.ANTHROPIC, MODEL, "anthropic"), (wire.OPENAI_CHAT, "gpt-5", "openai"),
                                    (wire.OPENAI_RESPONSES, "gpt-5", "openai")]:
        w = _worst(protocol, {"model": model, "messages": []}, model)
        assert w.output_tokens == budget_mod.DEFAULT_OUTPUT_TOKENS[family]
        assert w.output_limit.startswith("none stated")
    gem = _worst(wire.GEMINI, {"contents": []}, "gemini-2.5-pro")
    assert gem.output_tokens == budget_mod.DEFAULT_OUTPUT_TOKENS["gemini"] + budget_mod.GEMINI_THINKING_TOKENS
    # a limit that is no number is no limit
    assert _worst(wire.ANTHROPIC, {"max_tokens": "5", "messages": []}).output_tokens == \
        budget_mod.DEFAULT_OUTPUT_TOKENS["anthropic"]


def test_cache_writes_are_reserved_at_the_write_price_and_a_long_input_at_the_long_context_tier():
    plain = _worst(wire.ANTHROPIC, {"max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
    assert plain.input_usd_per_m == 3.00
    cached = _worst(wire.ANTHROPIC, {"max_tokens": 10, "system": [{"type": "text", "text": "s",
                                                                   "cache_control": {"type": "ephemeral"}}]})
    assert cached.input_usd_per_m == 3.75
    hour = _worst(wire.ANTHROPIC, {"max_tokens": 10, "system": [{"type": "text", "text": "s", "cache_control": {
        "type": "ephemeral", "ttl": "1h"}}]})
    assert hour.input_usd_per_m == 6.00
    long = _worst(wire.ANTHROPIC, {"max_tokens": 10, "messages": [{"role": "user", "content": " hello" * 210_000}]})
    assert long.long_context and long.input_usd_per_m == 6.00 and long.output_usd_per_m == 22.50
    # input the body does not carry (a stored conversation, a file by reference): the whole context window
    stored = _worst(wire.OPENAI_RESPONSES, {"model": "gpt-5", "previous_response_id": "resp_1", "input": "go",
                                            "max_output_tokens": 10}, "gpt-5")
    assert stored.input_tokens >= budget_mod.CONTEXT_TOKENS
    assert _worst(wire.OPENAI_RESPONSES, {"model": "mystery", "input": "x"}, "mystery") is None  # no price


def test_a_call_that_cannot_be_priced_is_refused_before_it_is_made(tmp_path):
    run = _run_dir(tmp_path, max_usd=10)
    budget = Budget(run, "t", "session_1")
    with _upstream(tmp_path, delay_s=0) as upstream, _wired(ModelProxy(
            ledger=tmp_path / "l.jsonl", mode="forward", upstreams={"anthropic": upstream.url},
            refusal=budget.refusal), budget) as proxy:
        resp = httpx.post(proxy.url + "/v1/messages", json={**BODY, "model": "mystery-model"})
    assert resp.status_code == 403 and budget.refused_by == "unpriced"
    assert read_ledger(tmp_path / "upstream.jsonl") == []  # never reached the upstream


# --------------------------------------------------------------------------- settled, released, or dropped


def test_a_failed_call_releases_its_reservation_and_the_answered_one_costs_what_it_used(tmp_path):
    run = _run_dir(tmp_path, max_usd=10)
    budget = Budget(run, "t", "session_1")
    with _upstream(tmp_path, delay_s=0, error={"status": 529, "message": "overloaded"}) as upstream, _wired(
            ModelProxy(ledger=tmp_path / "l.jsonl", mode="forward", upstreams={"anthropic": upstream.url},
                       refusal=budget.refusal), budget) as proxy:
        assert httpx.post(proxy.url + "/v1/messages", json=BODY).status_code == 529
    with _wired(ModelProxy(ledger=tmp_path / "l2.jsonl", mode="forward", upstreams={"anthropic": "http://127.0.0.1:9"},
                           refusal=budget.refusal), budget) as proxy:
        assert httpx.post(proxy.url + "/v1/messages", json=BODY).status_code == 502  # never reached anyone
    kinds = [(row.get("kind"), row["cost_usd"]) for row in _rows(run)]
    assert kinds == [("reserve", 0.0), ("release", 0.0), ("reserve", 0.0), ("release", 0.0)]
    assert budget.refused is None and budget.record()["run_reserved_usd"] == 0
    with _upstream(tmp_path, delay_s=0) as upstream, _wired(ModelProxy(
            ledger=tmp_path / "l3.jsonl", mode="forward", upstreams={"anthropic": upstream.url},
            refusal=budget.refusal), budget) as proxy:
        assert httpx.post(proxy.url + "/v1/messages", json=BODY).status_code == 200
    settled = _rows(run)[-1]
    assert settled["kind"] == "spend" and settled["cost_usd"] == pytest.approx(CALL_USD)
    assert settled["reservation"] == _rows(run)[-2]["id"]
    assert _spent(run) == pytest.approx(CALL_USD)  # charged once, though the runner's hook charged it too


def test_a_call_cut_after_it_was_sent_is_charged_its_worst_case(tmp_path):
    """An upstream that stops answering mid-call (a read timeout) may still bill it: the
    reservation stands as its cost."""
    run = _run_dir(tmp_path, max_usd=10)
    budget = Budget(run, "t", "session_1")
    with _upstream(tmp_path, delay_s=2) as upstream, _wired(ModelProxy(
            ledger=tmp_path / "l.jsonl", mode="forward", upstreams={"anthropic": upstream.url},
            refusal=budget.refusal, upstream_timeout_s=0.3), budget) as proxy:
        assert httpx.post(proxy.url + "/v1/messages", json=BODY, timeout=30).status_code == 502
    reserve, spend = _rows(run)
    assert spend["kind"] == "spend" and spend["cost_usd"] == reserve["reserved_usd"] > CALL_USD
    assert spend["settled"].startswith("worst case")


def test_the_summary_handoff_charges_once(tmp_path):
    """session/handoff.py charges its call's row after its proxy stopped: the proxy has already
    turned the reservation into the cost, so the row is not charged twice."""
    run = _run_dir(tmp_path, max_usd=10)
    budget = Budget(run, "t", "handoff_2")
    with _upstream(tmp_path, delay_s=0) as upstream:
        proxy = ModelProxy(ledger=tmp_path / "l.jsonl", mode="forward", upstreams={"anthropic": upstream.url},
                           refusal=budget.refusal)
        with proxy:
            assert httpx.post(proxy.url + "/v1/messages", json=BODY).status_code == 200
    for row in proxy.ledger.rows:
        budget.charge(row)
    assert _spent(run) == pytest.approx(CALL_USD)


def test_a_dead_sessions_reservation_is_charged_and_a_live_ones_is_waited_for(tmp_path, monkeypatch):
    """Reservations carry their process: one whose process is gone (a killed session) is closed and
    charged its worst case (the call it held may have been billed); one whose process lives holds its
    money, and a call that would fit but for it waits (here briefly) before it is refused."""
    monkeypatch.setattr(budget_mod, "HOLD_WAIT_S", 1.0)
    run = _run_dir(tmp_path, max_usd=2.8)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        host = budget_mod._host()
        for i, pid in enumerate([dead.pid, sleeper.pid]):
            row = {"kind": "reserve", "id": f"r{i}", "trial": f"other{i}", "stage": "session_1", "model": MODEL,
                   "reserved_usd": 1.0, "cost_usd": 0.0, "pid": pid, "pid_start": budget_mod._proc_start(pid),
                   "host": host, "at": time.time()}
            with spend_path(run).open("a") as fh:
                fh.write(json.dumps(row) + "\n")
        budget = Budget(run, "t", "session_1")
        assert budget.record()["run_reserved_usd"] == pytest.approx(1.0)  # the live one only
        with _upstream(tmp_path, delay_s=0) as upstream, _wired(ModelProxy(
                ledger=tmp_path / "l.jsonl", mode="forward", upstreams={"anthropic": upstream.url},
                refusal=budget.refusal), budget) as proxy:
            # $1 charged (the dead one) + $1 held + $0.76 at worst fits $2.80
            assert httpx.post(proxy.url + "/v1/messages", json=BODY).status_code == 200
            started = time.monotonic()
            # $1 + $0.705 spent + $1 held + $0.76 does not; without the hold it would: it waits, then is refused
            assert httpx.post(proxy.url + "/v1/messages", json=BODY).status_code == 403
            assert time.monotonic() - started >= 1.0
        released = [row for row in _rows(run) if row.get("kind") == "release"]
        assert [row["reservation"] for row in released] == ["r0"] and "gone" in released[0]["why"]
        assert released[0]["cost_usd"] == 1.0
        assert _spent(run) <= 2.8
    finally:
        sleeper.kill()
        sleeper.wait()
    assert Budget(run, "t2", "session_1").record()["run_reserved_usd"] == 0  # its process is gone now


def test_a_reservation_from_another_host_expires(tmp_path, monkeypatch):
    run = _run_dir(tmp_path, max_usd=2)
    old = time.time() - budget_mod.REMOTE_RESERVATION_TTL_S - 1
    for i, at in enumerate([old, time.time()]):
        row = {"kind": "reserve", "id": f"r{i}", "trial": "x", "stage": "s", "model": MODEL, "reserved_usd": 0.5,
               "cost_usd": 0.0, "pid": 1, "pid_start": "1", "host": "another-node:pid:[1]", "at": at}
        with spend_path(run).open("a") as fh:
            fh.write(json.dumps(row) + "\n")
    assert Budget(run, "t", "session_1").record()["run_reserved_usd"] == pytest.approx(0.5)


# --------------------------------------------------------------------------- a replay spends nothing


def _replay_script(tmp_path: Path) -> Path:
    path = tmp_path / "replay.yaml"
    path.write_text(json.dumps({"model": MODEL, "responses": [{"text": "ok", "usage": USAGE, "repeat": True}]}))
    return path


def test_a_replay_session_is_never_stopped_by_a_budget(tmp_path):
    """The issue's replay study: budget_max_usd=0.05, a replay session (a scripted model, nothing
    paid) was stopped as budget_exhausted. A replay spends $0: three calls answered, nothing in the
    spend ledger, its record says why."""
    run = _run_dir(tmp_path, max_usd=0.05)
    _session(str(run), "replay_trial", None, 3, None, script=str(_replay_script(tmp_path)))
    assert _answered(run, "replay_trial") == 3
    record = json.loads((run / "replay_trial.record.json").read_text())
    assert record["refused"] is None and record["session_spent_usd"] == 0.0
    assert record["replay"].startswith("not paid")
    assert not spend_path(run).exists() or _spent(run) == 0.0
    # even past a cap forward calls reached, a replay session is not stopped
    Budget(run, "paid", "session_1").charge({"model": MODEL, "seq": 1, "usage": USAGE, "status": 200,
                                             "kind": "generate"})
    _session(str(run), "replay_trial_2", None, 2, None, script=str(_replay_script(tmp_path)))
    assert _answered(run, "replay_trial_2") == 2


def test_only_a_run_that_prices_replay_for_a_budget_test_stops_a_replay_and_says_so(tmp_path):
    run = _run_dir(tmp_path, max_usd=1.0, price_replay=True)
    _session(str(run), "replay_trial", None, 3, None, script=str(_replay_script(tmp_path)))
    assert _answered(run, "replay_trial") == 1  # $0.705 charged; the next worst case ($0.76) does not fit $1
    record = json.loads((run / "replay_trial.record.json").read_text())
    assert record["refused_by"] == "run" and record["replay_priced_for_budget_test"] is True
    assert "for a test of the budget" in record["replay"]
    rows = _rows(run)
    assert _spent(run) == pytest.approx(CALL_USD)
    assert all(row.get("replay_priced_for_budget_test") for row in rows)


def test_the_run_writes_its_replay_setting_and_needs_no_price_for_an_unpriced_replay(tmp_path):
    """apply_budget: a replay agent needs no price under a budget (nothing it calls is paid),
    unless the run prices replay for a test of the budget; the setting is written with the limits."""
    from sdcs_bench.core.errors import SpecSnapError
    from sdcs_bench.pipeline.budgets import apply_budget, effective_limits
    from sdcs_bench.pipeline.layout import RunLayout
    from sdcs_bench.pipeline.plan.current import INPUTS_FILE
    from sdcs_bench.session.budget import read_limits

    study = tmp_path / "results" / "s"
    layout = RunLayout(str(study))
    Path(layout.prices_file).parent.mkdir(parents=True, exist_ok=True)
    Path(layout.prices_file).write_text(json.dumps(TABLE.to_dict()))
    (study / INPUTS_FILE).parent.mkdir(parents=True, exist_ok=True)
    (study / INPUTS_FILE).write_text(json.dumps({"agents": {"replay_command": {"proxy": "replay",
                                                                              "model": "replay-model"}}}))
    assert effective_limits(study, {"max_usd": 1})["price_replay"] is False
    apply_budget(study, {"max_usd": 1})
    assert read_limits(study) == {"max_usd": 1.0, "trial_max_usd": None, "price_replay": False}
    with pytest.raises(SpecSnapError, match="prices replay for a test of it, but agent replay_command's model "
                                            "'replay-model' has no price"):
        apply_budget(study, {"max_usd": 1, "price_replay": True})
    with pytest.raises(SpecSnapError, match="true or false"):
        effective_limits(study, {"max_usd": 1, "price_replay": "maybe"})
    # a paid agent's model without a price is refused, replay priced or not
    (study / INPUTS_FILE).write_text(json.dumps({"agents": {"paid": {"proxy": "forward", "model": "mystery"}}}))
    with pytest.raises(SpecSnapError, match="agent paid's model 'mystery' has no price"):
        apply_budget(study, {"max_usd": 1})
    apply_budget(study, {})  # (no budget: nothing to price)
