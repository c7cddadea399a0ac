"""A repository with a history (tests/fixtures/history_repo.py), added as a user would: `specsnap
add-repository` from a git pin whose URL ends in a generic `repo`, then its bugs one command each
with `specsnap add-bug --fix-commit`, from the upstream fix commits; every refusal one line naming
its reason, nothing written by a refused command."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from conftest import specsnap

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import history_repo  # noqa: E402  (a fixture builder, not a test module)


def project_clone(base: Path) -> Path:
    """A copy of the project to add repositories to (what a user's checkout is)."""
    from conftest import ROOT

    clone = base / "clone"
    clone.mkdir()
    for part in ("Snakefile", "conf", "tiers", "workflow", "harnesses", "containers"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, clone / part)
    os.symlink("workflow/profiles", clone / "profiles")
    return clone


@pytest.fixture(scope="module")
def tally(tmp_path_factory):
    """`tally` added from its pin (once for the module): the clone, the results, the upstream's
    commits and what the command printed."""
    base = tmp_path_factory.mktemp("tally")
    clone = project_clone(base)
    upstream = base / "mirror" / "repo"  # a URL whose last part names nothing
    commits = history_repo.build(upstream)
    results = base / "results"
    proc = specsnap("--root", str(clone), "add-repository", "--git", upstream.as_uri(), "--commit", commits["pin"],
                    "--results", str(results), cwd=clone)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return clone, results, commits, upstream, proc


def test_the_repository_is_named_by_its_project_and_its_texts_read_naturally(tally):
    clone, _, commits, _, proc = tally
    workload = clone / "real_repos" / "tally"  # named from pyproject.toml, not the URL's `repo`
    assert (clone / "conf" / "workload" / "tally.yaml").is_file()
    meta = yaml.safe_load((workload / "workload.yaml").read_text())
    assert meta["title"] == f"tally (commit {commits['pin'][:12]}): hidden bugs" and meta["source"]["name"] == "tally"
    prompt = (workload / "prompts" / "find_bugs.md").read_text()
    assert prompt.startswith(f"This repository is tally (commit {commits['pin'][:12]}): its code is in the package "
                             "`tally` at the top of the repository, its tests are in `tests/`.")
    assert "the top directory" not in prompt and "repo at" not in prompt
    out = " ".join(proc.stdout.split())
    assert "Next: add each bug from its upstream fix (`specsnap add-bug tally --fix-commit SHA`)" in out
    assert "docs/real_repos.md#hints" in out


def test_the_baseline_is_what_passes_in_the_tree_scoring_uses(tally):
    """The test reading pyproject.toml passes on the whole source and is left out with that reason
    (scoring copies only the source and the tests); the test needing `six`, kept in
    tests/requirements.txt, passes: the dependency was read from where the project keeps it."""
    clone, _, _, _, proc = tally
    workload = clone / "real_repos" / "tally"
    baseline = [t for t in (workload / "baseline_tests.txt").read_text().splitlines() if not t.startswith("#")]
    assert baseline == ["tests/test_core.py::test_clip", "tests/test_core.py::test_mean",
                        "tests/test_core.py::test_percent", "tests/test_core.py::test_word_count",
                        "tests/test_six.py::test_six_text"]
    excluded = {g["tests"][0].partition("[")[0]: g["reason"]
                for g in yaml.safe_load((workload / "baseline_excluded.yaml").read_text())}
    assert sorted(excluded) == ["tests/test_data.py::test_the_version_is_declared", "tests/test_state.py::test_a_box",
                                "tests/test_state.py::test_counts_its_own_runs"]
    reason = excluded["tests/test_data.py::test_the_version_is_declared"]
    assert reason.startswith("passes on the whole source and fails in the tree scoring uses")
    assert "FileNotFoundError" in reason and "'pyproject.toml'" in reason
    # a test that leaves state behind fails when scoring runs its twin; an id with an address never matches again
    assert excluded["tests/test_state.py::test_counts_its_own_runs"].startswith("gives another verdict when run a second")
    assert excluded["tests/test_state.py::test_a_box"].startswith("its id is not the same from one run to the next")
    meta = yaml.safe_load((workload / "workload.yaml").read_text())
    assert any(r.startswith("six==") for r in meta["environment"]["install"][0])
    assert "test dependencies the project keeps (tests/requirements.txt): six" in proc.stdout
    for path in (p for p in workload.rglob("*") if p.is_file()):  # no path of this machine, anywhere
        text = path.read_text().replace(meta["source"]["url"], "<the pin the user gave>")
        assert "/tmp" not in text and str(clone) not in text and "specsnap-" not in text.replace("SPECSNAP-", ""), path


def test_test_dependencies_come_from_where_projects_keep_them(tmp_path):
    from sdcs_bench.pipeline.add_repo import merge_requirements, test_dependencies

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "requirements.txt").write_text("-r ../requirements/base.txt\nhypothesis>=6  # props\n-e .\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "base.txt").write_text("attrs\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "thing"\n[project.optional-dependencies]\n'
                                             'test = ["freezegun", "thing[extra]"]\ndocs = ["sphinx"]\n')
    (tmp_path / "tox.ini").write_text("[testenv]\ndeps =\n    pytest-mock\n    -rtests/requirements.txt\n    {posargs}\n")
    (tmp_path / "noxfile.py").write_text('import nox\n\n@nox.session\ndef tests(session):\n'
                                         '    session.install("pytest-xdist", ".")\n')
    (tmp_path / "setup.py").write_text("from setuptools import setup\nimport os\nsetup(name='thing', "
                                       "extras_require={'testing': ['pyyaml'], 'docs': ['mkdocs']}, "
                                       "version=os.environ['NEVER_RUN'])\n")
    found, where = test_dependencies(tmp_path, "tests")
    assert found == ["attrs", "hypothesis>=6", "freezegun", "pyyaml", "pytest-mock", "pytest-xdist"]
    assert where == ["tests/requirements.txt", "pyproject.toml test extras [test]", "setup.py extras_require [testing]",
                     "tox.ini [testenv] deps", "noxfile.py session.install"]
    # --test-dep adds, and a pin of one already there replaces it
    assert merge_requirements(["pytest"], found, ["pytest==7.4.4", "python-dateutil"]) == \
        ["pytest==7.4.4", "attrs", "hypothesis>=6", "freezegun", "pyyaml", "pytest-mock", "pytest-xdist",
         "python-dateutil"]


