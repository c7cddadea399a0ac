"""Arms whose file a workload lacks (issue 39): an arm that places a file of the workload's own
directory (``source: {workload: PATH}``, e.g. Repo_Hinted's ``hints/partial_agents.md``) is not
applicable on a workload without that file. The planner skips those (workload, arm) cells with one
line each, runs the rest, records them in the plan, and the leaderboard lists them; only a grid
where every cell is such a cell stops, with one error naming the arm, the file and the workload."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import arm, specsnap

from sdcs_bench.core.errors import ArmNotApplicable, SpecSnapError
from sdcs_bench.pipeline.plan.files import STUDY_FILE, read_not_applicable, render_plan, write_plan
from sdcs_bench.pipeline.plan.planner import ensure_plan, make_plan
from sdcs_bench.trial.workload import load_workload

FIXTURE = Path(__file__).parent / "fixtures" / "own_repo"
HINTED_ON_TIER_2 = ("arm Repo_Hinted skipped on workload tier_2: it places the workload's own "
                    "hints/partial_agents.md as AGENTS.md, which tier_2 does not have "
                    "(docs/real_repos.md#hints says how to write one)")


# --- the arm -------------------------------------------------------------------------------------


def test_an_arm_on_a_workload_without_its_file_raises_its_own_error_naming_arm_file_and_workload():
    tier2 = load_workload("tier_2")
    with pytest.raises(ArmNotApplicable) as caught:
        arm("Repo_Hinted").for_workload("tier_2", tier2.root)
    exc = caught.value
    assert isinstance(exc, SpecSnapError)  # (a CLI that catches SpecSnapError still says it in one line)
    assert (exc.arm, exc.path, exc.workload_file, exc.workload) == ("Repo_Hinted", "AGENTS.md",
                                                                    "hints/partial_agents.md", "tier_2")
    assert "arm Repo_Hinted: file AGENTS.md is the workload's own hints/partial_agents.md, which workload tier_2 " \
           "does not have" in str(exc)
    assert exc.record() == {"workload": "tier_2", "arm": "Repo_Hinted", "file": "hints/partial_agents.md",
                            "reason": "it places the workload's own hints/partial_agents.md as AGENTS.md, which "
                                      "tier_2 does not have"}


def test_other_arm_errors_are_not_taken_for_a_missing_workload_file():
    from sdcs_bench.trial.arms import Arm

    for bad in ({"name": "X", "files": [{"path": "a.md", "generator": "nope"}]},
                {"name": "X", "files": [{"path": "a.md", "source": "conf/arm/texts/no_such_file.md"}]},
                {"name": "X", "files": [{"path": "a.md", "source": {"click": "a.md"}}]}):
        with pytest.raises(SpecSnapError) as caught:
            Arm.from_config(bad)
        assert not isinstance(caught.value, ArmNotApplicable), bad


# --- planning ------------------------------------------------------------------------------------


GRID = ["workload=[click,tier_2]", "arm=[Vanilla,Repo_Hinted]", "agent=[ref_null,ref_oracle]"]


def test_the_cells_whose_arm_lacks_its_file_are_skipped_and_the_rest_planned(tmp_path):
    plan = make_plan("real_repos", GRID, tmp_path, keys=False)
    cells = {(t["workload"]["id"], t["arm"]["name"], t["agent"]["name"]) for t in plan.trials}
    assert cells == {(w, a, g) for w, a in (("click", "Vanilla"), ("click", "Repo_Hinted"), ("tier_2", "Vanilla"))
                     for g in ("ref_null", "ref_oracle")}
    # one record per (workload, arm), however many agents and seeds the cell has
    assert list(plan.not_applicable) == [{"workload": "tier_2", "arm": "Repo_Hinted", "file": "hints/partial_agents.md",
                                          "reason": "it places the workload's own hints/partial_agents.md as AGENTS.md, "
                                                    "which tier_2 does not have"}]
    # the arm still places click's own file where click has it
    hinted = next(t for t in plan.trials if t["workload"]["id"] == "click" and t["arm"]["name"] == "Repo_Hinted")
    files = {f["path"]: f.get("text") for f in hinted["arm"]["files"]}
    assert files["AGENTS.md"] == (load_workload("click").root / "hints" / "partial_agents.md").read_text()


def test_a_grid_whose_every_cell_is_skipped_is_one_error_before_any_work(tmp_path):
    results = tmp_path / "r"
    with pytest.raises(SpecSnapError) as caught:
        make_plan("real_repos", ["workload=[tier_2]", "arm=[Repo_Hinted]", "agent=[ref_null]"], results, keys=False)
    message = str(caught.value)
    assert "arm Repo_Hinted" in message and "hints/partial_agents.md" in message and "tier_2" in message
    assert not results.exists()
    # two arms, both inapplicable: one error naming each
    with pytest.raises(SpecSnapError) as caught:
        make_plan("real_repos", ["workload=[tier_2]", "arm=[Repo_Hinted,Repo_Backlog]", "agent=[ref_null]"], results,
                  keys=False)
    message = str(caught.value)
    assert "hints/partial_agents.md" in message and "hints/backlog_state.md" in message
    assert "Repo_Hinted" in message and "Repo_Backlog" in message and "tier_2" in message


def test_a_bad_arm_still_stops_the_plan_even_beside_skipped_cells(tmp_path, monkeypatch):
    """Only a missing workload file is skipped: any other arm error keeps failing the plan."""
    from sdcs_bench.trial import arms

    real = arms.Arm.for_workload

    def broken(self, workload_id, root):
        if self.name == "Vanilla":
            raise SpecSnapError("arm Vanilla: something else is wrong")
        return real(self, workload_id, root)

    monkeypatch.setattr(arms.Arm, "for_workload", broken)
    with pytest.raises(SpecSnapError, match="something else is wrong"):
        make_plan("real_repos", GRID, tmp_path, keys=False)


def test_the_plan_records_the_skipped_cells_in_its_study_file(tmp_path):
    plan = make_plan("real_repos", GRID, tmp_path, keys=False)
    write_plan(plan)
    recorded = json.loads((plan.directory / STUDY_FILE).read_text())
    assert recorded["not_applicable"] == list(plan.not_applicable)
    assert read_not_applicable(plan.directory) == list(plan.not_applicable)
    # once the workload has the file (the same run, planned again), the record goes with it
    from dataclasses import replace

    applicable = replace(plan, not_applicable=())
    text = render_plan(applicable)[plan.directory / STUDY_FILE]
    assert "not_applicable" not in json.loads(text)
    assert json.loads(text)["study"] == "real_repos" and json.loads(text)["overrides"] == GRID
    # a plan without skipped cells keeps its study file byte for byte
    write_plan(applicable)
    before = (plan.directory / STUDY_FILE).read_text()
    assert render_plan(applicable)[plan.directory / STUDY_FILE] == before
    assert read_not_applicable(plan.directory) == []


def test_ensure_plan_says_each_skipped_cell_in_one_line_on_stderr(tmp_path, capfd):
    """What Snakemake's start-up calls (sdcs_bench.pipeline.startup): the line reaches a snakemake user."""
    ensure_plan("real_repos", GRID, tmp_path)
    err = capfd.readouterr().err
    assert err.count("skipped on workload") == 1, err
    assert f"specsnap: {HINTED_ON_TIER_2}\n" in err
    ensure_plan("real_repos", GRID, tmp_path)  # current: nothing composed, nothing said again
    assert "skipped" not in capfd.readouterr().err


