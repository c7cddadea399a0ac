"""`specsnap add-repository`, from an empty directory to a repository that validates and runs in a
study, with the one part no tool can write (a bug's entry, hidden test and fix) written by hand;
on a repository whose own tests are unittest-style classes with names that do not start with
``Test`` (one inheriting its base's tests), duplicate method names across classes, a parametrised
test and a test that fails on the pin (``tests/fixtures/unittest_repo``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import specsnap

FIXTURE = Path(__file__).parent / "fixtures" / "unittest_repo"
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "calc", "GIT_AUTHOR_EMAIL": "calc@example.org",
           "GIT_COMMITTER_NAME": "calc", "GIT_COMMITTER_EMAIL": "calc@example.org",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00"}
SUITE = [  # what pytest collects of the repository's own suite (the passing ones)
    "tests/test_calc.py::Arithmetic::test_add", "tests/test_calc.py::Arithmetic::test_none",
    "tests/test_calc.py::Bounds::test_digits", "tests/test_calc.py::Bounds::test_low",
    "tests/test_calc.py::Bounds::test_none", "tests/test_calc.py::Parsing::test_digits",
    "tests/test_calc.py::Parsing::test_none", "tests/test_calc.py::TestPlain::test_none",
    "tests/test_calc.py::test_add_many[1-1-2]", "tests/test_calc.py::test_add_many[2-5-7]",
]


def _publish(dest: Path) -> tuple[str, str]:
    shutil.copytree(FIXTURE / "upstream", dest)
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "calc 0.1.0"]):
        subprocess.run(["git", "-C", str(dest), *argv], check=True, capture_output=True, env=GIT_ENV)
    commit = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return dest.as_uri(), commit


def _write_bug(workload: Path) -> None:
    """The part left to the user: the bug's entry, its hidden test and its fix (with the canary)."""
    canary = yaml.safe_load((workload / "workload.yaml").read_text())["canary"]
    (workload / "bugs.yaml").write_text((FIXTURE / "bug" / "bugs.yaml").read_text())
    (workload / "hidden" / "tests" / "test_hidden_clamp.py").write_text(
        (FIXTURE / "bug" / "test_hidden_clamp.py").read_text().replace("SPECSNAP-CANARY-LINE", canary))
    (workload / "fixes" / "CALC-1.patch").write_text(
        (FIXTURE / "bug" / "CALC-1.patch").read_text().replace("SPECSNAP-CANARY-LINE", canary))


@pytest.fixture(scope="module")
def added(tmp_path_factory):
    """A clone of the project with `calc` added by the command (once for the module)."""
    from conftest import ROOT

    base = tmp_path_factory.mktemp("add-repo")
    clone = base / "clone"
    clone.mkdir()
    for part in ("Snakefile", "conf", "tiers", "workflow", "harnesses", "containers"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, clone / part)
    os.symlink("workflow/profiles", clone / "profiles")
    url, commit = _publish(base / "upstream")
    results = base / "results"
    proc = specsnap("--root", str(clone), "add-repository", "calc", "--git", url, "--commit", commit,
                    "--results", str(results), cwd=clone)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return clone, results, proc


def test_the_command_writes_the_skeleton_and_the_baseline_by_pytest_s_own_collection(added):
    clone, _, proc = added
    workload = clone / "real_repos" / "calc"
    assert (clone / "conf" / "workload" / "calc.yaml").read_text().endswith("id: calc\npath: real_repos/calc\n")
    meta = yaml.safe_load((workload / "workload.yaml").read_text())
    assert meta["source"]["kind"] == "git" and meta["packages"] == ["calc"] and meta["import_root"] == "."
    assert meta["environment"]["install"][0][0].startswith("pytest==")  # pinned to what it got
    listed = [t for t in (workload / "baseline_tests.txt").read_text().splitlines() if not t.startswith("#")]
    assert listed == SUITE  # the whole passing suite: unittest classes, duplicates, inherited, parametrised
    excluded = yaml.safe_load((workload / "baseline_excluded.yaml").read_text())
    assert excluded == [{"tests": ["tests/test_calc.py::Known::test_spaces_are_allowed"],
                         "reason": excluded[0]["reason"]}]
    assert excluded[0]["reason"].startswith("failed on the pinned source: ") and "None != 7" in excluded[0]["reason"]
    assert "10 baseline tests, 1 left out" in " ".join(proc.stdout.split())


def test_bad_input_is_one_line_before_any_work(added, tmp_path):
    clone, results, _ = added
    again = specsnap("--root", str(clone), "add-repository", "calc", "--git", "file:///x", "--commit", "0" * 40,
                     "--results", str(results), cwd=clone)
    assert again.returncode == 2 and "already exists" in again.stderr and again.stderr.count("\n") == 1
    both = specsnap("--root", str(clone), "add-repository", "other", "--pypi", "x==1", "--git", "y", cwd=clone)
    assert both.returncode == 2 and "--pypi PACKAGE==VERSION, or as --git URL --commit COMMIT" in both.stderr
    short = specsnap("--root", str(clone), "add-repository", "other", "--git", "file:///x", "--commit", "abc", cwd=clone)
    assert short.returncode == 2 and "not a full 40-digit commit id" in short.stderr
    assert not (clone / "real_repos" / "other").exists()


