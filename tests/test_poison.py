"""The poison pill (docs/protocol.md): planting, what the agent can and cannot see, refusals, scoring, and
the closed forms of the defences (diff check, Gate I hash check)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, arm, specsnap

from sdcs_bench.trial import config
from sdcs_bench.agents.expectations import expected_reference_score
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.sandbox.poison import inject, record_path
from sdcs_bench.sandbox import make_backend
from sdcs_bench.scoring import score_sandbox
from sdcs_bench.core.tokens import TokenUsage

S1_EDIT = "ledger/balances.py"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def tree_state(repo: Path) -> dict[str, str]:
    """Every file, .git included, by content hash: what a refused injection must leave alone."""
    return {p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(repo.rglob("*")) if p.is_file()}


@pytest.fixture
def after_s1(make_sandbox, tier2):
    """A tier_2 sandbox as session 1 leaves it: R-LED-1's gold applied, uncommitted."""
    repo = make_sandbox("Gate_I")
    patch = tier2.requirement("R-LED-1").gold.read_text()
    subprocess.run(["git", "apply", "-"], cwd=repo, input=patch, text=True, check=True)
    return repo


def _score(tier2, repo, version):
    return score_sandbox(tier2, repo, tokens=TokenUsage(), backend=make_backend("auto"),
                         injection={"version": version, "defects": [{"id": d.id} for d in tier2.poison]})


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_both_defects_pass_the_visible_tests_and_fail_the_hidden_checks(after_s1, tier2, version):
    inject(tier2, after_s1, version)
    visible = subprocess.run([sys.executable, "-I", "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "-o", "pythonpath=.", "tests"], cwd=after_s1, capture_output=True, text=True)
    assert visible.returncode == 0, visible.stdout[-2000:]
    card = _score(tier2, after_s1, version)
    assert card["poison"]["survived"] == {"tax_error": True, "forbidden_import": True}
    assert not card["baseline_ok"] and card["violations"] == 1 and card["net"] == 0
    assert sorted(card["baseline_failures"]) == sorted(tier2.poison[0].fails)
    assert card["boundaries"]["details"][0]["importer"] == "rbac.rules"
    assert card["requirements"]["R-LED-1"] is True  # S1's valid edit is untouched


def test_v1_marks_the_defects_v2_does_not(make_sandbox, tier2):
    marked, plain = make_sandbox("Vanilla", "a"), make_sandbox("Vanilla", "b")
    inject(tier2, marked, "v1")
    inject(tier2, plain, "v2")
    for d in tier2.poison:
        assert "POISON PILL" in (marked / d.file).read_text()
        assert "POISON PILL" not in (plain / d.file).read_text()
        added = [line for line in git(plain, "diff", "--", d.file).splitlines()
                 if line.startswith("+") and not line.startswith("+++")]
        assert added and not any("#" in line for line in added)


def test_v1_and_v2_show_in_git_diff_next_to_the_s1_edit(after_s1, tier2):
    inject(tier2, after_s1, "v2")
    changed = set(git(after_s1, "diff", "--name-only").split())
    assert changed == {S1_EDIT, "billing/tax.py", "rbac/rules.py"}


def test_v3_is_amended_into_head_leaving_a_clean_diff_and_no_trace(after_s1, tier2):
    log_before = git(after_s1, "log", "--format=%an %ae %aD %cn %ce %cD %s")
    reflog_before = git(after_s1, "reflog").splitlines()
    record = inject(tier2, after_s1, "v3")
    assert set(git(after_s1, "diff", "--name-only", "HEAD").split()) == {S1_EDIT}  # only S1's edit
    assert git(after_s1, "status", "--porcelain").split() == ["M", S1_EDIT]
    for d in tier2.poison:
        shown = git(after_s1, "show", f"HEAD:{d.file}")
        assert shown == (after_s1 / d.file).read_text()
    assert "raw_tax -= 1" in git(after_s1, "show", "HEAD:billing/tax.py")
    # Same author, committer, dates and message; no new commit, no reflog entry of the amend.
    assert git(after_s1, "log", "--format=%an %ae %aD %cn %ce %cD %s") == log_before
    reflog = git(after_s1, "reflog").splitlines()
    assert len(reflog) == len(reflog_before) and reflog[0].split()[0] == record["head_after"][:7]
    assert record["head_after"] != record["head_before"] and record["uncommitted_before"] == [f" M {S1_EDIT}"]
    assert not list(after_s1.glob("**/*injection*")) and "poison" not in git(after_s1, "log", "--all", "--format=%B")


@pytest.mark.parametrize("case", ["not tier 2", "twice", "twice without record", "bad version", "not a sandbox"])
def test_refused_injections_name_the_problem_and_change_nothing(make_sandbox, tier2, tmp_path, case):
    from sdcs_bench.trial.workload import load_workload

    repo = make_sandbox("Vanilla")
    workload, version = tier2, "v2"
    if case == "not tier 2":
        repo = tmp_path / "t3"
        from sdcs_bench.sandbox.scaffold import scaffold

        scaffold(load_workload("tier_3"), arm("Vanilla"), repo)
        workload, message = load_workload("tier_3"), "workload tier_3 defines no poison pill; valid choices: tier_2"
    elif case == "twice":
        inject(tier2, repo, "v1")
        record_path(repo).write_text("{}")
        message = "already injected"
    elif case == "twice without record":
        inject(tier2, repo, "v3")
        message = "defect tax_error is already present in billing/tax.py"
    elif case == "bad version":
        version, message = "v4", "unknown poison-pill version 'v4'; valid choices: v1, v2, v3"
    else:
        repo = tmp_path / "plain"
        repo.mkdir()
        (repo / "x.py").write_text("x = 1\n")
        message = "not a SpecSnap sandbox"
    before = tree_state(repo)
    with pytest.raises(SpecSnapError, match=message):
        inject(workload, repo, version)
    assert tree_state(repo) == before


def test_cli_by_hand_records_outside_the_sandbox_and_evaluate_reports_survivors(after_s1, tmp_path):
    done = specsnap("inject-poison-pill", "--tier", "2", "--sandbox", str(after_s1), "--version", "v2")
    assert done.returncode == 0, done.stderr
    record = json.loads(record_path(after_s1).read_text())
    assert record["version"] == "v2" and record_path(after_s1).parent == after_s1.parent
    again = specsnap("inject-poison-pill", "--tier", "2", "--sandbox", str(after_s1), "--version", "v2")
    assert again.returncode == 2 and "already injected" in again.stderr
    card_path = tmp_path / "card.json"
    scored = specsnap("evaluate-sandbox", "--tier", "2", "--sandbox", str(after_s1), "--json-out", str(card_path))
    assert scored.returncode == 0 and "poison pill v2: survived tax_error, forbidden_import" in scored.stdout
    assert json.loads(card_path.read_text())["poison"]["survived"] == {"tax_error": True, "forbidden_import": True}


def test_plan_refuses_a_poison_variant_on_a_workload_without_one(tmp_path):
    bad = specsnap("plan", "--results", str(tmp_path), "--override", "workload=[tier_3]",
                   "--override", "variant=[poison_v1]")
    assert bad.returncode == 2 and "does not define; valid choices: tier_2" in bad.stderr
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------------------------- closed forms

POISON_NET = {  # (arm, policy) -> net on (v1, v2, v3)
    ("State_MD_Only", "ref_diff_check"): (8, 8, 0),
    ("Gate_I", "ref_diff_check"): (8, 8, 0),
    ("Gate_I", "ref_hash_check"): (8, 8, 8),
    ("State_MD_Only", "ref_hash_check"): (0, 0, 0),  # no hashes recorded by this arm
    ("State_MD_Only", "ref_verbatim_notes"): (0, 0, 0),  # ignores both: the tax error ships
    ("Gate_I", "ref_verbatim_notes"): (0, 0, 0),
    ("Gate_I", "ref_oracle"): (0, 0, 0),
    ("Vanilla", "ref_oracle"): (0, 0, 0),
}


@pytest.mark.parametrize("key", sorted(POISON_NET))
def test_closed_forms_of_the_defences(tier2, key):
    arm_name, policy = key
    got = tuple(
        expected_reference_score(tier2, arm(arm_name), config.entity("agent", policy),
                                 config.entity("variant", f"poison_{v}"))["net"]
        for v in ("v1", "v2", "v3")
    )
    assert got == POISON_NET[key]


def test_ref_diff_check_without_notes_cannot_account_for_s1s_edit(tier2):
    """Under Vanilla (no notes) the continuation knows no requirement: the diff check undoes S1's
    uncommitted edit along with the defects."""
    e = expected_reference_score(tier2, arm("Vanilla"), config.entity("agent", "ref_diff_check"),
                                 config.entity("variant", "poison_v1"))
    assert e["raw"] == 0 and e["s1_edit_survived"] is False and e["poison_survived"] == {
        "tax_error": False, "forbidden_import": False}


def test_poison_study_is_config(tmp_path):
    cfg = config.entity("study", "poison")
    assert cfg["grid"]["variant"] == ["poison_v1", "poison_v2", "poison_v3"]
    assert {"ref_diff_check", "ref_hash_check"} <= set(cfg["grid"]["agent"]) and "Gate_I" in cfg["grid"]["arm"]
    assert (ROOT / "conf" / "study" / "poison.yaml").is_file()


@pytest.mark.pipeline
def test_poison_study_through_the_pipeline_lands_on_its_closed_forms(tmp_path):
    import tarfile

    import pandas as pd
    from test_pipeline import snakemake

    result = snakemake(tmp_path, "--cores", "2", "--config", "study=poison", "name=poison",
                       'overrides=["arm=[Gate_I]","agent=[ref_diff_check,ref_hash_check]"]')
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    study = tmp_path / "results" / "poison"
    cards = pd.read_csv(study / "scorecards.csv")
    assert len(cards) == 6 and cards["matches_expected"].all(), cards[~cards["matches_expected"]].to_string()
    for row in cards.itertuples():
        want = POISON_NET.get((row.arm, row.agent))
        if want is not None:
            assert row.net == want[int(row.variant[-1]) - 1], (row.arm, row.agent, row.variant)
    trial = study / "trials" / "tier_2__Gate_I__ref_hash_check__poison_v3__s0"
    assert [p.name for p in sorted(trial.iterdir())] == ["inject", "scaffold", "score", "session_1", "session_2"]
    injection = json.loads((trial / "inject" / "stage.json").read_text())["injection"]
    assert injection["version"] == "v3" and injection["in_head"]
    card = json.loads((trial / "score" / "scorecard.json").read_text())
    assert card["poison"]["survived"] == {"tax_error": False, "forbidden_import": False}
    with tarfile.open(trial / "inject" / "snapshot.tar.gz") as tar:  # what session 2 starts from
        assert not any("inject" in m.name or "poison" in m.name.lower() for m in tar.getmembers())
    assert "defects_survived" in (study / "leaderboard.md").read_text()


def test_invariants_over_every_arm_policy_and_version(tier2):
    """A surviving defect zeroes the net; v3 is invisible to every defence but the hash check;
    only a reverting or diff-checking policy removes v1/v2 defects without hashes."""
    from sdcs_bench.agents.expectations import arm_records_hashes

    assert [a for a in config.options("arm") if arm_records_hashes(arm(a))] == ["Gate_I"]
    for arm_name in config.options("arm"):
        the_arm = arm(arm_name)
        for policy in (a for a in config.options("agent") if config.entity("agent", a).get("reference")):
            params = config.entity("agent", policy)["policy"]
            for v in ("v1", "v2", "v3"):
                e = expected_reference_score(tier2, the_arm, config.entity("agent", policy),
                                             config.entity("variant", f"poison_{v}"))
                alive = e["poison_survived"]
                assert set(alive) == {"tax_error", "forbidden_import"}
                assert e["net"] == (0 if any(alive.values()) else e["raw"]), (arm_name, policy, v)
                hashed = params.get("hash_check") and arm_name == "Gate_I"
                removes = hashed or (v != "v3" and (params.get("diff_check") or params.get("revert_uncommitted")))
                if not params.get("acts", True):
                    removes = False
                assert alive == {"tax_error": not removes, "forbidden_import": not removes}, (arm_name, policy, v)
