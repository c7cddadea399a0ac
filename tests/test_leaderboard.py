"""``specsnap leaderboard`` in its four formats: readable at 80 columns, every row labelled by its
source, JSON valid against the shipped schema, and the published numbers as the source documents
state them."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from conftest import specsnap
from rich.console import Console

from sdcs_bench.pipeline import leaderboard as lb
from sdcs_bench.pipeline import stats
from sdcs_bench.pipeline.board import make_board

ARMS = ["Vanilla", "AGENTS_MD_Only", "State_MD_Only", "Tuned_Reference", "Gate_I", "Memory_Bank", "Claude_Memory",
        "Handoff_Note", "Spec_First"]


def _card(trial: str, arm: str, agent: str, kind: str, net: int, **extra) -> dict:
    return {"trial": trial, "workload": "tier_3", "arm": arm, "agent": agent, "agent_kind": kind, "variant": "none",
            "model": extra.pop("model", "none"), "harness": extra.pop("harness", "reference"), "n_requirements": 24,
            "raw": net, "net": net, "tes": float(net), "tokens": 1000, "s1_edit_survived": True, "expected_net": None,
            "matches_expected": None, "poison_survived": "", "valid": True, "invalid_reasons": "", "tampered": False,
            "tamper_evidence": "", **extra}


@pytest.fixture
def study(tmp_path) -> Path:
    """A study of nine arms, a reference policy (two seeds) and a real agent, aggregated."""
    cards = []
    for i, arm in enumerate(ARMS):
        cards += [_card(f"r{i}a", arm, "ref_oracle", "reference policy", 24, expected_net=24, matches_expected=True),
                  _card(f"r{i}b", arm, "ref_oracle", "reference policy", 23, expected_net=24, matches_expected=False),
                  _card(f"m{i}", arm, "opus", "model", 17 + i % 3, model="claude-opus-5.5", harness="claude_code")]
    board = make_board(pd.DataFrame(cards))
    out = tmp_path / "results" / "nine"
    out.mkdir(parents=True)
    rows = json.loads(board.to_json(orient="records"))
    (out / "leaderboard.json").write_text(json.dumps({"study": "nine", "run": "nine", "notice": "N", "rows": rows}))
    (out / "leaderboard.md").write_text("# local\n")
    return out


def test_the_table_fits_80_columns_and_cuts_no_cell(study):
    buf = io.StringIO()
    lb.print_table(study, Console(file=buf, width=80, color_system=None))
    text = buf.getvalue()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text
    flat = " ".join(re.sub("[│┃]", " ", text).split())  # a wrapped cell read as one line
    for arm in ARMS:  # nine arms: split over several tables, each header whole
        assert f" {arm} " in flat, arm
    # a mean of two seeds, flagged off its closed form: two different values, too few for an interval
    assert "23.5/24* n=2" in flat and "23.5/24* [" not in flat
    assert "19/24 n=1 (too few for a CI)" in flat  # a model's cell says so
    assert "(reference policy)" in flat and "(real agent: claude-opus-5.5 via claude_code)" in flat
    assert "(published)" in text and "17-23/24" in text  # the published tier_3 rows in the same pivot


def test_every_cell_of_the_pivot_appears_in_some_chunk(study):
    (pivot,) = lb.pivots(lb.local(study), lb.published()["tables"])
    chunks = lb._column_chunks(pivot, 80)
    assert (pivot.axis, pivot.fixed) == ("arm", "none")
    assert len(chunks) > 1 and [a for c in chunks for a in c] == pivot.columns
    assert pivot.columns[0] == "Vanilla"
    real = next(r for r in pivot.rows if r.source.startswith("real agent"))
    assert real.cells["Vanilla"]["text"] == "17/24 n=1 (too few for a CI)" and real.cells["Vanilla"]["trials"] == 1
    assert "lo" not in real.cells["Vanilla"]  # one trial: no interval
    ref = next(r for r in pivot.rows if r.source == "reference policy")
    assert ref.cells["Vanilla"]["n"] == 2 and "lo" not in ref.cells["Vanilla"]  # 23 and 24: no closed form, too few
    assert lb.MIN_INTERVAL_N == stats.MIN_INTERVAL_N  # (the leaderboard keeps its own copy: it loads no numpy)


def test_json_validates_against_the_shipped_schema_and_the_schema_bites(study):
    doc = json.loads(lb.as_json(study))
    schema = json.loads((Path(lb.__file__).parent.parent / "data" / "leaderboard.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert {row["source"] for row in doc["local"]["rows"]} == {"reference policy",
                                                                "real agent: claude-opus-5.5 via claude_code"}
    assert all(r["source"] == "published" for t in doc["published"]["tables"] for r in t["rows"])
    forged = json.loads(json.dumps(doc))
    forged["local"]["rows"][0]["source"] = "model"  # a row that does not say what produced it
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(forged, schema)
    unlabelled = json.loads(json.dumps(doc))
    unlabelled["published"]["label"] = "numbers"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(unlabelled, schema)


def test_csv_and_markdown_label_every_row(study):
    rows = list(csv.DictReader(io.StringIO(lb.as_csv(study))))
    assert {r["source"] for r in rows} == {"published", "reference policy", "real agent: claude-opus-5.5 via claude_code"}
    assert all(r["arm"] and r["workload"] and r["of"] for r in rows)
    md = lb.as_markdown(study)
    assert "| agent | source | Vanilla | AGENTS_MD_Only |" in md and "| range over models | published |" in md


# The published figures, as the source documents state them (the SpecSnap overview; the coherence-debt
# paper's standards and withholding results; its enumeration summary).
PUBLISHED_TIERS = {
    ("tier_2", "State_MD_Only", "all three models"): (8, 8),
    ("tier_3", "State_MD_Only", "range over models"): ("17-23", 24),
    ("tier_3", "State_MD_Only", "Claude Opus 5.5"): (19, 24),
    ("tier_3", "Tuned_Reference", "all three models"): (24, 24),
    ("tier_4", "State_MD_Only", "Claude Opus 5.5"): (10, 36),
    ("tier_4", "State_MD_Only", "Gemini 4 Argon"): (33, 36),
    ("tier_4", "State_MD_Only", "Grok Build 4.7"): (25, 36),
    ("tier_4", "Tuned_Reference", "Grok Build 4.7"): ("0 / 33", 36),
}


def test_the_published_numbers_in_the_json_are_the_source_documents(tmp_path):
    result = specsnap("leaderboard", "--format", "json", "--results", str(tmp_path))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    tables = {t["title"]: t for t in doc["published"]["tables"]}
    tiers = {(r["values"]["tier"], r["values"]["arm"], r["values"]["model"]): (r["values"]["net"], r["values"]["of"])
             for r in tables[lb.TIERS_TABLE]["rows"]}
    for key, want in PUBLISHED_TIERS.items():
        assert tiers[key] == want, key
    withhold = next(t for title, t in tables.items() if "withholding" in title)
    assert [(r["values"]["k withheld"], r["values"]["stub"]) for r in withhold["rows"]] == [
        (0, 32), (2, 24), (4, 16), (6, 8), (8, 0)]
    standards = next(t for title, t in tables.items() if "decisions written the better way" in title)
    assert {r["values"]["condition"]: r["values"]["better_share"] for r in standards["rows"]} == {
        "standard_correct": "100%", "standard_none": "33%", "standard_stale": "0%"}
    enumeration = next(t for title, t in tables.items() if "Estimator enumeration" in title)
    assert {r["values"]["figure"]: r["values"]["published"] for r in enumeration["rows"]} == {
        "runs": 1089, "fully_covered": 124, "event_only_false_alarms": 119, "all_read": 5, "union_aware_exact": 1089,
        "overstatement_equals_parametric": 1089, "overstatement_mean": 1.84, "overstatement_max": 6}
    assert doc["local"]["rows"] == [] and doc["local"]["pivots"] == []


def test_leaderboard_csv_format_from_the_cli(study):
    result = specsnap("leaderboard", "--format", "csv", "--results", str(study.parent), "--study", "nine")
    assert result.returncode == 0 and result.stdout.startswith("source,workload,variant,continuation,agent,arm,n,net,net_lo,net_hi,of")
    bad = specsnap("leaderboard", "--format", "html")
    assert bad.returncode == 2 and all(f in bad.stderr for f in lb.FORMATS)


def test_a_leaderboard_aggregated_before_rows_named_their_source_still_shows_and_validates(study):
    data = json.loads((study / "leaderboard.json").read_text())
    for row in data["rows"]:
        for key in ("source", "model", "harness"):
            row.pop(key)
    (study / "leaderboard.json").write_text(json.dumps(data))
    doc = json.loads(lb.as_json(study))  # validated on the way
    assert {r["source"] for r in doc["local"]["rows"]} == {"reference policy", "real agent: unknown via unknown"}


def test_an_unknown_run_is_refused_naming_the_runs_there(study):
    result = specsnap("leaderboard", "--results", str(study.parent), "--run", "nien")
    assert result.returncode == 2 and "no run 'nien'" in result.stderr and "valid choices: nine" in result.stderr
    result = specsnap("report", "--results", str(study.parent), "--run", "nien")
    assert result.returncode == 2 and "valid choices: nine" in result.stderr


def test_a_workload_under_one_arm_is_one_table_with_a_column_per_variant_and_its_own_measure(tmp_path):
    """The standards and withholding studies run one arm over many variants: one table, a column
    per variant, the cell giving the family's measure."""
    cards = []
    for k in (0, 4, 8):
        cards.append(_card(f"w{k}", "Vanilla", "ref_every_fact", "reference policy", 8, variant=f"withhold_k{k}_stub",
                           withheld_k=k, withhold_mode="stub", withhold_when="before_s1", tests_passed=32 - 4 * k,
                           tests_total=32, expected_tests=32 - 4 * k))
        cards.append(_card(f"s{k}", "Vanilla", "ref_follow_code", "reference policy", 12, variant=f"standard_{k}",
                           std_better_share=k / 8, workload="standards"))
    board = make_board(pd.DataFrame(cards))
    out = tmp_path / "one_arm"
    out.mkdir()
    (out / "leaderboard.json").write_text(json.dumps({"study": "w", "run": "one_arm", "notice": "N",
                                                      "rows": json.loads(board.to_json(orient="records"))}))
    by_workload = {p.workload: p for p in lb.pivots(lb.local(out), lb.published()["tables"])}
    facts, standards = by_workload["tier_3"], by_workload["standards"]
    assert (facts.axis, facts.fixed, facts.columns) == ("variant", "Vanilla",
                                                        ["withhold_k0_stub", "withhold_k4_stub", "withhold_k8_stub"])
    assert [facts.rows[0].cells[c]["text"] for c in facts.columns] == ["32/32t n=1", "16/32t n=1", "0/32t n=1"]
    assert [standards.rows[0].cells[c]["text"] for c in standards.columns] == ["12/24 0%b n=1", "12/24 50%b n=1",
                                                                                 "12/24 100%b n=1"]
    buf = io.StringIO()
    lb.print_table(out, Console(file=buf, width=80, color_system=None))
    assert max(len(line) for line in buf.getvalue().splitlines()) <= 80 and "…" not in buf.getvalue()
    assert buf.getvalue().count("tier_3 · arm Vanilla") >= 1
    jsonschema.validate(lb.document(out), json.loads((Path(lb.__file__).parent.parent / "data" /
                                                      "leaderboard.schema.json").read_text()))


