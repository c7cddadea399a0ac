"""Real repositories (docs/real_repos.md): source pins, the interpreter search, the repository's
own environment, scoring inside it, and the whole pipeline on click with reference policies."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import tarfile
import threading

import pytest

from conftest import ROOT, specsnap
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.sandbox.environment import find_interpreter, override_variable
from sdcs_bench.sandbox.source import fetch_source, verified_tree
from sdcs_bench.trial.repo import SourcePin
from sdcs_bench.trial.workload import load_workload

VERSION = "%d.%d" % sys.version_info[:2]


# -- source pins ------------------------------------------------------------------------------------
def _sdist(name: str, version: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"VALUE = 1\n"
        info = tarfile.TarInfo(f"{name}-{version}/{name}/__init__.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A package index on 127.0.0.1 serving one sdist through the simple API's JSON form."""
    archive = _sdist("demo", "1.0")
    files = {"/simple/demo/": None, "/files/demo-1.0.tar.gz": archive}

    class Handler(http.server.BaseHTTPRequestHandler):
        served: dict = {"sha": hashlib.sha256(archive).hexdigest()}

        def do_GET(self):  # noqa: N802
            if self.path == "/simple/demo/":
                body = json.dumps({"files": [{"filename": "demo-1.0.tar.gz", "url": "/files/demo-1.0.tar.gz",
                                              "hashes": {"sha256": self.served["sha"]}}]}).encode()
            elif self.path in files:
                body = files[self.path]
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SPECSNAP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple")
    monkeypatch.setenv("SPECSNAP_DOWNLOAD_CACHE", str(tmp_path / "downloads"))
    yield Handler.served, hashlib.sha256(archive).hexdigest()
    server.shutdown()


def test_sdist_pin_is_fetched_verified_unpacked_and_reused(index, tmp_path):
    _, sha = index
    pin = SourcePin.from_config({"kind": "sdist", "name": "demo", "version": "1.0", "sha256": sha}, "test")
    record = fetch_source(pin, tmp_path / "src")
    tree = verified_tree(pin, tmp_path / "src")
    assert record["sha256"] == sha and (tree / "demo" / "__init__.py").read_text() == "VALUE = 1\n"
    (tree / "demo" / "extra.txt").write_text("kept")
    fetch_source(pin, tmp_path / "src")  # cached: not fetched again, nothing replaced
    assert (tree / "demo" / "extra.txt").is_file()


