"""Every replay agent (a real harness binary driven by a scripted model) runs a two-session tier_2
trial through Snakemake and gets a scorecard whose tokens are the proxy's."""

from __future__ import annotations

import json

import pandas as pd
import yaml
import pytest
from conftest import ROOT, specsnap
from test_pipeline import snakemake

from sdcs_bench.trial import config
from sdcs_bench.proxy import ledger_totals, read_ledger

pytestmark = pytest.mark.pipeline

# (the handoff scripts' agents, *_continue and *_two_edits, run in tests/test_handoff_matrix.py, slow)
REPLAY_AGENTS = sorted(a for a in config.options("agent") if config.entity("agent", a).get("proxy") == "replay"
                       and not a.endswith(("_continue", "_two_edits")) or a == "replay_claude_code_continue")
HARNESSES = {config.entity("agent", a)["harness"] for a in REPLAY_AGENTS}


def test_every_real_harness_has_a_replay_agent():
    assert HARNESSES == {"command", "claude_code", "codex", "gemini_cli", "opencode", "aider", "mini_swe_agent"}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("replay-run")
    result = snakemake(workdir, "--cores", "2", "--config", "study=smoke", "name=replay",
                       f"overrides=[\"agent=[{','.join(REPLAY_AGENTS)}]\",\"workload=[tier_2]\","
                       "\"arm=[AGENTS_MD_Only]\",\"variant=[none]\",\"seed=[0]\"]")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    return workdir / "results" / "replay"


@pytest.mark.parametrize("agent", REPLAY_AGENTS)
def test_two_session_trial_scored_with_proxy_tokens(study, agent):
    trial = f"tier_2__AGENTS_MD_Only__{agent}__none__s0"
    tdir = study / "trials" / trial
    card = json.loads((tdir / "score" / "scorecard.json").read_text())
    assert card["agent_kind"] == "replay (scripted, no model)"
    s1 = json.loads((tdir / "session_1" / "stage.json").read_text())["session"]
    s2 = json.loads((tdir / "session_2" / "stage.json").read_text())["session"]
    assert s1["status"] == "cleaved" and s1["cleave"]["edit_uncommitted"] is True
    assert s1["end_head"] == s1["start_head"]
    assert s2["status"] == "ok" and not s2["cleave"]["fired"]
    total = 0
    for k, rec in ((1, s1), (2, s2)):
        ledger = read_ledger(tdir / f"session_{k}" / "ledger.jsonl")
        assert ledger and rec["tokens"] == ledger_totals(ledger).to_dict()
        total += rec["tokens"]["total"]
    assert card["tokens"]["source"] == "proxy" and card["tokens"]["total"] == total > 0
    assert [s["tokens_source"] for s in card["diagnostics"]["sessions"]] == ["proxy", "proxy"]