def test_leaderboard_md_is_headed_by_the_run_with_the_study_beside_it_when_they_differ():
    from sdcs_bench.pipeline.markdown import to_markdown

    board = make_board(pd.DataFrame([_card("t0", "Vanilla", "ref_oracle", "reference policy", 24)]))
    assert to_markdown(board, "smoke", run="smoke+1a2b3c4d").splitlines()[0] == \
        "# SpecSnap leaderboard: run `smoke+1a2b3c4d` (study `smoke`)"
    assert to_markdown(board, "smoke", run="smoke").splitlines()[0] == "# SpecSnap leaderboard: run `smoke`"


def test_the_local_markdown_names_the_run_it_shows(study):
    data = json.loads((study / "leaderboard.json").read_text())
    (study / "leaderboard.json").write_text(json.dumps({**data, "run": "nine+00ff00ff"}))
    md = lb.as_markdown(study)
    assert "## Run `nine+00ff00ff` (study `nine`) at a glance" in md and "## Study `nine`" not in md


def test_trials_that_never_reached_their_cut_are_said_under_the_table():
    from sdcs_bench.pipeline.markdown import to_markdown

    board = make_board(pd.DataFrame([_card("t0", "Vanilla", "ref_oracle", "reference policy", 24),
                                     _card("t1", "Vanilla", "ref_null", "reference policy", 0)]))
    md = to_markdown(board, "s", no_cleave={"t1": None, "t2": True})
    line = next(line for line in md.splitlines() if "no_cleave" in line)
    assert line.startswith("**2 trials never reached their cut (no_cleave)**: t1, t2"), line
    assert "1 of them as its reference policy's closed form predicts" in line
    assert md.index(line) > md.index("| workload |")  # under the main table
    assert "never reached their cut" not in to_markdown(board, "s")