def test_a_pin_once_downloaded_is_fetched_again_offline_from_the_download_cache(index, tmp_path, monkeypatch):
    """A fresh results directory (a clean checkout in CI) takes the verified archive from the
    download cache without asking the index."""
    _, sha = index
    pin = SourcePin.from_config({"kind": "sdist", "name": "demo", "version": "1.0", "sha256": sha}, "test")
    fetch_source(pin, tmp_path / "first")
    monkeypatch.setenv("SPECSNAP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens: offline
    record = fetch_source(pin, tmp_path / "second")
    assert record["sha256"] == sha and record["url"].startswith("file://")
    assert (verified_tree(pin, tmp_path / "second") / "demo" / "__init__.py").read_text() == "VALUE = 1\n"
    kept = tmp_path / "downloads" / sha / "demo-1.0.tar.gz"
    kept.write_bytes(b"tampered")  # a cached archive is verified like a download: this one is not used
    with pytest.raises(SpecSnapError, match="cannot read the package index"):
        fetch_source(pin, tmp_path / "third")


def test_a_download_whose_hash_differs_from_the_pin_is_refused_and_not_kept(index, tmp_path):
    served, sha = index
    served["sha"] = "0" * 64  # the index lists the file under the pinned hash, but the bytes differ
    pin = SourcePin.from_config({"kind": "sdist", "name": "demo", "version": "1.0", "sha256": "0" * 64}, "test")
    with pytest.raises(SpecSnapError, match=f"has SHA-256 {sha}, not the pinned 0000"):
        fetch_source(pin, tmp_path / "src")
    assert not list((tmp_path / "src").glob("*.tar.gz")) and not (tmp_path / "src" / "source.json").exists()


def test_an_unreachable_index_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSNAP_INDEX_URL", "http://127.0.0.1:9/simple")  # the discard port: nothing listens
    pin = SourcePin.from_config({"kind": "sdist", "name": "demo", "version": "1.0", "sha256": "a" * 64}, "test")
    with pytest.raises(SpecSnapError, match="cannot read the package index .* needs the network once"):
        fetch_source(pin, tmp_path / "src")


def test_git_pin_checks_out_exactly_its_commit(tmp_path):
    repo = tmp_path / "upstream"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "mod.py").write_text("A = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "one"], check=True, env=env)
    first = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (repo / "mod.py").write_text("A = 2\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "two"], check=True, env=env)
    pin = SourcePin.from_config({"kind": "git", "url": f"file://{repo}", "commit": first}, "test")
    fetch_source(pin, tmp_path / "src")
    assert (verified_tree(pin, tmp_path / "src") / "mod.py").read_text() == "A = 1\n"


@pytest.mark.parametrize("bad,message", [
    ({"kind": "tarball"}, "not one of sdist, git"),
    ({"kind": "sdist", "name": "x", "version": "1"}, "needs sha256"),
    ({"kind": "sdist", "name": "x", "version": "1", "sha256": "ABC"}, "not 64 lowercase hex"),
    ({"kind": "git", "url": "u", "commit": "abc"}, "full 40-digit commit"),
])
def test_bad_pins_are_refused_with_the_reason(bad, message):
    with pytest.raises(SpecSnapError, match=message):
        SourcePin.from_config(bad, "workload.yaml")


# -- the interpreter ---------------------------------------------------------------------------------
def test_interpreter_override_wins_and_a_wrong_one_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv(override_variable(VERSION), sys.executable)
    assert find_interpreter(VERSION).found_by == "override"
    monkeypatch.setenv(override_variable("3.4"), sys.executable)
    with pytest.raises(SpecSnapError, match=f"is Python {VERSION}.*not Python 3.4"):
        find_interpreter("3.4")


def test_interpreter_found_in_pyenv_when_not_on_path(monkeypatch, tmp_path):
    """The machine's pyenv interpreters are used although they are not on PATH."""
    fake = tmp_path / "pyenv" / "versions" / f"{VERSION}.99" / "bin"
    fake.mkdir(parents=True)
    (fake / f"python{VERSION}").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.delenv(override_variable(VERSION), raising=False)
    found = find_interpreter(VERSION)
    assert found.found_by == "pyenv" and found.path == str(fake / f"python{VERSION}")


def test_missing_interpreter_names_every_place_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "nothing"))
    with pytest.raises(SpecSnapError, match=r"Python 2\.1 is not available: not python2\.1 on PATH, not in pyenv "
                                            r".*SPECSNAP_PYTHON_2_1"):
        find_interpreter("2.1")


# -- the workloads as data -----------------------------------------------------------------------------
@pytest.mark.parametrize("wid,bugs,baseline", [("click", 13, 574), ("isort", 11, 484)])
def test_real_repository_workloads_are_pure_data(wid, bugs, baseline):
    wl = load_workload(wid)
    assert wl.is_real_repo and wl.family == "real_repo" and len(wl.requirements) == bugs
    assert len(wl.baseline_tests) == baseline and all(reason for _, reason in wl.excluded_tests)
    assert not set(wl.baseline_tests) & {t for t, _ in wl.excluded_tests}
    for bug in wl.requirements:
        assert bug.gold.is_file() and bug.tests and bug.upstream and wl.canary in bug.gold.read_text()
    # the prompt names no bug: the agent has to find them
    assert not any(b.id in s.prompt or b.title in s.prompt for b in wl.requirements for s in wl.schedule)
    with pytest.raises(SpecSnapError, match=f"workload {wid}: its source .* is not fetched here"):
        wl.baseline_dir  # noqa: B018


# -- scoring inside the repository's own environment (downloads click once, from the index) ---------------
@pytest.fixture(scope="session")
def click(tmp_path_factory):
    from sdcs_bench.pipeline.repos import prepare_workload

    return prepare_workload(load_workload("click"), ROOT / "results")


