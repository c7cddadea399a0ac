"""Cost in money (docs/cost.md): the price table, estimates before a run, and budgets during one."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ROOT, specsnap

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.prices import PriceTable, add, ledger_cost, row_cost
from sdcs_bench.session.budget import Budget, spend_path

TABLE = PriceTable.parse(yaml.safe_load((ROOT / "conf" / "prices.yaml").read_text()))


def test_every_price_names_its_source_and_date_and_a_call_is_priced_by_component():
    for price in TABLE.prices:
        assert price.source.startswith("https://") and len(price.as_of) == 10, price.model
    usage = {"uncached_input": 1_000_000, "cache_read": 1_000_000, "cache_write": 1_000_000, "output": 1_000_000,
             "reasoning": 1_000_000}
    # Sonnet 4.5: 3 + 0.30 + 3.75 + 15 (output) + 15 (reasoning, at the output price); its input is over 200k
    # tokens, so the long-context prices apply: 6 + 0.60 + 7.50 + 22.50 * 2
    assert TABLE.call_cost("claude-sonnet-4-5-20250929", usage) == pytest.approx(6 + 0.6 + 7.5 + 45)
    small = {"uncached_input": 1000, "cache_read": 2000, "cache_write": 3000, "output": 400}
    assert TABLE.call_cost("claude-sonnet-4-5", small) == pytest.approx((3000 + 600 + 11250 + 6000) / 1e6)
    assert TABLE.call_cost("openai/gpt-5", small) == pytest.approx((1250 + 250 + 3750 + 4000) / 1e6)
    assert TABLE.find("gpt-5-mini").model == "gpt-5-mini"  # the exact name wins over gpt-5's patterns


def test_a_model_without_a_price_is_unknown_never_zero():
    assert TABLE.call_cost("replay-model", {"uncached_input": 10}) is None
    assert TABLE.call_cost("replay-model", None) == 0.0  # a refused call used nothing
    answered = {"model": "gpt-5", "usage": None, "kind": "generate", "status": 200, "refused": False}
    assert row_cost(TABLE, answered) is None  # answered without usage in its reply: unknown, not free
    assert row_cost(TABLE, {**answered, "refused": True, "status": 403}) == 0.0
    rows = [{"model": "gpt-5", "usage": {"uncached_input": 1000}}, {"model": "mystery", "usage": {"output": 7}}]
    assert ledger_cost(TABLE, rows) == (None, 7)
    assert add(1.0, None, 2.0) is None and add(1.0, 2.0) == 3.0


def test_a_price_without_its_source_or_with_a_bad_number_is_refused():
    with pytest.raises(SpecSnapError, match="has no source"):
        PriceTable.parse({"models": {"m": {"uncached_input": 1, "cache_read": 1, "cache_write": 1, "output": 1,
                                           "as_of": "2025-01-01"}}})
    with pytest.raises(SpecSnapError, match="needs a price .* for output"):
        PriceTable.parse({"models": {"m": {"uncached_input": 1, "cache_read": 1, "cache_write": 1, "output": -1,
                                           "source": "s", "as_of": "d"}}})


def test_estimate_prints_sessions_tokens_and_dollars_with_their_basis():
    result = specsnap("estimate", "--study", "specsnap_t1_t4", "--override", "agent=[claude_code_sonnet]")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # per trial (tests/test_prices_estimate.py checks every figure): 18 trials on each tier, tier_3's
    # published run taken whole for every trial, cleaved or not
    assert "claude_code_sonnet (claude-sonnet-4-5): 72 trials, 126 sessions, ~59,527,926 tokens, $178.58" in out
    assert "tier_3 (18 trials): 1,107,107 tokens a trial, $3.3213 (range $0.3321-$16.6066) a trial; published" in out
    assert "tier_1 (18 trials): 300,000 tokens a trial" in out
    assert "the workload's TES budget (300,000 tokens a trial, not a measurement)" in out
    ref = specsnap("estimate", "--study", "smoke")
    assert ref.returncode == 0
    assert "ref_oracle (reference policy): 6 trials, 12 sessions, $0 (a reference policy calls no model)" in ref.stdout


def test_estimate_from_a_pilot_uses_its_ledgers(tmp_path):
    pilot = tmp_path / "results" / "pilot"
    pilot.mkdir(parents=True)
    pd.DataFrame([{"trial": "t", "workload": "tier_2"}]).to_csv(pilot / "scorecards.csv", index=False)
    pd.DataFrame([{"trial": "t", "agent": "claude_code_sonnet", "session": "S1", "tokens_uncached_input": 1000,
                   "tokens_cache_read": 0, "tokens_cache_write": 0, "tokens_output": 1000, "tokens_reasoning": 0}]
                 ).to_csv(pilot / "ledger.csv", index=False)
    (pilot / "leaderboard.json").write_text("{}")
    result = specsnap("estimate", "--study", "smoke", "--override", "agent=[claude_code_sonnet]", "--override",
                      "arm=[Vanilla]", "--pilot", "pilot", "--results", str(tmp_path / "results"))
    assert result.returncode == 0, result.stderr
    # per trial: the pilot's one trial (its one ledgered session) is 1000 input at $3 + 1000 output at
    # $15 per million = $0.018; 2 planned trials: 4,000 tokens, $0.036
    assert "4 sessions, ~4,000 tokens, $0.04 (range $0.04-$0.04)" in result.stdout
    assert "tier_2 (2 trials): 2,000 tokens a trial, $0.0180 (range $0.0180-$0.0180) a trial" in result.stdout
    assert "pilot pilot: mean of 1 trial(s) of claude_code_sonnet on tier_2" in result.stdout


def _budget_dir(tmp_path: Path, **limits) -> Path:
    run = tmp_path / "run"
    (run / "plan").mkdir(parents=True)
    (run / "plan" / "prices.json").write_text(json.dumps(TABLE.to_dict()))
    (run / "budget").mkdir()
    (run / "budget" / "budget.json").write_text(json.dumps({"max_usd": None, "trial_max_usd": None, **limits}))
    return run


CALL = {"model": "claude-sonnet-4-5", "usage": {"uncached_input": 100_000, "output": 1000}}  # $0.315


def test_the_run_budget_refuses_once_reached_across_trials(tmp_path):
    run = _budget_dir(tmp_path, max_usd=0.5)
    a, b = Budget(run, "trial_a", "session_1"), Budget(run, "trial_b", "session_1")
    assert a.refusal() is None
    a.charge({**CALL, "seq": 1})
    assert b.refusal() is None  # $0.315 of $0.5
    b.charge({**CALL, "seq": 1})
    assert b.refusal().startswith("budget_exhausted: the run has spent $0.6300 of its $0.5 budget")
    assert Budget(run, "trial_c", "session_1").refusal() is not None  # a later session is refused at once
    assert [json.loads(line)["trial"] for line in spend_path(run).read_text().splitlines()] == ["trial_a", "trial_b"]


def test_the_trial_budget_counts_only_its_own_calls(tmp_path):
    run = _budget_dir(tmp_path, trial_max_usd=0.3)
    a = Budget(run, "trial_a", "session_1")
    a.charge({**CALL, "seq": 1})
    assert Budget(run, "trial_a", "session_2").refusal().startswith("budget_exhausted: this trial has spent")
    assert Budget(run, "trial_b", "session_1").refusal() is None


def test_a_budget_fails_closed(tmp_path):
    run = _budget_dir(tmp_path, max_usd=10)
    unpriced = Budget(run, "t", "session_1")
    unpriced.charge({"model": "mystery", "usage": {"output": 5}, "seq": 1, "kind": "generate", "status": 200})
    assert "cannot be priced" in unpriced.refusal() and unpriced.refused_by == "unpriced"
    no_usage = Budget(run, "t", "session_1")  # an answered call whose reply carried no usage: not free
    no_usage.charge({"model": "gpt-5", "usage": None, "seq": 2, "kind": "generate", "status": 200})
    assert "cannot be priced" in no_usage.refusal()
    spend_path(run).write_text("not json\n")
    assert "cannot be read" in Budget(run, "t", "session_1").refusal()
    assert Budget(tmp_path / "nowhere", "t", "session_1").refusal() is None  # no budget set: nothing to keep


@pytest.mark.pipeline
def test_a_replay_run_is_never_stopped_by_its_budget(tmp_path):
    """The real Claude Code on scripted replies: a replay pays nothing, so a $0.05 run budget (which
    once stopped S2 as budget_exhausted) stops nothing; nothing is charged to the spend ledger, and
    the sessions' records say why (tests/test_budget_reservation.py for the proxy's side)."""
    from test_pipeline import snakemake

    grid = 'overrides=["agent=[replay_claude_code]","arm=[Vanilla]","seed=[0]"]'
    trial = tmp_path / "results" / "r" / "trials" / "tier_2__Vanilla__replay_claude_code__none__s0"
    result = snakemake(tmp_path, "--cores", "2", "--config", "study=smoke", "name=r", grid, "budget_max_usd=0.05")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for stage in ("session_1", "session_2"):
        session = json.loads((trial / stage / "stage.json").read_text())["session"]
        assert session["status"] != "budget_exhausted" and session["model_calls_refused"] == 0
        assert session["budget"]["refused"] is None and session["budget"]["session_spent_usd"] == 0
        assert session["budget"]["replay"].startswith("not paid")
    path = spend_path(tmp_path / "results" / "r")
    assert not path.exists() or not path.read_text().strip()
    board = pd.read_csv(tmp_path / "results" / "r" / "leaderboard.csv")
    assert board[["trials", "budget_exhausted"]].values.tolist() == [[1, 0]]


@pytest.mark.pipeline
def test_a_budget_stops_trials_and_a_larger_one_continues_them(tmp_path):
    """The real Claude Code on scripted replies, priced as claude-sonnet-4-5 for a test of the budget
    (budget_price_replay=true: labelled so in the records). Each call's worst case is reserved
    first: Claude Code's main call asks up to 32,000 output tokens ($0.48 at least), which a $0.05
    run budget cannot hold, so S1 is refused it; the trial is budget_exhausted, in no mean. A dry run
    with $1 moves nothing; the run with $1 continues it from S1, and spends at most $1."""
    from test_pipeline import snakemake

    grid = 'overrides=["agent=[replay_claude_code]","arm=[Vanilla]","seed=[0]"]'
    trial = tmp_path / "results" / "b" / "trials" / "tier_2__Vanilla__replay_claude_code__none__s0"

    def run(*extra):
        result = snakemake(tmp_path, "--cores", "2", "--config", "study=smoke", "name=b", grid,
                           "budget_price_replay=true", *extra)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return result.stdout + result.stderr

    out = run("budget_max_usd=0.05")
    assert "replay calls priced at list prices for a test of the budget" in out
    s1 = json.loads((trial / "session_1" / "stage.json").read_text())["session"]
    assert s1["status"] == "budget_exhausted" and s1["model_calls_refused"] >= 1
    assert "could cost up to" in s1["budget"]["refused"] and s1["budget"]["refused_by"] == "run"
    assert s1["budget"]["replay_priced_for_budget_test"] is True
    assert not s1.get("infra_attempts")  # never retried as an infrastructure failure
    ledger = [json.loads(line) for line in (trial / "session_1" / "ledger.jsonl").read_text().splitlines()]
    refused = [row for row in ledger if row["refused"]]
    assert refused and refused[0]["refused_reason"].startswith("budget_exhausted")
    board = pd.read_csv(tmp_path / "results" / "b" / "leaderboard.csv")
    assert board[["trials", "invalid", "budget_exhausted", "n"]].values.tolist() == [[1, 0, 1, 0]]
    assert "BUDGET: 1 trial stopped" in (tmp_path / "results" / "b" / "leaderboard.md").read_text()

    dry = snakemake(tmp_path, "-n", "--cores", "2", "--config", "study=smoke", "name=b", grid,
                    "budget_price_replay=true", "budget_max_usd=1")
    assert "would continue (a dry run: nothing moved)" in dry.stdout + dry.stderr
    assert (trial / "session_1").is_dir()

    out = run("budget_max_usd=1")
    assert "budget raised: 1 trial(s)" in out
    statuses = [json.loads((trial / stage / "stage.json").read_text())["session"]["status"]
                for stage in ("session_1", "session_2")]
    assert statuses == ["cleaved", "ok"]  # (S1 ends at its cleave)
    assert (trial / "budget_exhausted.1" / "session_1" / "stage.json").is_file()  # the stopped session, kept
    board = pd.read_csv(tmp_path / "results" / "b" / "leaderboard.csv")
    assert board[["budget_exhausted", "n"]].values.tolist() == [[0, 1]]
    rows = [json.loads(line) for line in spend_path(tmp_path / "results" / "b").read_text().splitlines()]
    assert 0 < sum(row["cost_usd"] for row in rows) <= 1.0  # never past the cap
    assert all(row.get("replay_priced_for_budget_test") for row in rows if row.get("kind") != "release")


def test_a_budget_needs_no_price_for_a_replay_and_checks_its_limits(tmp_path):
    """A replay agent pays nothing: a budget needs no price for its model (a paid agent's model
    without one is refused before any work, as a replay's is when the run prices replay:
    tests/test_budget_reservation.py). A limit that is no number of dollars is refused."""
    from test_pipeline import snakemake

    result = snakemake(tmp_path, "-n", "--cores", "2", "--config", "study=smoke", "name=u",
                       'overrides=["agent=[replay_command]","arm=[Vanilla]","seed=[0]"]', "budget_max_usd=1")
    assert result.returncode == 0, result.stderr[-3000:]
    bad = snakemake(tmp_path, "-n", "--cores", "2", "--config", "study=smoke", "name=u2", "budget_trial_max_usd=-1")
    assert bad.returncode != 0 and "a number of dollars > 0" in bad.stderr


def test_the_proxy_relays_model_calls_only(tmp_path):
    """A batch or file upload could spend money the proxy can neither price nor stop: it is refused
    (always, budget or not: only the allowlisted model calls pass, tests/test_proxy_walls.py); model
    calls and model lists are relayed."""
    import httpx

    from sdcs_bench.proxy import ModelProxy, ReplayScript

    script = tmp_path / "s.yaml"
    script.write_text(json.dumps({"responses": [{"text": "ok", "usage": {"uncached_input": 3, "output": 1}}]}))
    with ModelProxy(ledger=tmp_path / "l.jsonl", script=ReplayScript.load(script).for_session(1, {})) as proxy:
        batch = httpx.post(proxy.url + "/v1/messages/batches", json={"requests": []})
        files = httpx.post(proxy.url + "/v1/files", content=b"x")
        models = httpx.get(proxy.url + "/v1/models")
        call = httpx.post(proxy.url + "/v1/messages", json={"model": "m", "max_tokens": 5,
                                                            "messages": [{"role": "user", "content": "hi"}]})
    assert batch.status_code == files.status_code == 403 and models.status_code == call.status_code == 200
