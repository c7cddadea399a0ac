"""The smoke study end to end under Snakemake: every reference policy lands on its closed form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT
from test_expectations import CUT

from sdcs_bench.trial import config

pytestmark = pytest.mark.pipeline


def snakemake(workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})},
    )


def run_grid(workdir: Path, study: str, name: str, settings: tuple[str, ...] = (), **axes: list[str]):
    """Run ``study`` narrowed to ``axes`` (and with the ``settings`` overrides, e.g.
    ``handoff.source=conversation``) under its own run ``name``; its leaderboard and directory (the
    smoke study's first seed only, unless ``seed`` is given)."""
    if study == "smoke":
        axes.setdefault("seed", ["0"])
    grid = ["overrides=[" + ",".join([*(f'"{k}=[{",".join(v)}]"' for k, v in axes.items()),
                                      *(f'"{o}"' for o in settings)]) + "]"]
    run = snakemake(workdir, "--cores", "2", "--config", f"study={study}", f"name={name}", *grid)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return pd.read_csv(workdir / "results" / name / "leaderboard.csv"), workdir / "results" / name


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("smoke-run")
    result = snakemake(workdir, "--cores", "2", env={"SPECSNAP_WARM_LOG": str(workdir / "warm.log")})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return workdir / "results" / "smoke"


def test_leaderboard_matches_every_closed_form(smoke):
    board = pd.read_csv(smoke / "leaderboard.csv")
    assert len(board) == 3 * 6
    assert board["matches_expected"].all(), board[~board["matches_expected"]].to_string()
    for row in board.itertuples():
        assert row.net == CUT[(row.agent, row.arm)], (row.agent, row.arm, row.variant)
        # two seeds of a deterministic policy: n = 2 and a zero-width interval at the mean
        assert (row.n, row.net_lo, row.net_hi, row.net_interval) == (2, row.net, row.net, f"[{row.net:g}, {row.net:g}]")
    assert set(board["agent_kind"]) == {"reference policy"}


def test_intervals_and_paired_differences_in_every_format(smoke):
    md = (smoke / "leaderboard.md").read_text()
    assert "| n | raw | net | net 95% CI |" in md and "## Paired differences" in md
    assert "**12 comparisons**" in md  # two arms x six agents against Vanilla (net)
    paired = pd.read_csv(smoke / "paired.csv")
    net = paired[paired["metric"] == "net"]
    assert len(net) == 2 * 6 and set(net["compared"]) == {"AGENTS_MD_Only", "State_MD_Only"}
    assert (net["pairs"] == 2).all() and (net["lo"] == net["hi"]).all()
    board = pd.read_csv(smoke / "leaderboard.csv").set_index(["arm", "agent"])
    for row in net.itertuples():
        assert row.difference == board.loc[(row.compared, row.agent), "net"] - board.loc[("Vanilla", row.agent), "net"]
        assert row.excludes_zero == (row.difference != 0)
        # deterministic reference policies: their closed form, no test and no mark (docs/statistics.md)
        assert row.test.startswith("closed form") and not row.marked and pd.isna(row.p), row
    data = json.loads((smoke / "leaderboard.json").read_text())
    assert data["statistics"] == {"resamples": 1000, "level": 0.95, "seed": 0, "adjust": "holm"}
    assert len(data["paired"]) == len(paired)


def test_reference_policies_are_labelled_everywhere(smoke):
    md = (smoke / "leaderboard.md").read_text()
    assert "not model results" in md
    data = json.loads((smoke / "leaderboard.json").read_text())
    assert "not model results" in data["notice"]
    assert all(row["agent_kind"] == "reference policy" for row in data["rows"])
    assert data["metrics"]["tier_2/State_MD_Only/ref_verbatim_notes/none"]["net"] == 8  # what DVC reads
    assert set(pd.read_csv(smoke / "scorecards.csv")["agent_kind"]) == {"reference policy"}


def test_every_cut_trial_was_cleaved_by_the_watcher_with_its_edit_uncommitted(smoke):
    cards = pd.read_csv(smoke / "scorecards.csv")
    for trial in cards[cards["variant"] == "none"]["trial"]:
        s1 = json.loads((smoke / "trials" / trial / "session_1" / "stage.json").read_text())["session"]
        assert s1["leak_check"]["ok"]
        cleave = s1["cleave"]
        if "__ref_null__" in trial:
            assert not cleave["fired"] and cleave["no_cleave"] and not cleave["missed"]
            continue
        assert cleave["fired"] and cleave["by"] == "watcher", trial
        assert cleave["edit_uncommitted"] and s1["end_head"] == s1["start_head"], trial
        assert cleave["path"] == "ledger/balances.py" and "+++ b/ledger/balances.py" in cleave["diff"]
        assert (smoke / "trials" / trial / "session_1" / "cleave.diff").is_file()


def test_s1_edit_survival_and_stage_records(smoke):
    cards = pd.read_csv(smoke / "scorecards.csv").set_index("trial")
    cut = cards[cards["variant"] == "none"]
    assert not cut[cut["agent"] == "ref_reverter"]["s1_edit_survived"].astype(bool).any()
    others = cut[~cut["agent"].isin(["ref_reverter", "ref_null"])]
    assert others["s1_edit_survived"].astype(bool).all()
    ledger = pd.read_csv(smoke / "ledger.csv")
    assert (ledger["tokens_total"] == 0).all() and set(ledger["tokens_source"]) == {"none"}
    for trial in cards.index:
        for stage in ("scaffold", "session_1", "score"):
            assert json.loads((smoke / "trials" / trial / stage / "stage.json").read_text())["status"] == "done"
        assert (smoke / "logs" / "score" / f"{trial}.log").is_file()
        assert (smoke / "benchmarks" / "score" / f"{trial}.tsv").is_file()


def test_the_cost_of_resuming_is_on_scorecards_and_leaderboard_and_equals_its_closed_form(smoke):
    cards = pd.read_csv(smoke / "scorecards.csv").set_index("trial")
    board = pd.read_csv(smoke / "leaderboard.csv")
    cut = cards[cards["variant"] == "none"]
    assert cut["resume_matches_expected"].astype(bool).all(), cut[["resume_reached", "resume_tool_events"]]
    row = board[(board["agent"] == "ref_verbatim_notes") & (board["arm"] == "State_MD_Only") & (board["variant"] == "none")]
    # S2 reads state.md, is metered for its prompt and its first patch, and writes ledger/journal.py
    assert row[["resume_reached", "resume_calls", "resume_tool_events", "resume_reread_share"]].values.tolist() == \
        [[1.0, 2.0, 2.0, 0.5]] and row["resume_tokens"].iloc[0] > 0
    assert (board[board["agent"] == "ref_null"]["resume_reached"].fillna(0) == 0).all()
    trial = "tier_2__State_MD_Only__ref_verbatim_notes__none__s0"
    card = json.loads((smoke / "trials" / trial / "score" / "scorecard.json").read_text())
    s2 = card["resume"]["sessions"][0]
    assert (s2["path"], s2["reread"], s2["prior_files"], s2["by"]) == ("ledger/journal.py", ["state.md"], 2, "meter")
    assert card["expected"]["resume"] == [{k: s2[k] for k in ("index", "reached", "prior_files", "calls", "tokens",
                                                             "tool_events", "reread")}]
    assert "## The cost of resuming" in (smoke / "leaderboard.md").read_text()
    ledger = pd.read_csv(smoke / "ledger.csv").set_index(["trial", "session"])
    assert 0 < ledger.loc[(trial, "S2"), "resume_wall_s"] == s2["wall_s"] and pd.isna(ledger.loc[(trial, "S1"), "resume_wall_s"])
    assert "resume_wall_s" not in board  # (a timing: the leaderboard is the same on every rerun)
    assert (smoke / "plots" / "resume_cost.svg").is_file()


def test_every_stage_job_ran_warm_and_warm_jobs_false_runs_each_cold(smoke, tmp_path):
    """A local run's stage jobs ran in its warm server (sdcs_bench/warm.py), every one of them (the
    server is ready before the first job), the aggregate and the report in their own interpreters;
    with ``warm_jobs=false`` no server is started and the same trial scores the same."""
    served = (smoke.parents[1] / "warm.log").read_text().splitlines()
    stages = sum(len(json.loads(p.read_text())["stages"]) for p in (smoke / "plan" / "trials").glob("*.json"))
    warm = [line.split()[1] for line in served if line.startswith("warm ")]
    assert len(warm) == stages == 144
    assert sorted(set(warm)) == ["run-session", "scaffold-sandbox", "score"]
    assert sorted(line for line in served if not line.startswith("warm ")) == ["cold not a stage job"] * 2
    log = tmp_path / "warm.log"
    run = snakemake(tmp_path, "--cores", "2", "--config", "warm_jobs=false", "name=cold",
                    'overrides=["agent=[ref_amnesiac]","arm=[Vanilla]","seed=[0]"]', env={"SPECSNAP_WARM_LOG": str(log)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert not log.exists()
    cold = pd.read_csv(tmp_path / "results" / "cold" / "scorecards.csv")
    warm_cards = pd.read_csv(smoke / "scorecards.csv").set_index("trial")
    assert len(cold) == 1 and cold["matches_expected"].all()
    assert cold.iloc[0]["net"] == warm_cards.loc[cold.iloc[0]["trial"], "net"]


def test_a_second_run_does_nothing(smoke):
    result = snakemake(smoke.parent.parent, "--cores", "2")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


def test_an_overrides_run_writes_its_own_directory_and_leaves_the_study_alone(smoke):
    from test_runs import tree_hashes

    before = tree_hashes(smoke)
    result = snakemake(smoke.parent.parent, "--cores", "2", "--config", 'overrides=["agent=[ref_oracle]","arm=Vanilla"]')
    assert result.returncode == 0, result.stderr[-3000:]
    (own,) = [p for p in smoke.parent.iterdir() if p.name.startswith("smoke+")]
    assert pd.read_csv(own / "leaderboard.csv")["n"].tolist() == [2]  # one row, of the study's two seeds
    assert tree_hashes(smoke) == before  # the study's 18 rows, plan and trials untouched
    assert len(pd.read_csv(smoke / "leaderboard.csv")) == 18


def test_bad_study_or_override_fails_before_any_job(tmp_path):
    result = snakemake(tmp_path, "-n", "--config", "study=nope")
    assert result.returncode != 0
    assert "unknown study 'nope'; valid choices: " + ", ".join(config.options("study")) in result.stdout + result.stderr
    result = snakemake(tmp_path, "-n", "--config", 'overrides=["arm=[Vanila]"]')
    assert "unknown arm 'Vanila'; valid choices: AGENTS_MD_Only, Gate_I, " in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def test_snakemake_lint_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=ROOT, capture_output=True, text=True)
    assert "Congratulations" in result.stdout + result.stderr, result.stdout[-3000:]