def test_click_pin_and_environment(click):
    env = json.loads((click.environment_dir / "env.json").read_text())
    assert "pytest==7.1.2" in env["freeze"] and env["interpreter"]["version"].startswith("3.11")
    assert (click.baseline_dir / "src" / "click" / "core.py").is_file()


def test_click_fixes_pass_on_every_backend(click, tmp_path, backend):
    """The repository's own environment is readable from each sandbox backend; its whole suite and
    every hidden bug test pass with all fixes, untampered, the library's tests twinned too
    (`validate-workload click` checks each fix alone and the pinned source)."""
    from sdcs_bench.pipeline.validate import _tree
    from sdcs_bench.scoring.scorer import evaluate_tree

    result = evaluate_tree(click, _tree(click, tmp_path, "gold", [b.gold for b in click.requirements]), backend)
    assert not result["tampered"], result["tamper_evidence"][:5]
    assert result["sentinels"]["failing_twins"] > 200
    assert all(result["passed"][t] for t in click.baseline_tests)
    assert all(result["passed"][t] for b in click.requirements for t in b.tests)


def test_click_agent_runs_with_the_repositorys_python(click, tmp_path):
    """The session's `python` and `pytest` are the repository's own (pytest 7.1.2), inside the sandbox."""
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.base import base_env
    from sdcs_bench.sandbox.environment import environment_access, with_environment

    python, readable = environment_access(click.environment_dir)
    home = tmp_path / "home"
    home.mkdir()
    code, out, err = make_backend("auto").run(["pytest", "--version"], workdir=tmp_path, home=home,
                                              env=with_environment(base_env(home), python), timeout=60,
                                              ro_binds=readable)
    assert code == 0 and b"7.1.2" in out + err