def test_a_suite_that_cannot_collect_says_its_first_collection_error(tmp_path):
    from sdcs_bench.pipeline.add_repo import _first_error

    said = _first_error([("tests/test_a.py::test_x", {"outcome": "failed", "why": "E assert 1 == 2"}),
                         ("tests/test_b.py", {"outcome": "collection error",
                                              "why": "E ModuleNotFoundError: No module named 'dateutil'"})])
    assert said == "; first collection error: tests/test_b.py: E ModuleNotFoundError: No module named 'dateutil'"


def test_a_machine_path_is_never_written():
    from sdcs_bench.pipeline.add_repo import unplaced

    text = ("E FileNotFoundError: [Errno 2] No such file: '/tmp/specsnap-suite-k3j/tree/data.toml' in "
            "/root/.cache/specsnap/envs/ab12/lib/python3.11/site-packages/x.py")
    said = unplaced(text, {"/root/.cache/specsnap/envs/ab12": "<environment>"})
    assert said == "E FileNotFoundError: [Errno 2] No such file: 'data.toml' in <environment>/lib/python3.11/site-packages/x.py"


# -- add-bug ------------------------------------------------------------------------------------------
def _snapshot(workload: Path) -> dict[str, bytes]:
    return {p.relative_to(workload).as_posix(): p.read_bytes() for p in sorted(workload.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def bugs(tally):
    """The two fixes that are bugs, added in order (once for the module)."""
    clone, results, commits, _, _ = tally
    out = []
    for name in ("tabs", "empty"):
        proc = specsnap("--root", str(clone), "add-bug", "tally", "--fix-commit", commits[name], "--results",
                        str(results), cwd=clone)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        out.append(proc)
    return out


def test_a_fix_commit_becomes_a_bug_with_its_fix_and_only_its_own_tests(tally, bugs):
    clone, _, commits, _, _ = tally
    workload = clone / "real_repos" / "tally"
    canary = yaml.safe_load((workload / "workload.yaml").read_text())["canary"]
    entries = yaml.safe_load((workload / "bugs.yaml").read_text())
    assert [e["id"] for e in entries] == ["TALLY-1", "TALLY-2"]
    tabs, empty = entries
    assert tabs == {"id": "TALLY-1", "fix": commits["tabs"], "upstream": "#12",
                    "behaviour": "Count words split by tabs and newlines", "files": ["tally/core.py"],
                    "tests": ["tests/test_tally_1_core.py::test_word_count_tabs"], "gold": "fixes/TALLY-1.patch"}
    assert "# drafted from the commit message" in (workload / "bugs.yaml").read_text()
    hidden = (workload / "hidden" / "tests" / "test_tally_1_core.py").read_text()
    assert hidden.startswith(f"# {canary}\n") and "def test_word_count_tabs" in hidden
    assert "def test_mean" not in hidden and "def test_clip" not in hidden  # the baseline's own tests stay its own
    patch = (workload / "fixes" / "TALLY-1.patch").read_text()
    assert patch.startswith(f"# {canary}\ndiff --git a/tally/core.py b/tally/core.py") and "tests/" not in patch
    # a new test module, with the helper its test needs
    assert empty["tests"] == ["tests/test_tally_2_mean.py::test_mean_of_nothing_raises"] and "upstream" in empty
    mean = (workload / "hidden" / "tests" / "test_tally_2_mean.py").read_text()
    assert "def _nothing" in mean and "def test_mean_of_one" not in mean  # (it passes on the pin: no bug, not kept)
    assert "left out (they pass on the pin, so they find no bug): tests/test_tally_2_mean.py::test_mean_of_one" in \
        " ".join(bugs[1].stdout.split())
    assert "added TALLY-2" in bugs[1].stdout and "validate-workload tally" in bugs[1].stdout


def test_the_bugs_added_validate(tally, bugs):
    clone, results, _, _, _ = tally
    proc = specsnap("--root", str(clone), "validate-workload", "tally", "--results", str(results), cwd=clone)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "workload tally: all" in proc.stdout


def test_a_failing_test_is_said_once_with_its_first_error_and_its_log(tally, bugs):
    """A fix that also breaks a baseline test: validation names that test once, with every tree it
    fails on, its first error line, and the kept log of the run that showed it."""
    clone, results, _, _, _ = tally
    patch = clone / "real_repos" / "tally" / "fixes" / "TALLY-1.patch"
    good = patch.read_text()
    broken = good + ('diff --git a/tally/__init__.py b/tally/__init__.py\n--- a/tally/__init__.py\n'
                     '+++ b/tally/__init__.py\n@@ -1 +1,4 @@\n """tally."""\n+from tally import core\n'
                     '+\n+core.percent = lambda part, whole: -1.0\n')
    try:
        patch.write_text(broken)
        proc = specsnap("--root", str(clone), "validate-workload", "tally", "--results", str(results), cwd=clone,
                        env={"COLUMNS": "1000"})
    finally:
        patch.write_text(good)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = [line for line in proc.stdout.splitlines() if "test_percent" in line]
    assert len(said) == 1, proc.stdout
    assert "tests/test_core.py::test_percent fails (with every gold, with TALLY-1's gold alone): AssertionError" in said[0]
    log = said[0].rpartition("(log: ")[2].rstrip(")")
    assert Path(log).is_file() and "FAILED" in Path(log).read_text() and Path(log).is_relative_to(results)


@pytest.mark.parametrize(("commit", "reason"), [
    ("clip", "the fix changes an existing baseline test: tests/test_core.py::test_clip fails with it"),
    ("docs", "the test passes on the pin, so it finds no bug: tests/test_tally_3_percent.py::test_percent_half"),
    ("after", "the fix does not apply to the pinned source: error: patch failed: tally/core.py"),
    ("0123abcd", "commit 0123abcd is not in the history"),
])
def test_a_fix_that_is_no_bug_here_is_refused_in_one_line_and_writes_nothing(tally, bugs, commit, reason):
    clone, results, commits, _, _ = tally
    workload = clone / "real_repos" / "tally"
    before = _snapshot(workload)
    proc = specsnap("--root", str(clone), "add-bug", "tally", "--fix-commit", commits.get(commit, commit),
                    "--results", str(results), cwd=clone)
    assert proc.returncode == 2 and reason in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert _snapshot(workload) == before


def test_an_sdist_pin_needs_its_history_named(tmp_path):
    from types import SimpleNamespace

    from sdcs_bench.core.errors import SpecSnapError
    from sdcs_bench.pipeline.add_bug import history_gitdir

    wl = SimpleNamespace(id="thing", source=SimpleNamespace(kind="sdist", describe=lambda: "thing==1.0 (sdist)"))
    with pytest.raises(SpecSnapError, match="has no history: give a clone of its upstream repository with --history"):
        history_gitdir(wl, None, tmp_path)
    with pytest.raises(SpecSnapError, match="not a git repository"):
        history_gitdir(wl, tmp_path, tmp_path)


def test_a_test_module_is_cut_to_the_tests_the_fix_touched():
    from sdcs_bench.pipeline.add_bug import hidden_module

    text = ("import pytest\n\n\n@pytest.fixture\ndef thing():\n    return 1\n\n\ndef test_old():\n    assert 1\n\n\n"
            "@pytest.mark.parametrize('x', [1, 2])\ndef test_new(x, thing):\n    assert x\n\n\n"
            "class TestBox:\n    def setup_method(self):\n        self.n = 1\n\n    def test_kept(self):\n"
            "        assert self.n\n\n    def test_other(self):\n        assert self.n\n\n\n"
            "class TestUntouched:\n    def test_a(self):\n        assert 1\n")
    cut, kept = hidden_module(text, {15, 23})  # a line of test_new, a line of TestBox.test_kept
    assert kept == ["test_new", "TestBox::test_kept"]
    assert "def thing" in cut and "def setup_method" in cut and "@pytest.mark.parametrize" in cut
    assert "def test_old" not in cut and "def test_other" not in cut and "TestUntouched" not in cut
    compile(cut, "cut.py", "exec")


# -- import-tasks -------------------------------------------------------------------------------------
def test_swe_bench_format_instances_become_one_workload_and_a_refused_one_says_why(tally, tmp_path):
    """Four instances in SWE-bench's format against the history fixture, the source from a local
    mirror: the two that fix a bug become one workload's two bugs (FAIL_TO_PASS hidden, the
    PASS_TO_PASS that pass here its baseline) which validates; one whose test passes on the base
    commit and one whose repository the mirror lacks are reported with their reasons."""
    import json
    import subprocess

    clone, results, commits, upstream, _ = tally
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream), str(mirror / "acme__tally")], check=True)

    def diff(a: str, b: str, where: str) -> str:
        return subprocess.run(["git", "-C", str(upstream), "diff", commits[a], commits[b], "--", where],
                              capture_output=True, text=True, check=True).stdout

    core = ["tests/test_core.py::test_word_count", "tests/test_core.py::test_mean", "tests/test_core.py::test_clip",
            "tests/test_core.py::test_percent"]
    rows = [
        {"instance_id": "acme__tally-12", "repo": "acme/tally", "base_commit": commits["pin"],
         "patch": diff("pin", "tabs", "tally"), "test_patch": diff("pin", "tabs", "tests"),
         "FAIL_TO_PASS": json.dumps(["tests/test_core.py::test_word_count_tabs"]),
         "PASS_TO_PASS": json.dumps([*core, "tests/test_six.py::test_six_text"]),
         "problem_statement": "word_count ignores tabs\n\nIt splits on spaces only.", "version": "0.1"},
        {"instance_id": "acme__tally-15", "repo": "acme/tally", "base_commit": commits["pin"],
         "patch": diff("tabs", "empty", "tally"), "test_patch": diff("tabs", "empty", "tests"),
         "FAIL_TO_PASS": ["tests/test_mean.py::test_mean_of_nothing_raises"], "PASS_TO_PASS": core,
         "problem_statement": "mean([]) returns 0 instead of raising"},
        {"instance_id": "acme__tally-20", "repo": "acme/tally", "base_commit": commits["pin"],
         "patch": diff("clip", "docs", "tally"), "test_patch": diff("clip", "docs", "tests"),
         "FAIL_TO_PASS": ["tests/test_percent.py::test_percent_half"], "PASS_TO_PASS": core,
         "problem_statement": "percent() is undocumented"},
        {"instance_id": "acme__gone-1", "repo": "acme/gone", "base_commit": commits["pin"], "patch": "",
         "test_patch": "", "FAIL_TO_PASS": ["tests/test_x.py::test_x"], "PASS_TO_PASS": [], "problem_statement": "x"},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = specsnap("--root", str(clone), "import-tasks", str(tasks), "--mirror", str(mirror), "--results",
                    str(results), cwd=clone, env={"COLUMNS": "1000"})
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "imported 2 of 4 instance(s) into 2 workload(s); 2 refused" in out, out
    assert "imported acme__tally-12: 1 hidden test(s)\n" in out and "left out of its FAIL_TO_PASS" not in out
    assert "refused acme__tally-20: the test passes on the pin, so it finds no bug" in out
    assert "refused acme__gone-1: the repository could not be added here: --mirror" in out
    name = f"tally_{commits['pin'][:7]}"
    workload = clone / "real_repos" / name
    bugs_listed = yaml.safe_load((workload / "bugs.yaml").read_text())
    assert [(b["id"], b["tests"], b["upstream"]) for b in bugs_listed] == [
        ("acme__tally-12", ["tests/test_acme_tally_12_core.py::test_word_count_tabs"], "acme__tally-12"),
        ("acme__tally-15", ["tests/test_acme_tally_15_mean.py::test_mean_of_nothing_raises"], "acme__tally-15")]
    assert bugs_listed[0]["behaviour"] == "word_count ignores tabs"
    baseline = [t for t in (workload / "baseline_tests.txt").read_text().splitlines() if not t.startswith("#")]
    assert sorted(baseline) == sorted([*core, "tests/test_six.py::test_six_text"])
    meta = yaml.safe_load((workload / "workload.yaml").read_text())
    assert meta["title"].startswith("acme/tally (commit ")
    report = json.loads((results / "import" / "tasks.json").read_text())
    validation = next(w for w in report["workloads"] if w["workload"] == name)["validation"]
    assert validation["ok"], validation["failures"]
    # a rerun keeps what was imported and tries the refused ones again
    again = specsnap("--root", str(clone), "import-tasks", str(tasks), "--mirror", str(mirror), "--results",
                     str(results), cwd=clone, env={"COLUMNS": "1000"})
    assert again.returncode == 1 and "imported 2 of 4 instance(s)" in again.stdout, again.stdout
    assert yaml.safe_load((workload / "bugs.yaml").read_text()) == bugs_listed


def test_an_instance_file_with_a_missing_field_is_refused_before_any_work(tally, tmp_path):
    import json

    clone, results, _, _, _ = tally
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"instance_id": "x-1", "repo": "acme/x", "base_commit": "0" * 40, "patch": "",
                               "test_patch": "", "FAIL_TO_PASS": "[\"t\"]", "problem_statement": "p"}) + "\n")
    proc = specsnap("--root", str(clone), "import-tasks", str(bad), "--results", str(results), cwd=clone)
    assert proc.returncode == 2 and "bad.jsonl:1 (x-1): missing PASS_TO_PASS" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not (results / "import" / "bad.json").exists()