def test_replay_costs_nothing_and_its_list_price_is_shown_as_hypothetical(study):
    """A replay pays nothing: every call's, session's, trial's and row's cost is $0, and the study's
    cost line says so. What the calls would have cost is apart, labelled hypothetical: each call's
    ledgered tokens times conf/prices.yaml's prices for its model (unknown, never 0, for a model with
    no price); a session's, a trial's and a row's are their sums."""
    from sdcs_bench.core.prices import PriceTable

    table = PriceTable.parse(yaml.safe_load((ROOT / "conf" / "prices.yaml").read_text()))
    calls = pd.read_csv(study / "calls.csv")
    assert (calls["cost_usd"] == 0).all()
    priced = 0
    for call in calls.itertuples():
        price = table.find(call.model)
        if price is None:
            assert pd.isna(call.hypothetical_list_usd) or call.tokens_total == 0, call  # tokens counted, unpriced
            continue
        rates = price.rates  # (replay prompts are far below any long-context threshold)
        want = (call.tokens_uncached_input * rates.uncached_input + call.tokens_cache_read * rates.cache_read
                + call.tokens_cache_write * rates.cache_write
                + (call.tokens_output + call.tokens_reasoning) * rates.output) / 1e6
        assert call.hypothetical_list_usd == pytest.approx(want, rel=1e-9, abs=1e-12), call
        priced += want > 0
    assert priced >= 6  # the Claude Code, Codex, Gemini CLI, OpenCode, Aider and mini-swe-agent calls
    ledger = pd.read_csv(study / "ledger.csv")
    cards = pd.read_csv(study / "scorecards.csv").set_index("trial")
    assert (cards["cost_usd"] == 0).all() and (ledger["cost_usd"] == 0).all()
    assert (cards["cost_unpriced_tokens"] == 0).all()  # (what was paid is known: nothing)
    for trial, part in calls.groupby("trial"):
        known = part["hypothetical_list_usd"].notna().all()
        total = cards.loc[trial, "hypothetical_list_usd"]
        assert (total == pytest.approx(part["hypothetical_list_usd"].sum())) if known else pd.isna(total), trial
        sessions = ledger[ledger["trial"] == trial]["hypothetical_list_usd"]
        assert (sessions.sum() == pytest.approx(total)) if known else sessions.isna().any(), trial
    board = pd.read_csv(study / "leaderboard.csv")
    assert (board["cost_usd"] == 0).all() and (board["cost_usd_total"] == 0).all()
    assert board["hypothetical_list_usd"].isna().sum() >= 1  # the command agent's replay-model: no price
    md = (study / "leaderboard.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("**Cost of the study**"))
    assert line.startswith(f"**Cost of the study**: $0 over {len(cards)} trials: no trial called a paid model")
    assert "Hypothetical, never paid" in line and "0 (replay: nothing paid)" in md
    doc = json.loads((study / "leaderboard.json").read_text())
    assert doc["cost"]["total_usd"] == 0 and doc["cost_line"].startswith("Cost of the study: $0 over")


def test_replay_rows_are_labelled_never_model_results(study):
    md = (study / "leaderboard.md").read_text()
    assert "they are not model results" in md and "replay (scripted, no model)" in md
    board = pd.read_csv(study / "leaderboard.csv")
    assert set(board["agent_kind"]) == {"replay (scripted, no model)"}
    calls = pd.read_csv(study / "calls.csv")
    assert set(calls["source"]) == {"proxy"} and set(calls["agent"]) == set(REPLAY_AGENTS)
    # Each row names its harness and says no model was called: the leaderboard, its JSON, the report.
    assert {s for s in board["source"]} == {f"replay ({h}, scripted, no model)" for h in board["harness"]}
    doc = json.loads(specsnap("leaderboard", "--format", "json", "--results", str(study.parent), "--run",
                              study.name).stdout)
    assert {r["source"] for r in doc["local"]["rows"]} == set(board["source"])
    index = (study / "report" / "index.html").read_text()
    assert "they are not model results" in index
    for harness in set(board["harness"]):
        assert f"replay ({harness}, scripted, no model)" in index
    for agent in REPLAY_AGENTS:  # each trial page shows the calls its harness made through the proxy
        page = (study / "report" / "trials" / f"tier_2__AGENTS_MD_Only__{agent}__none__s0.html").read_text()
        assert "scripted replay" in page and '<table class="calls">' in page


def test_no_api_key_text_reaches_results(tmp_path, monkeypatch):
    """A forward-mode study (the tiny agent, with a stand-in provider on 127.0.0.1) whose agent
    prints its key, writes it into the repository and sends it upstream: no file under results/,
    inside snapshots included, holds the key's text afterwards."""
    import tarfile

    from sdcs_bench.proxy import ModelProxy, ReplayScript

    secret = "sk-proj-" + "Kx9" * 14
    leak = {"name": "run_shell", "arguments": {
        "command": "echo $OPENAI_API_KEY; echo $OPENAI_API_KEY >&2; echo \"KEY=$OPENAI_API_KEY\" > leak.txt"}}
    edit = {"name": "write_file", "arguments": {"path": "ledger/k.py", "content": "K = 1\n"}}
    script = tmp_path / "upstream.yaml"
    script.write_text(json.dumps({"responses": [
        {"text": "look", "tool_calls": [leak], "usage": {"uncached_input": 11, "output": 1}},
        {"text": f"key {secret}", "tool_calls": [edit], "usage": {"uncached_input": 12, "output": 2}},
        {"text": f"done, {secret}", "usage": {"uncached_input": 13, "output": 3}},
    ]}))
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    with ModelProxy(ledger=tmp_path / "upstream.jsonl", script=ReplayScript.load(script).for_session(1, {})) as up:
        monkeypatch.setenv("SPECSNAP_UPSTREAM_OPENAI", up.url)
        workdir = tmp_path / "run"
        workdir.mkdir()
        result = snakemake(workdir, "--cores", "1", "--config", "study=smoke",
                           'overrides=["agent=[tiny_agent_openai]","workload=[tier_2]","arm=[Vanilla]",'
                           '"variant=[none]","seed=[0]"]')
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert secret not in result.stdout + result.stderr
    results = workdir / "results"
    card = json.loads(next(results.rglob("scorecard.json")).read_text())
    assert card["agent_kind"] == "model" and card["tokens"]["total"] == 42  # the three calls, counted at the proxy
    checked = 0
    for path in [*results.rglob("*"), *(workdir / ".snakemake").rglob("*")]:
        if not path.is_file():
            continue
        assert secret.encode() not in path.read_bytes(), path
        checked += 1
        if path.name.endswith(".tar.gz"):
            with tarfile.open(path) as tar:
                for member in tar.getmembers():
                    if member.isfile():
                        assert secret.encode() not in tar.extractfile(member).read(), (path, member.name)
    assert checked > 20


def test_api_bound_sessions_take_one_unit_of_their_providers_resource(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-resource-000000")
    result = snakemake(tmp_path, "-n", "--cores", "2", "--resources", "api_openai=1", "--config", "study=smoke",
                       'overrides=["agent=[tiny_agent_openai,ref_oracle]","workload=[tier_2]","arm=[Vanilla]",'
                       '"variant=[none]","seed=[0]"]')
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.strip() for line in result.stdout.splitlines() if "api_openai" in line]
    assert sum("api_anthropic=0, api_openai=1, api_gemini=0" in line for line in lines) == 2  # tiny agent S1, S2
    assert sum("api_anthropic=0, api_openai=0, api_gemini=0" in line for line in lines) == 2  # reference S1, S2