@pytest.mark.slow
@pytest.mark.pipeline
def test_real_repos_study_on_click_lands_on_closed_forms(tmp_path):
    """The real_repos study on click end to end (the README's "Add your own repository" test covers
    the same path on a tiny repository in the default run): sessions in the repository's own
    environment, scoring there, every reference trial on its closed form."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "_cache").symlink_to(ROOT / "results" / "_cache", target_is_directory=True)
    overrides = json.dumps(["workload=[click]", "arm=[Vanilla,Repo_Backlog]",
                            "agent=[ref_oracle,ref_null,ref_hint_follower]"])
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--config", "study=real_repos",
                           f"results={results}", f"overrides={overrides}", "name=rr"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    board = json.loads((results / "rr" / "leaderboard.json").read_text())
    rows = {(r["arm"], r["agent"]): r for r in board["rows"]}
    assert rows[("Vanilla", "ref_oracle")]["net"] == 13 and rows[("Vanilla", "ref_null")]["net"] == 0
    assert rows[("Repo_Backlog", "ref_hint_follower")]["net"] == 8
    assert rows[("Repo_Backlog", "ref_oracle")]["predicted_resolved"] == 5
    assert all(r["matches_expected"] for r in board["rows"])


def test_validate_workload_rejects_a_non_repository_for_fetch_source():
    result = specsnap("fetch-source", "tier_2")
    assert result.returncode == 2 and "tier_2 is not a real repository" in result.stderr
    assert "click" in result.stderr and "isort" in result.stderr


# -- arms, hints and the reference policies' closed forms (no source needed) -------------------------
@pytest.mark.parametrize("wid,arm_name,agent,resolved", [
    ("click", "Vanilla", "ref_oracle", 13), ("click", "Vanilla", "ref_null", 0),
    ("click", "Vanilla", "ref_hint_follower", 0),
    # the hand-written backlog names 6 areas holding 8 of the 13 bugs; the partial hint names modules only
    ("click", "Repo_Backlog", "ref_hint_follower", 8), ("click", "Repo_Hinted", "ref_hint_follower", 0),
    ("click", "Tuned_Reference", "ref_hint_follower", 0),
    ("isort", "Repo_Backlog", "ref_hint_follower", 7), ("isort", "Repo_Backlog", "ref_oracle", 11),
    ("isort", "State_MD_Only", "ref_null", 0),
])
def test_reference_policies_have_closed_forms_on_real_repositories(wid, arm_name, agent, resolved):
    from conftest import arm
    from sdcs_bench.agents.expectations import expected_reference_score
    from sdcs_bench.trial import config

    wl = load_workload(wid)
    exp = expected_reference_score(wl, arm(arm_name), config.entity("agent", agent), {"name": "none"})
    assert exp["net"] == resolved
    hinted = {b for h in wl.hints if h.path == "hints/backlog_state.md" for b in h.names}
    if agent == "ref_hint_follower" and arm_name == "Repo_Backlog":
        assert {b for b, ok in exp["requirements"].items() if ok} == hinted


def test_an_arm_takes_a_file_from_the_workloads_own_directory(tmp_path):
    """Repo_Backlog's state.md is each repository's own hints/backlog_state.md: no arm edit for a new
    repository, and one clear error on a workload that has no such file."""
    from conftest import arm

    backlog = arm("Repo_Backlog")
    for wid in ("click", "isort"):
        wl = load_workload(wid)
        files = {f["path"]: f["text"] for f in backlog.for_workload(wid, wl.root).to_config()["files"]}
        assert files["state.md"] == (wl.root / "hints" / "backlog_state.md").read_text()
    tier2 = load_workload("tier_2")
    with pytest.raises(SpecSnapError, match="file state.md is the workload's own hints/backlog_state.md, which "
                                            "workload tier_2 does not have"):
        backlog.for_workload("tier_2", tier2.root)


def test_an_arm_source_mapping_other_than_workload_is_refused():
    from sdcs_bench.trial.arms import Arm

    with pytest.raises(SpecSnapError, match=r"a source mapping is \{workload: PATH\}"):
        Arm.from_config({"name": "X", "files": [{"path": "state.md", "source": {"click": "a.md"}}]})


def test_a_hint_naming_an_unknown_bug_is_refused(tmp_path):
    from sdcs_bench.trial.workload import load_workload_dir

    wl = load_workload("click")
    copy = tmp_path / "click"
    import shutil

    shutil.copytree(wl.root, copy)
    meta = copy / "workload.yaml"
    meta.write_text(meta.read_text().replace("names: [CLICK-2294,", "names: [CLICK-9999, CLICK-2294,"))
    with pytest.raises(SpecSnapError, match="hints: hints/backlog_state.md: names CLICK-9999, which are not bugs"):
        load_workload_dir(copy)


def test_the_leaderboard_divides_by_the_same_agents_vanilla_row():
    import pandas as pd

    from sdcs_bench.pipeline.board import make_board

    def row(arm, agent, raw, tokens):
        return {"trial": f"click__{arm}__{agent}", "workload": "click", "arm": arm, "agent": agent,
                "agent_kind": "model", "variant": "none", "family": "real_repo", "valid": True, "tampered": False,
                "tamper_evidence": "", "n_requirements": 13, "expected_net": None, "matches_expected": None,
                "poison_survived": "", "raw": raw, "net": raw, "tes": raw, "tokens": tokens, "turns": 10,
                "baseline_ok": True, "s1_edit_survived": None, "predicted_resolved": {"Vanilla": 1}.get(arm, 3)}

    board = make_board(pd.DataFrame([row("Vanilla", "a", 1, 1000), row("State_MD_Only", "a", 2, 3100),
                                      row("Vanilla", "b", 0, 500), row("State_MD_Only", "b", 1, 500)]))
    got = {(r.arm, r.agent): (r.tokens_vs_vanilla, r.resolved_vs_vanilla) for r in board.itertuples()}
    assert got[("State_MD_Only", "a")] == (3.1, 2.0) and got[("Vanilla", "a")] == (1.0, 1.0)
    ratio_b = got[("State_MD_Only", "b")]
    assert ratio_b[0] == 1.0 and pd.isna(ratio_b[1])  # Vanilla resolved none: no ratio, not infinity
    assert list(board["predicted_resolved"]) == [3, 3, 1, 1]  # rows sorted by arm, then agent