# --- a newly added repository without hints (the README's study command) --------------------------


@pytest.fixture
def hintless(clone) -> Path:
    """The worked example repository added to a clone of the project with a backlog but no partial
    AGENTS.md (hints/partial_agents.md), as a repository added by `specsnap add-repository` may be."""
    workload = clone / "real_repos" / "textkit"
    shutil.copytree(FIXTURE / "textkit", workload)
    (workload / "hints" / "partial_agents.md").unlink()
    meta = workload / "workload.yaml"
    text = meta.read_text().replace("  hints/partial_agents.md: {names: []}\n", "")
    text = text.replace("commit: " + "0" * 40, "commit: " + "ab" * 20)  # (planning fetches nothing: any pin will do)
    meta.write_text(text.replace('python: "3.11"', 'python: "%d.%d"' % sys.version_info[:2]))
    (clone / "conf" / "workload" / "textkit.yaml").write_text("id: textkit\npath: real_repos/textkit\n")
    return clone


def test_a_new_repository_without_a_hint_file_plans_the_study_without_that_arm(hintless, tmp_path):
    results = tmp_path / "r"
    proc = specsnap("--root", str(hintless), "plan", "--study", "real_repos", "--results", str(results),
                    "--override", "workload=[textkit]", "--override", "agent=[ref_null,ref_oracle]", cwd=hintless)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "skipped on workload" in line]
    assert lines == ["arm Repo_Hinted skipped on workload textkit: it places the workload's own "
                     "hints/partial_agents.md as AGENTS.md, which textkit does not have "
                     "(docs/real_repos.md#hints says how to write one)"], proc.stderr
    (plan_dir,) = results.glob("*/plan")
    cells = pd.read_csv(plan_dir / "cells.tsv", sep="\t")
    assert set(cells["arm"]) == {"Vanilla", "State_MD_Only", "Tuned_Reference", "Repo_Backlog"}
    assert len(cells) == 8
    assert [(r["workload"], r["arm"]) for r in json.loads((plan_dir / STUDY_FILE).read_text())["not_applicable"]] == [
        ("textkit", "Repo_Hinted")]


