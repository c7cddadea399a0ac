"""Prices kept true, estimates users can plan on, and nothing paid shown as spent (docs/cost.md).

Every figure is checked against a hand computation: a usage priced by hand, an estimate's tokens
and dollars worked out from the published figure, the budgets and a pilot's ledger.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import ROOT, specsnap

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.prices import PriceTable, base_name, cache_writes, ledger_cost, ledger_spend, row_spend
from sdcs_bench.pipeline import board as agg_board
from sdcs_bench.pipeline import markdown as agg_md
from sdcs_bench.pipeline import rows as agg_rows
from sdcs_bench.pipeline import estimate as est
from sdcs_bench.trial.components import MODEL_KIND, REFERENCE_KIND, REPLAY_KIND

TABLE = PriceTable.parse(yaml.safe_load((ROOT / "conf" / "prices.yaml").read_text()))
ENTRY = {"uncached_input": 1, "cache_read": 0.1, "cache_write": 1.25, "output": 5, "source": "https://example.org/p",
         "as_of": "2025-01-01"}


# -- prices ---------------------------------------------------------------------------------------------
def test_gemini_cache_read_is_its_page_s_price_in_both_tiers():
    price = TABLE.find("gemini-2.5-pro")
    assert (price.rates.cache_read, price.long_rates.cache_read) == (0.125, 0.25)
    # up to 200k input: 50,000 uncached at $1.25 + 100,000 read at $0.125
    assert TABLE.call_cost("gemini-2.5-pro", {"uncached_input": 50_000, "cache_read": 100_000}) == \
        pytest.approx((50_000 * 1.25 + 100_000 * 0.125) / 1e6) == pytest.approx(0.075)
    # 300,000 read: over 200k, all at $0.25
    assert TABLE.call_cost("gemini-2.5-pro", {"cache_read": 300_000}) == pytest.approx(300_000 * 0.25 / 1e6)


SONNET_CALL = {"uncached_input": 2_000, "cache_read": 50_000, "cache_write": 30_000, "output": 1_000,
               "cache_creation": {"ephemeral_5m_input_tokens": 10_000, "ephemeral_1h_input_tokens": 20_000}}


def test_anthropic_one_hour_cache_writes_are_priced_from_the_usage_breakdown():
    # 2,000 x $3 + 50,000 x $0.30 + 10,000 x $3.75 (5 min) + 20,000 x $6 (1 hour) + 1,000 x $15
    assert TABLE.call_cost("claude-sonnet-4-5", SONNET_CALL) == pytest.approx(0.1935)
    assert (6_000 + 15_000 + 37_500 + 120_000 + 15_000) / 1e6 == pytest.approx(0.1935)
    # without the breakdown every write is a 5-minute one: 30,000 x $3.75
    plain = {k: v for k, v in SONNET_CALL.items() if k != "cache_creation"}
    assert TABLE.call_cost("claude-sonnet-4-5-20250929", plain) == pytest.approx((6_000 + 15_000 + 112_500 + 15_000) / 1e6)
    # a breakdown alone gives the writes; a cache_write larger than it keeps its rest as 5-minute writes
    assert cache_writes({"cache_creation": {"ephemeral_1h_input_tokens": 7}}) == (0, 7)
    assert cache_writes({"cache_write": 10, "cache_creation": {"ephemeral_1h_input_tokens": 4}}) == (6, 4)
    assert cache_writes({"cache_write": 10}) == (10, 0)
    assert cache_writes({"cache_write": 10, "cache_write_1h": 4}) == (6, 4)  # (a ledger's flat form of the same)
    assert TABLE.call_cost("claude-sonnet-4-5", {"cache_creation": {"ephemeral_1h_input_tokens": 100_000}}) == \
        pytest.approx(100_000 * 6 / 1e6)
    # over 200k input the long-context prices: 150,000 x $6 + 100,000 x $12 (a 1-hour write)
    long = {"uncached_input": 150_000, "cache_creation": {"ephemeral_1h_input_tokens": 100_000}}
    assert TABLE.call_cost("claude-sonnet-4-5", long) == pytest.approx((150_000 * 6 + 100_000 * 12) / 1e6)
    # Haiku 4.5: $2 an hour's write; OpenAI has none: a 1-hour figure is priced as its write (input) price
    assert TABLE.call_cost("claude-haiku-4-5", {"cache_creation": {"ephemeral_1h_input_tokens": 1000}}) == \
        pytest.approx(1000 * 2 / 1e6)
    assert TABLE.call_cost("gpt-5", {"cache_creation": {"ephemeral_1h_input_tokens": 1000}}) == \
        pytest.approx(1000 * 1.25 / 1e6)


def test_the_proxy_keeps_the_one_hour_writes_a_reply_reports_and_they_are_priced_so():
    """An Anthropic reply's usage with its ``cache_creation`` split: the ledger's usage keeps the
    1-hour part (a part of ``cache_write``, not added to the total), and the call is priced from it."""
    from sdcs_bench.proxy import wire

    reply = {"type": "message", "content": [], "usage": {
        "input_tokens": 2_000, "cache_read_input_tokens": 50_000, "cache_creation_input_tokens": 30_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 10_000, "ephemeral_1h_input_tokens": 20_000},
        "output_tokens": 1_000}}
    usage = wire.parse_usage(wire.ANTHROPIC, json.dumps(reply).encode(), "application/json")
    assert (usage.cache_write, usage.cache_write_1h, usage.total) == (30_000, 20_000, 83_000)
    # 2,000 x $3 + 50,000 x $0.30 + 10,000 x $3.75 + 20,000 x $6 + 1,000 x $15, as by hand above
    assert TABLE.call_cost("claude-sonnet-4-5", usage.to_dict()) == pytest.approx(0.1935)
    summed = usage + usage
    assert (summed.cache_write_1h, summed.total) == (40_000, 166_000)


@pytest.mark.parametrize("name, model", [
    ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"), ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
    ("claude-haiku-4-5-20251001", "claude-haiku-4-5"), ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
    ("openai/gpt-5-2025-08-07", "gpt-5"), ("gpt-5-2025-08-07", "gpt-5"), ("gpt-5-codex", "gpt-5"),
    ("openai/gpt-5-codex", "gpt-5"), ("gpt-5-mini-2025-08-07", "gpt-5-mini"), ("openai/gpt-5-mini", "gpt-5-mini"),
    ("models/gemini-2.5-pro", "gemini-2.5-pro"), ("gemini-2.5-pro-preview-06-05", "gemini-2.5-pro"),
    ("gpt-5-nano", None), ("gpt-5-codex-mini", None), ("replay-model", None), ("", None)])
def test_dated_and_prefixed_names_find_their_model_s_price(name, model):
    found = TABLE.find(name)
    assert (found.model if found else None) == model


def test_a_dated_name_is_priced_as_its_model():
    usage = {"uncached_input": 10_000, "cache_read": 20_000, "output": 3_000, "reasoning": 1_000}
    # gpt-5: 10,000 x $1.25 + 20,000 x $0.125 + (3,000 + 1,000) x $10
    want = (12_500 + 2_500 + 40_000) / 1e6
    for name in ("gpt-5", "openai/gpt-5-2025-08-07", "gpt-5-codex"):
        assert TABLE.call_cost(name, usage) == pytest.approx(want)
    assert base_name("openai/gpt-5-2025-08-07") == "gpt-5" and base_name("claude-sonnet-4-5@20250929") == "claude-sonnet-4-5"


def test_every_price_keeps_its_source_and_date_and_survives_the_plan():
    for price in TABLE.prices:
        assert price.source.startswith("https://") and len(price.as_of) == 10, price.model
    raw = yaml.safe_load((ROOT / "conf" / "prices.yaml").read_text())["models"]
    assert all("source" in entry and "as_of" in entry for entry in raw.values())
    assert PriceTable.parse(json.loads(json.dumps(TABLE.to_dict()))) == TABLE  # plan/prices.json, as planned
    assert TABLE.find("claude-sonnet-4-5").describe()["cache_write_1h"] == 6.0


@pytest.mark.parametrize("change, message", [
    ({"source": ""}, "has no source"), ({"as_of": None}, "has no as_of"),
    ({"as_of": "last week"}, "not a date"), ({"cache_write_1h": -1}, "for cache_write_1h"),
    ({"long_context": {"uncached_input": 1}}, "long_context needs above_input_tokens")])
def test_a_price_without_its_source_or_date_or_with_a_bad_number_is_refused(change, message):
    with pytest.raises(SpecSnapError, match=message):
        PriceTable.parse({"models": {"m": {**ENTRY, **change}}})


# -- nothing paid, nothing spent --------------------------------------------------------------------------
REPLAYED = {"mode": "replay", "kind": "generate", "status": 200, "model": "claude-sonnet-4-5",
            "usage": {"uncached_input": 1_000, "output": 100}}
FORWARDED = {"mode": "forward", "kind": "generate", "status": 200, "model": "gpt-5",
             "usage": {"uncached_input": 2_000, "output": 500}}


def test_a_replayed_call_pays_nothing_and_its_list_price_is_kept_apart():
    assert row_spend(TABLE, REPLAYED) == 0.0 and row_spend(TABLE, FORWARDED) == pytest.approx(0.0075)
    spend = ledger_spend(TABLE, [REPLAYED, FORWARDED, {**REPLAYED, "usage": None, "status": 403, "refused": True}])
    # paid: gpt-5's 2,000 x $1.25 + 500 x $10; hypothetical: the replay at Sonnet's 1,000 x $3 + 100 x $15
    assert spend.usd == pytest.approx((2_500 + 5_000) / 1e6) and spend.unpriced_tokens == 0
    assert spend.replayed_calls == 1 and spend.hypothetical_list_usd == pytest.approx((3_000 + 1_500) / 1e6)
    unpriced = ledger_spend(TABLE, [{**REPLAYED, "model": "replay-model"}])
    assert (unpriced.usd, unpriced.unpriced_tokens, unpriced.hypothetical_list_usd) == (0.0, 0, None)
    # (the list-price figure a budget counts is unchanged)
    assert ledger_cost(TABLE, [REPLAYED]) == (pytest.approx(0.0045), 0)


def _board(rows: list[dict]) -> pd.DataFrame:
    base = {"trials": 1, "cost_unpriced_tokens": 0, "cost_usd": 0.0, "cost_usd_total": 0.0,
            "hypothetical_list_usd": float("nan")}
    return pd.DataFrame([{**base, **row} for row in rows])


def test_a_replay_study_s_cost_is_zero_and_its_list_price_hypothetical():
    board = _board([{"agent_kind": REPLAY_KIND, "trials": 3, "hypothetical_list_usd": 0.5406},
                    {"agent_kind": REPLAY_KIND, "trials": 4, "hypothetical_list_usd": 0.0}])
    line = agg_md.cost_line(board)
    assert line.startswith("**Cost of the study**: $0 over 7 trials: no trial called a paid model (replays answer "
                           "from a script, calling no model: $0, nothing paid).")
    assert "Cost of the study**: $0.5406" not in line
    assert line.endswith("Hypothetical, never paid: at the list prices of the models the harnesses were told they "
                         "talk to, the replayed calls would have cost $0.5406.")
    unknown = agg_md.cost_line(_board([{"agent_kind": REPLAY_KIND, "hypothetical_list_usd": 0.25},
                                     {"agent_kind": REPLAY_KIND}]))
    assert "the replayed calls' cost is unknown" in unknown and "come to $0.2500" in unknown
    cells = agg_md.cost_cells(board.assign(agent="r"))
    assert list(cells["cost_usd"]) == ["0 (replay: nothing paid)"] * 2
    assert list(cells["hypothetical_list_usd"]) == ["0.5406 (hypothetical, not paid)", "0.0000 (hypothetical, not paid)"]


def test_a_mixed_study_counts_only_what_models_were_paid():
    board = _board([{"agent_kind": MODEL_KIND, "trials": 2, "cost_usd": 0.625, "cost_usd_total": 1.25},
                    {"agent_kind": REPLAY_KIND, "trials": 2, "hypothetical_list_usd": 0.5},
                    {"agent_kind": REFERENCE_KIND, "trials": 2}])
    line = agg_md.cost_line(board)
    assert line.startswith("**Cost of the study**: $1.2500 over 6 trials (model calls at conf/prices.yaml's prices; "
                           "reference policies call no model and replays answer from a script, calling no model: "
                           "$0, nothing paid).")
    assert "would have cost $0.5000" in line
    cells = agg_md.cost_cells(board)
    assert list(cells["cost_usd_total"]) == [1.25, "0 (replay: nothing paid)", "0 (no model called)"]
    assert list(cells["hypothetical_list_usd"]) == ["", "0.5000 (hypothetical, not paid)", ""]
    unpriced = _board([{"agent_kind": MODEL_KIND, "cost_usd": float("nan"), "cost_usd_total": float("nan"),
                        "cost_unpriced_tokens": 1234}, {"agent_kind": REPLAY_KIND, "hypothetical_list_usd": 0.1}])
    assert agg_md.cost_line(unpriced).startswith("**Cost of the study**: unknown: 1,234 tokens were spent by models")
    reference = agg_md.cost_line(_board([{"agent_kind": REFERENCE_KIND, "trials": 5}]))
    assert reference == ("**Cost of the study**: $0 over 5 trials: no trial called a paid model (reference policies "
                         "call no model: $0, nothing paid).")


def test_a_replay_row_carries_its_trials_list_price_summed():
    group = {"workload": "tier_2", "arm": "Vanilla", "variant": "none", "continuation": "reset"}
    cards = pd.DataFrame([
        {**group, "agent": "r", "agent_kind": REPLAY_KIND, **agg_rows.spend_columns([ledger_spend(TABLE, [REPLAYED])])},
        {**group, "agent": "r", "agent_kind": REPLAY_KIND,
         **agg_rows.spend_columns([ledger_spend(TABLE, [REPLAYED]), ledger_spend(TABLE, [REPLAYED])])},
        {**group, "agent": "m", "agent_kind": MODEL_KIND, **agg_rows.spend_columns([ledger_spend(TABLE, [FORWARDED])])}])
    assert list(cards["cost_usd"]) == [0.0, 0.0, pytest.approx(0.0075)]
    board = pd.DataFrame([{**group, "agent": a, "agent_kind": k} for a, k in (("m", MODEL_KIND), ("r", REPLAY_KIND))])
    out = agg_board.with_list_prices(board, cards)
    # the replay row: three replayed calls at $0.0045 each; the model row paid what it cost: no figure
    assert out["hypothetical_list_usd"].iloc[1] == pytest.approx(0.0135) and pd.isna(out["hypothetical_list_usd"].iloc[0])


# -- estimates ----------------------------------------------------------------------------------------------
def _by_name(found):
    return {e.agent: e for e in found}


def test_the_published_basis_is_per_trial_with_a_range():
    """specsnap_t1_t4 with Claude Code: 18 trials on each tier (9 arms, cut and uninterrupted). tier_3's
    published run (1,107,107 tokens over its two sessions) is one trial's, whatever the trial's
    sessions; the other tiers have their TES budget. No split: $3 a million, range $0.30 to $15."""
    found, _ = est.estimate("specsnap_t1_t4", ["agent=[claude_code_sonnet]"])
    sonnet = _by_name(found)["claude_code_sonnet"]
    per_trial = {"tier_1": 300_000, "tier_2": 400_000, "tier_3": 1_107_107, "tier_4": 1_500_000}
    assert (sonnet.trials, sonnet.sessions) == (72, 126)
    for wid, tokens in per_trial.items():
        w = sonnet.workloads[wid]
        assert (w.trials, w.tokens_per_trial) == (18, tokens)
        assert (w.cost_per_trial, w.low_per_trial, w.high_per_trial) == \
            (pytest.approx(tokens * 3 / 1e6), pytest.approx(tokens * 0.30 / 1e6), pytest.approx(tokens * 15 / 1e6))
    total = 18 * sum(per_trial.values())
    assert total == 59_527_926 and sonnet.tokens == total
    assert sonnet.cost_usd == pytest.approx(178.583778) and sonnet.cost_low_usd == pytest.approx(17.8583778)
    assert sonnet.cost_high_usd == pytest.approx(892.91889)
    text = "\n".join(est.lines(found, "specsnap_t1_t4"))
    assert "~59,527,926 tokens, $178.58 (range $17.86-$892.92)" in text
    assert "tier_3 (18 trials): 1,107,107 tokens a trial, $3.3213 (range $0.3321-$16.6066) a trial" in text
    assert "study total: $178.58 (range $17.86-$892.92); 72 trials, 126 sessions" in text


def _pilot(tmp_path, rows, cards):
    pilot = tmp_path / "results" / "pilot"
    pilot.mkdir(parents=True)
    pd.DataFrame(cards).to_csv(pilot / "scorecards.csv", index=False)
    pd.DataFrame(rows).to_csv(pilot / "ledger.csv", index=False)
    (pilot / "leaderboard.json").write_text("{}")
    return pilot


def _session(trial, agent, session, kind=MODEL_KIND, status="ok", u=0, r=0, w=0, o=0):
    return {"trial": trial, "agent": agent, "agent_kind": kind, "session": session, "status": status,
            "tokens_uncached_input": u, "tokens_cache_read": r, "tokens_cache_write": w, "tokens_output": o,
            "tokens_reasoning": 0}


def test_a_pilot_gives_the_split_and_the_range_per_trial(tmp_path):
    sonnet = "claude_code_sonnet"
    rows = [_session("t1", sonnet, "S1", u=1_000, r=20_000, w=3_000, o=500),
            _session("t1", sonnet, "S2", u=2_000, r=40_000, w=1_000, o=700),
            _session("t2", sonnet, "S1", u=500, r=10_000, w=2_000, o=300),
            _session("t2", sonnet, "S2", u=500, o=100),
            _session("t3", sonnet, "S1", u=9_000_000),  # the budget stopped t3: left out
            _session("t3", sonnet, "S2", status="budget_exhausted"),
            _session("t9", "ref_oracle", "S1", kind=REFERENCE_KIND, u=5)]
    cards = [{"trial": t, "workload": "tier_2", "budget_exhausted": t == "t3"} for t in ("t1", "t2", "t3", "t9")]
    pilot = _pilot(tmp_path, rows, cards)
    found, _ = est.estimate("smoke", ["agent=[claude_code_sonnet,gemini_cli_pro]", "arm=[Vanilla]"], pilot,
                            tmp_path / "results")
    by = _by_name(found)
    # t1: 3,000 x $3 + 60,000 x $0.30 + 4,000 x $3.75 + 1,200 x $15 = $0.06 (68,200 tokens)
    # t2: 1,000 x $3 + 10,000 x $0.30 + 2,000 x $3.75 + 400 x $15 = $0.0195 (13,400 tokens)
    t1, t2 = (9_000 + 18_000 + 15_000 + 18_000) / 1e6, (3_000 + 3_000 + 7_500 + 6_000) / 1e6
    w = by[sonnet].workloads["tier_2"]
    assert (w.trials, w.tokens_per_trial) == (2, (68_200 + 13_400) / 2)
    assert (w.cost_per_trial, w.low_per_trial, w.high_per_trial) == \
        (pytest.approx((t1 + t2) / 2), pytest.approx(t2), pytest.approx(t1))
    assert by[sonnet].cost_usd == pytest.approx(t1 + t2) and by[sonnet].tokens == 81_600
    text = "\n".join(est.lines(found, "smoke"))
    assert f"{sonnet} (claude-sonnet-4-5): 2 trials, 4 sessions, ~81,600 tokens, $0.08 (range $0.04-$0.12)" in text
    assert "tier_2 (2 trials): 40,800 tokens a trial, $0.0398 (range $0.0195-$0.0600) a trial; pilot pilot: mean of " \
           f"2 trial(s) of {sonnet} on tier_2" in text
    # Gemini ran no pilot trial: said so, then the budget: 400,000 tokens a trial at $1.25 ($0.125-$10)
    assert "note: pilot pilot has no usable trial of gemini_cli_pro (7 session(s); left out: 1 of a reference " \
           "policy or a replay (no model's tokens), 2 of trials the budget stopped)" in text
    gem = by["gemini_cli_pro"]
    assert (gem.cost_usd, gem.cost_low_usd, gem.cost_high_usd) == \
        (pytest.approx(2 * 0.5), pytest.approx(2 * 0.05), pytest.approx(2 * 4.0))
    assert "study total: $1.08 (range $0.14-$8.12); 4 trials, 8 sessions" in text


def test_a_pilot_without_usable_sessions_is_an_error(tmp_path):
    _pilot(tmp_path, [_session("t9", "ref_oracle", "S1", kind=REFERENCE_KIND, u=5),
                      _session("t8", "replay_claude_code", "S1", kind=REPLAY_KIND, u=7)],
           [{"trial": "t9", "workload": "tier_2"}, {"trial": "t8", "workload": "tier_2"}])
    result = specsnap("estimate", "--study", "smoke", "--override", "agent=[claude_code_sonnet]", "--pilot", "pilot",
                      "--results", str(tmp_path / "results"))
    assert result.returncode != 0 and not result.stdout
    assert "no usable session there (2 session(s); left out: 2 of a reference policy or a replay" in result.stderr


def test_a_replay_and_a_reference_policy_cost_nothing_in_an_estimate():
    result = specsnap("estimate", "--study", "smoke", "--override", "agent=[replay_claude_code,ref_oracle]",
                      "--override", "arm=[Vanilla]")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert ("replay_claude_code (replay of claude-sonnet-4-5, scripted): 2 trials, 4 sessions, $0 (a replay answers "
            "from its script: no model is called, nothing is paid)") in out
    assert "ref_oracle (reference policy): 2 trials, 4 sessions, $0 (a reference policy calls no model)" in out
    assert "study total: $0.00; 4 trials, 8 sessions: no session calls a paid model" in out
    doc = json.loads(specsnap("estimate", "--study", "smoke", "--override", "agent=[replay_claude_code]",
                              "--override", "arm=[Vanilla]", "--json").stdout)
    assert [(d["kind"], d["paid"], d["cost_usd"], d["tokens"]) for d in doc] == [(REPLAY_KIND, False, 0.0, 0.0)]


def test_a_handoff_counts_each_agent_for_its_share_of_the_sessions():
    found, _ = est.estimate("smoke", ["agent=[claude_code_sonnet]", "successor=[gemini_cli_pro]", "arm=[Vanilla]"])
    by = _by_name(found)
    # 2 two-session trials on tier_2 (budget 400,000 a trial): each agent runs one session of each
    assert (by["claude_code_sonnet"].trials, by["gemini_cli_pro"].trials) == (2, 0)
    assert by["claude_code_sonnet"].tokens == by["gemini_cli_pro"].tokens == 400_000
    assert by["claude_code_sonnet"].cost_usd == pytest.approx(1.2) and by["gemini_cli_pro"].cost_usd == pytest.approx(0.5)


def test_a_model_without_a_price_has_its_tokens_estimated_and_its_cost_unknown():
    basis = est.Basis({"uncached_input": 1000.0}, "b")
    assert basis.costs(None) == (None, None, None)
    agent = est.AgentEstimate("a", "mystery-model", MODEL_KIND, trials=1, sessions=2, tokens=1000.0, cost_usd=None,
                              cost_low_usd=None, cost_high_usd=None,
                              workloads={"tier_2": est.WorkloadEstimate("tier_2", "b", 1, 1.0, 1000.0)})
    text = "\n".join(est.lines([agent], "s"))
    assert "a (mystery-model): 1 trials, 2 sessions, ~1,000 tokens, unknown (no price for its model" in text
    assert "tier_2 (1 trials): 1,000 tokens a trial, cost unknown a trial; b" in text
    assert "study total: unknown; 1 trials, 2 sessions" in text