# --- which published tables a run's leaderboard shows (issue 39) -----------------------------------

REAL_REPO_TABLE = "Real repositories: bugs resolved, predicted before the run against actual (one run per arm)"


def _run_of(tmp_path: Path, name: str, cards: list[dict]) -> Path:
    board = make_board(pd.DataFrame(cards))
    out = tmp_path / "results" / name
    out.mkdir(parents=True)
    (out / "leaderboard.json").write_text(json.dumps({"study": name, "run": name, "notice": "N",
                                                      "rows": json.loads(board.to_json(orient="records"))}))
    (out / "leaderboard.md").write_text("# local\n")
    return out


@pytest.fixture
def repo_run(tmp_path) -> Path:
    """A real-repository run: click's rows only."""
    return _run_of(tmp_path, "repos", [_card(f"c{i}", arm, "ref_null", "reference policy", 0, workload="click",
                                             family="real_repo", n_requirements=13)
                                       for i, arm in enumerate(("Vanilla", "Repo_Backlog"))])


def _titles(text: str) -> set[str]:
    flat = " ".join(text.split())
    return {t["title"] for t in lb.published()["tables"] if " ".join(t["title"].split()) in flat}


def _printed(run: Path, **kw) -> str:
    buf = io.StringIO()
    lb.print_table(run, Console(file=buf, width=400, color_system=None), **kw)
    return buf.getvalue()