def test_a_new_repository_asked_only_for_the_arm_it_cannot_take_is_one_error(hintless, tmp_path):
    results = tmp_path / "r"
    proc = specsnap("--root", str(hintless), "plan", "--study", "real_repos", "--results", str(results),
                    "--override", "workload=[textkit]", "--override", "arm=[Repo_Hinted]", cwd=hintless)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and not results.exists()
    assert re.search(r"arm Repo_Hinted: file AGENTS\.md is the workload's own hints/partial_agents\.md, which "
                     r"workload textkit does not have", proc.stderr), proc.stderr


# --- the leaderboard -----------------------------------------------------------------------------


SKIPPED = [{"workload": "tier_2", "arm": "Repo_Hinted", "file": "hints/partial_agents.md",
            "reason": "it places the workload's own hints/partial_agents.md as AGENTS.md, which tier_2 does not have"}]


def _board():
    from sdcs_bench.pipeline.board import make_board

    card = {"trial": "t0", "workload": "tier_2", "arm": "Vanilla", "agent": "ref_null", "agent_kind": "reference policy",
            "variant": "none", "model": "none", "harness": "reference", "n_requirements": 8, "raw": 0, "net": 0,
            "tes": 0.0, "tokens": 0, "s1_edit_survived": True, "expected_net": 0, "matches_expected": True,
            "poison_survived": "", "valid": True, "invalid_reasons": "", "tampered": False, "tamper_evidence": ""}
    return make_board(pd.DataFrame([card]))


def test_leaderboard_md_lists_the_arms_not_applicable_and_why():
    from sdcs_bench.pipeline.markdown import to_markdown

    md = to_markdown(_board(), "real_repos", not_applicable=SKIPPED)
    assert "## Arms not applicable" in md
    row = next(line for line in md.splitlines() if line.startswith("| tier_2 | Repo_Hinted |"))
    assert "hints/partial_agents.md" in row and "which tier_2 does not have" in row
    assert md.index("## Arms not applicable") > md.index("| workload | arm |")  # after the main table
    assert "Arms not applicable" not in to_markdown(_board(), "real_repos")


def test_the_terminal_leaderboard_and_its_json_say_the_arms_not_applicable(tmp_path):
    import io

    from rich.console import Console

    from sdcs_bench.pipeline import leaderboard as lb

    run = tmp_path / "r"
    run.mkdir()
    rows = json.loads(_board().to_json(orient="records"))
    (run / "leaderboard.json").write_text(json.dumps({"study": "real_repos", "run": "r", "notice": "N", "rows": rows,
                                                      "not_applicable": SKIPPED}))
    (run / "leaderboard.md").write_text("# local\n")
    buf = io.StringIO()
    lb.print_table(run, Console(file=buf, width=200, color_system=None))
    flat = " ".join(buf.getvalue().split())
    assert "arm Repo_Hinted skipped on workload tier_2: it places the workload's own hints/partial_agents.md" in flat
    doc = lb.document(run)  # (validated against the schema on the way)
    assert any("arm Repo_Hinted skipped on workload tier_2" in n for n in doc["local"]["notices"])