def test_with_its_bug_written_it_validates_and_a_broken_unittest_loses_baseline_ok(added):
    clone, results, _ = added
    workload = clone / "real_repos" / "calc"
    empty = specsnap("--root", str(clone), "validate-workload", "calc", "--results", str(results), cwd=clone)
    assert empty.returncode == 2 and "bugs.yaml: no bugs yet" in empty.stderr, empty.stderr
    _write_bug(workload)
    proc = specsnap("--root", str(clone), "validate-workload", "calc", "--results", str(results), cwd=clone)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "workload calc: all" in proc.stdout
    # An agent that breaks one of the unittest-style tests (Parsing::test_none, whose name a Test*
    # class shares) loses baseline_ok; the fix alone keeps it.
    code = r"""
import sys, warnings
from pathlib import Path
warnings.simplefilter("ignore")
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.pipeline.repos import prepare_workload
from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.scoring import score_sandbox
from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.workload import load_workload
wl = prepare_workload(load_workload("calc"), Path(sys.argv[1]))
arm = Arm.from_config(config.entity("arm", "Vanilla"))
out = []
for name, edit in (("fixed", None), ("broken", ("if text == \"\":\n        return None", "if text == \"\":\n        return 0"))):
    sandbox = Path(sys.argv[2]) / name
    scaffold(wl, arm, sandbox)
    ops = sandbox / "calc" / "ops.py"
    text = ops.read_text().replace("    return value\n", "    if value > high:\n        return high\n    return value\n")
    if edit:
        text = text.replace(*edit)
    ops.write_text(text)
    card = score_sandbox(wl, sandbox, tokens=TokenUsage(source="none"), backend=make_backend("auto"), arm=arm)
    out.append(f"{name} {card['baseline_ok']} {card['net']} {','.join(card['baseline_failures'])}")
print("\n".join(out))
"""
    scratch = results.parent / "scored"
    scratch.mkdir(exist_ok=True)
    run = subprocess.run([sys.executable, "-c", code, str(results), str(scratch)], cwd=clone, capture_output=True,
                         text=True, env={**os.environ, "SPECSNAP_ROOT": str(clone)})
    assert run.returncode == 0, run.stderr[-3000:]
    fixed, broken = run.stdout.strip().splitlines()[-2:]
    assert fixed == "fixed True 1 ", fixed
    assert broken.startswith("broken False 0 ") and "tests/test_calc.py::Parsing::test_none" in broken, broken
    assert "TestPlain::test_none" not in broken and "Arithmetic::test_none" not in broken


@pytest.mark.pipeline
def test_the_added_repository_runs_in_a_study(added):
    clone, results, _ = added
    _write_bug(clone / "real_repos" / "calc")
    overrides = json.dumps(["workload=[calc]", "arm=[Vanilla]", "agent=[ref_oracle,ref_null]"])
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--config", "study=real_repos",
                           f"results={results}", f"overrides={overrides}", "name=calc"], cwd=clone,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    board = pd.read_csv(results / "calc" / "leaderboard.csv")
    assert board["matches_expected"].all(), board.to_string()
    assert {r.agent: r.net for r in board.itertuples()} == {"ref_oracle": 1, "ref_null": 0}


def test_a_pypi_release_is_pinned_by_its_sdist_s_own_spelling_and_hash(monkeypatch):
    """The index is asked for the project's files (no build, no metadata step): the sdist of that
    version is found whatever spelling of the name its file uses, and its SHA-256 is the pin."""
    from sdcs_bench.core.errors import SpecSnapError
    from sdcs_bench.sandbox import source

    files = [{"filename": "Some_Lib-1.2.0.tar.gz", "hashes": {"sha256": "a" * 64}, "url": "x"},
             {"filename": "some_lib-1.2.0-py3-none-any.whl", "hashes": {"sha256": "b" * 64}, "url": "y"},
             {"filename": "Some_Lib-1.1.0.tar.gz", "hashes": {"sha256": "c" * 64}, "url": "z"}]
    monkeypatch.setattr(source, "_index_files", lambda name, what: ("api", files))
    pin = source.sdist_pin("some-lib", "1.2.0")
    assert (pin.kind, pin.name, pin.version, pin.sha256) == ("sdist", "Some_Lib", "1.2.0", "a" * 64)
    with pytest.raises(SpecSnapError, match="no sdist of that version; valid choices: 1.1.0, 1.2.0"):
        source.sdist_pin("some-lib", "9.9")
