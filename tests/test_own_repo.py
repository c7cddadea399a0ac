"""Adding a repository by config only (the README's "Add your own repository"): the worked example in
``tests/fixtures/own_repo`` (a tiny library served as a local git repository, no network) is copied
into a clone of the project as ``real_repos/textkit`` plus ``conf/workload/textkit.yaml``, and runs
through validation and the pipeline with no code change. Bad input is one error naming the field."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import specsnap

FIXTURE = Path(__file__).parent / "fixtures" / "own_repo"
VERSION = "%d.%d" % sys.version_info[:2]
# Fixed names and dates: the upstream commit, and so the pin, is the same on every run.
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "textkit", "GIT_AUTHOR_EMAIL": "textkit@example.org",
           "GIT_COMMITTER_NAME": "textkit", "GIT_COMMITTER_EMAIL": "textkit@example.org",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00"}
PLACEHOLDER_SOURCE = 'source: {kind: git, url: "file:///path/to/textkit", commit: 0000000000000000000000000000000000000000}'


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=GIT_ENV).stdout.strip()


def publish_upstream(dest: Path) -> tuple[str, str]:
    """The fixture's library as a local git repository with one commit: (its URL, the commit)."""
    shutil.copytree(FIXTURE / "upstream", dest)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", "textkit 0.1.0")
    return dest.as_uri(), _git(dest, "rev-parse", "HEAD")


def add_repository(clone: Path, url: str, commit: str) -> Path:
    """What the README tells a user to do: the workload directory under real_repos/, its pin, and one
    registry line under conf/workload/."""
    workload = clone / "real_repos" / "textkit"
    shutil.copytree(FIXTURE / "textkit", workload)
    meta = workload / "workload.yaml"
    text = meta.read_text()
    assert PLACEHOLDER_SOURCE in text
    text = text.replace(PLACEHOLDER_SOURCE, f'source: {{kind: git, url: "{url}", commit: {commit}}}')
    meta.write_text(text.replace('python: "3.11"', f'python: "{VERSION}"'))
    (clone / "conf" / "workload" / "textkit.yaml").write_text("id: textkit\npath: real_repos/textkit\n")
    return workload


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """One results directory for the module: its cache builds textkit's environment once."""
    return tmp_path_factory.mktemp("own-repo-results")


@pytest.fixture
def own_repo(clone, tmp_path) -> Path:
    url, commit = publish_upstream(tmp_path / "upstream")
    return add_repository(clone, url, commit)


def _validate(clone: Path, results: Path) -> subprocess.CompletedProcess:
    return specsnap("--root", str(clone), "validate-workload", "textkit", "--results", str(results), cwd=clone)


def test_the_added_repository_validates(own_repo, results):
    proc = _validate(own_repo.parents[1], results)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "workload textkit: all" in proc.stdout