@pytest.mark.parametrize(("url", "repo"), [("https://github.com/pallets/click.git", "pallets/click"),
                                           ("git@github.com:PyCQA/isort.git", "PyCQA/isort"),
                                           ("file:///srv/mirror/repo", None), ("", None)])
def test_a_fix_s_source_names_the_hosted_repository_its_history_came_from(tmp_path, url, repo):
    """A history cloned from a hosted repository states the bug's source as owner/name#issue and
    owner/name@commit; a local one (a mirror by path) as the bare issue and the full commit."""
    import subprocess

    from sdcs_bench.pipeline.add_bug import _remote_repo

    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "h")], check=True)
    if url:
        subprocess.run(["git", "--git-dir", str(tmp_path / "h"), "config", "remote.origin.url", url], check=True)
    assert _remote_repo(tmp_path / "h") == repo


def test_an_sdist_s_metadata_beside_its_code_is_scored_with_it(tmp_path):
    """A package that reads its own version (importlib.metadata) needs the sdist's *.egg-info in the
    tree scoring copies, as the sandbox has it (humanize 4.2.0 fails to import without it)."""
    from sdcs_bench.pipeline.add_repo import _globs, _layout

    (tmp_path / "src" / "thing").mkdir(parents=True)
    (tmp_path / "src" / "thing" / "__init__.py").write_text("")
    (tmp_path / "src" / "thing.egg-info").mkdir()
    (tmp_path / "tests").mkdir()
    layout = _layout(tmp_path)
    assert layout["metadata"] == ["thing.egg-info"]
    assert _globs(layout) == ["src/**/*.py", "src/thing.egg-info/*"]


def test_a_package_named_as_the_test_runner_s_own_module_is_refused_before_any_work():
    from sdcs_bench.core.errors import SpecSnapError
    from sdcs_bench.pipeline.add_repo import _check_no_shadow

    with pytest.raises(SpecSnapError, match="package packaging sits at the top of the repository under the name"):
        _check_no_shadow({"import_root": ".", "packages": ["packaging"]})
    _check_no_shadow({"import_root": "src", "packages": ["packaging"]})  # a src layout is scored