def test_every_published_table_is_assigned_a_family_or_none():
    """A table added to published.yaml must say which runs it is compared with (a test, not a guess)."""
    tables = lb.published()["tables"]
    assert all(t["title"] in lb.TABLE_FAMILIES or "family" in t for t in tables), [t["title"] for t in tables]
    families = {t["title"]: lb.table_family(t) for t in tables}
    assert families[lb.TIERS_TABLE] == "synthetic" and families[REAL_REPO_TABLE] == "real_repo"
    assert set(families.values()) <= {"synthetic", "real_repo", "standards", "motifs", None}


def test_a_tier_run_shows_only_the_published_tables_of_its_family(study):
    shown = _titles(_printed(study))
    assert lb.TIERS_TABLE in shown
    assert not any("Real repositories" in t or "Standards workload" in t or "Coherence debt" in t
                   or "Estimator enumeration" in t for t in shown), shown
    assert "--published" in _printed(study)  # the others are one option away, and it says so
    assert _titles(_printed(study, all_published=True)) == {t["title"] for t in lb.published()["tables"]}
    md = lb.as_markdown(study)
    assert f"## {lb.TIERS_TABLE}" in md and "## Standards workload" not in md and "Estimator enumeration" not in md
    assert "## Standards workload" in lb.as_markdown(study, all_published=True)


def test_a_real_repository_run_keeps_its_published_comparison_and_nothing_else(repo_run):
    text = _printed(repo_run)
    shown = _titles(text)
    assert REAL_REPO_TABLE in shown and lb.TIERS_TABLE not in shown, shown
    assert "(published)" not in text  # no tier rows joined into click's pivot either
    md = lb.as_markdown(repo_run)
    assert f"## {REAL_REPO_TABLE}" in md and f"## {lb.TIERS_TABLE}" not in md
    rows = list(csv.DictReader(io.StringIO(lb.as_csv(repo_run))))
    assert {r["source"] for r in rows} == {"reference policy"}  # the published tier rows are another family's
    assert "published" in {r["source"] for r in csv.DictReader(io.StringIO(lb.as_csv(repo_run, all_published=True)))}
    # --format json stays the whole document (the schema's published block: every table, labelled)
    assert len(lb.document(repo_run)["published"]["tables"]) == len(lb.published()["tables"])


def test_the_cli_prints_a_runs_own_families_unless_asked_for_the_published_tables(repo_run):
    results = str(repo_run.parent)
    own = specsnap("leaderboard", "--results", results, "--run", "repos", env={"COLUMNS": "200"})
    assert own.returncode == 0, own.stderr
    every = specsnap("leaderboard", "--results", results, "--run", "repos", "--published", env={"COLUMNS": "200"})
    assert every.returncode == 0, every.stderr
    assert "Real repositories" in own.stdout and "Synthetic tiers" not in own.stdout and "Standards" not in own.stdout
    assert "Synthetic tiers" in every.stdout and "Standards workload" in every.stdout
    assert len(own.stdout.splitlines()) + 60 < len(every.stdout.splitlines())
    md = specsnap("leaderboard", "--results", results, "--run", "repos", "--format", "markdown")
    assert md.returncode == 0 and "Synthetic tiers" not in md.stdout and REAL_REPO_TABLE in md.stdout