@pytest.mark.pipeline
def test_the_added_repository_runs_through_the_pipeline_on_its_closed_forms(own_repo, tmp_path):
    """From a fresh results directory: the pipeline's own source and environment rules run, once."""
    clone, results = own_repo.parents[1], tmp_path / "results"
    overrides = json.dumps(["workload=[textkit]", "arm=[Vanilla,Repo_Backlog,Repo_Hinted]",
                            "agent=[ref_oracle,ref_null,ref_hint_follower]"])
    argv = [sys.executable, "-m", "snakemake", "--cores", "2", "--config", "study=real_repos", f"results={results}",
            f"overrides={overrides}", "name=textkit"]
    proc = subprocess.run(argv, cwd=clone, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = results / "textkit"
    board = pd.read_csv(study / "leaderboard.csv")
    assert len(board) == 9 and board["matches_expected"].all(), board.to_string()
    net = {(r.arm, r.agent): r.net for r in board.itertuples()}
    assert net[("Vanilla", "ref_oracle")] == 2 and net[("Vanilla", "ref_null")] == 0
    # The hint follower fixes exactly what a hint names: the backlog names TK-1, the partial hint nothing.
    assert net[("Repo_Backlog", "ref_hint_follower")] == 1 and net[("Repo_Hinted", "ref_hint_follower")] == 0
    assert net[("Vanilla", "ref_hint_follower")] == 0
    assert set(board["predicted_resolved"].dropna()) == {1} and set(board["family"]) == {"real_repo"}
    card = json.loads((study / "trials" / "textkit__Repo_Backlog__ref_hint_follower__none__s0" / "score" /
                       "scorecard.json").read_text())
    assert card["repository"]["resolved"] == ["TK-1"] and card["repository"]["baseline_kept"]
    assert card["repository"]["baseline_tests"] == 3 and len(card["repository"]["turns"]) == 2
    # The source is fetched once and the environment built once, for all nine trials.
    assert len(list((study / "benchmarks" / "source").glob("*.tsv"))) == 1
    assert len(list((study / "benchmarks" / "environment").glob("*.tsv"))) == 1
    assert "Real repositories: bugs resolved" in (study / "leaderboard.md").read_text()
    again = subprocess.run([*argv, "-n"], cwd=clone, capture_output=True, text=True)
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.fixture
def results_outside_tmp():
    """A results directory outside /tmp (each container's private /tmp would hide an image's copy
    of an environment cached there); removed after the test."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="specsnap-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.pipeline
def test_under_docker_the_repository_is_scored_in_the_image_that_carries_its_environment(
        own_repo, tmp_path, docker_engine, results_outside_tmp):
    """The generated env-textkit image carries the environment the pipeline built: the trial's
    sessions and scoring run in it with nothing of the environment mounted from the host, so a
    rescore still passes after the host's copy is gone. (Under /tmp, the base image and the host's
    copy mounted are planned instead.)"""
    clone = own_repo.parents[1]
    under_tmp = specsnap("--root", str(clone), "plan", "--study", "real_repos", "--results", str(tmp_path / "r"), "--override",
                         "workload=[textkit]", "--override", "agent=[ref_oracle]", "--override", "arm=[Vanilla]",
                         "--override", "sandbox.backend=docker", cwd=clone)
    assert under_tmp.returncode == 0, under_tmp.stderr
    planned = json.loads(next((tmp_path / "r").glob("*/plan/trials/*.json")).read_text())["sandbox"]["docker"]
    assert planned["image"] == planned["score_image"] == "base"
    results = results_outside_tmp
    overrides = json.dumps(["workload=[textkit]", "arm=[Vanilla]", "agent=[ref_oracle]", "sandbox.backend=docker"])
    argv = [sys.executable, "-m", "snakemake", "--cores", "2", "--config", "study=real_repos", f"results={results}",
            f"overrides={overrides}", "name=textkit_docker"]
    proc = subprocess.run(argv, cwd=clone, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (record_file,) = (results / "_cache" / "images").glob("*/*.json")
    record = json.loads(record_file.read_text())
    (env_dir,) = (results / "_cache" / "envs").iterdir()
    assert record["name"] == "env-textkit" and record["carries"] == env_dir.name
    assert record["provides"] == [str(env_dir.resolve())]
    trial = json.loads(next((results / "textkit_docker" / "plan" / "trials").glob("*.json")).read_text())
    assert trial["sandbox"]["docker"]["image"] == trial["sandbox"]["docker"]["score_image"] == "env-textkit"
    card_file = next((results / "textkit_docker" / "trials").glob("*/score/scorecard.json"))
    card = json.loads(card_file.read_text())
    assert card["net"] == card["expected"]["net"] == 2
    # Without the host's virtualenv the scorer could not run pytest, unless the image carries it.
    (env_dir / "venv").rename(env_dir / "venv.away")
    try:
        again = subprocess.run([*argv, "--forcerun", "score"], cwd=clone, capture_output=True, text=True)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        assert json.loads(card_file.read_text())["net"] == 2
    finally:
        (env_dir / "venv.away").rename(env_dir / "venv")


def _drop_gold_of_tk2(workload: Path) -> None:
    bugs = workload / "bugs.yaml"
    bugs.write_text(bugs.read_text().replace("  gold: fixes/TK-2.patch\n", ""))


def _no_commit(workload: Path) -> None:
    meta = workload / "workload.yaml"
    text = meta.read_text()
    commit = text.split(", commit: ")[1][:40]
    meta.write_text(text.replace(f", commit: {commit}", ""))


@pytest.mark.parametrize("break_it,message", [
    (_drop_gold_of_tk2, "bugs.yaml: invalid at entry 2 (id 'TK-2'): 'gold' is a required property"),
    (_no_commit, "workload.yaml: invalid at source: 'commit' is a required property"),
])
def test_a_missing_field_stops_planning_with_one_line_naming_it(own_repo, tmp_path, break_it, message):
    clone = own_repo.parents[1]
    break_it(own_repo)
    proc = specsnap("--root", str(clone), "plan", "--study", "real_repos", "--results", str(tmp_path / "r"),
                    "--override", "workload=[textkit]", cwd=clone)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "r").exists()


def test_a_pin_to_a_commit_the_repository_lacks_is_one_clear_error(own_repo, tmp_path):
    clone = own_repo.parents[1]
    meta = own_repo / "workload.yaml"
    commit = meta.read_text().split("commit: ")[1][:40]
    meta.write_text(meta.read_text().replace(commit, "f" * 40))
    proc = specsnap("--root", str(clone), "fetch-source", "textkit", "--results", str(tmp_path / "r"), cwd=clone)
    assert proc.returncode == 2 and f"@ {'f' * 12}" in proc.stderr and "git -C" in proc.stderr, proc.stderr
    assert not list((tmp_path / "r").rglob("source.json"))


def test_a_bug_whose_test_passes_on_the_pinned_source_fails_validation_naming_it(own_repo, results):
    test = own_repo / "hidden" / "tests" / "test_hidden_tk_1.py"
    test.write_text(test.read_text() + '\n\ndef test_one_word():\n    assert slugify("One") == "one"\n')
    bugs = own_repo / "bugs.yaml"
    bugs.write_text(bugs.read_text().replace(
        "    - tests/test_hidden_tk_1.py::test_tabs_and_newlines_separate_words\n",
        "    - tests/test_hidden_tk_1.py::test_tabs_and_newlines_separate_words\n"
        "    - tests/test_hidden_tk_1.py::test_one_word\n"))
    proc = _validate(own_repo.parents[1], results)
    assert proc.returncode == 1
    assert ("TK-1: its test tests/test_hidden_tk_1.py::test_one_word (tests:) already passes on the pinned source"
            in " ".join(proc.stdout.split())), proc.stdout[-3000:]


def test_a_fix_that_does_not_apply_fails_validation_naming_it(own_repo, results):
    fix = own_repo / "fixes" / "TK-2.patch"
    fix.write_text(fix.read_text().replace("    if len(text) <= width:", "    if len(text) < width:"))
    proc = _validate(own_repo.parents[1], results)
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 1 and "TK-2: its gold (fixes/TK-2.patch) does not apply to the pinned source" in out, out
    assert "TK-1:" not in out  # the other fix is fine, and nothing ran on a tree that could not be built
