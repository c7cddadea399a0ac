from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import shutil

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Test inputs that are themselves repositories with tests (tests/fixtures/own_repo): data, not tests.
collect_ignore = ["fixtures"]


@pytest.fixture(autouse=True, scope="session")
def _private_work_root(tmp_path_factory):
    """Live sandboxes of the tests never mix with a user's runs."""
    os.environ["SPECSNAP_WORK_ROOT"] = str(tmp_path_factory.mktemp("work-root"))


@pytest.fixture(scope="session")
def tier2():
    from sdcs_bench.trial.workload import load_workload

    return load_workload("tier_2")


def arm(name: str):
    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm

    return Arm.from_config(config.entity("arm", name))


@pytest.fixture
def make_sandbox(tmp_path, tier2):
    """Scaffold a fresh tier_2 sandbox with the given arm."""
    from sdcs_bench.sandbox.scaffold import scaffold

    def _make(arm_name: str = "State_MD_Only", name: str = "sandbox") -> Path:
        dest = tmp_path / name
        scaffold(tier2, arm(arm_name), dest)
        return dest

    return _make


def backends() -> list[str]:
    from sdcs_bench.sandbox.bwrap import BwrapBackend

    return ["bwrap", "local"] if BwrapBackend.available() else ["local"]


@pytest.fixture(params=backends())
def backend(request):
    import warnings

    from sdcs_bench.sandbox import make_backend

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield make_backend(request.param)


def required_infra(name: str) -> bool:
    """CI sets SPECSNAP_REQUIRE_INFRA (e.g. ``docker,slurm``): there a missing engine is a failure."""
    return name in os.environ.get("SPECSNAP_REQUIRE_INFRA", "").replace(" ", "").split(",")


def missing(name: str, reason: str):
    if required_infra(name):
        pytest.fail(f"{reason} (SPECSNAP_REQUIRE_INFRA demands {name})")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_engine():
    """A Docker engine: the one that answers, else one started for the tests (only ever with
    --iptables=false --bridge=none, by containers/engine.sh) and stopped after them."""
    from sdcs_bench.core.errors import SpecSnapError
    from sdcs_bench.sandbox.images import engine

    try:
        yield engine()
        return
    except SpecSnapError:
        pass
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        missing("docker", "no Docker engine answers, and none can be started here (dockerd missing or not root)")
    state = Path(os.environ.get("SPECSNAP_DOCKER_STATE", "/run/specsnap-dockerd"))
    started = subprocess.run([str(ROOT / "containers" / "engine.sh"), "start"], capture_output=True, text=True)
    if started.returncode != 0:
        missing("docker", f"containers/engine.sh start failed: {started.stderr.strip()}")
    try:
        yield engine()
    finally:
        if (state / "started-by-specsnap").exists():
            subprocess.run([str(ROOT / "containers" / "engine.sh"), "stop"], capture_output=True)


@pytest.fixture(scope="session")
def docker_image(docker_engine, tmp_path_factory) -> Path:
    """The base image's record (built once per engine: the first build takes about a minute)."""
    from sdcs_bench.sandbox.images import build_image

    record = tmp_path_factory.mktemp("images") / "base.json"
    build_image("base", record, log=lambda m: None)
    return record


@pytest.fixture(params=["bwrap", "docker"])
def isolated_backend(request):
    """Each isolating backend, for the contract they all keep."""
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.bwrap import BwrapBackend

    if request.param == "bwrap":
        if not BwrapBackend.available():
            missing("bwrap", "bubblewrap is not usable here")
        return make_backend("bwrap")
    record = request.getfixturevalue("docker_image")
    return make_backend("docker", {"image_record": str(record), "limits": {"memory": "1g", "cpus": 1, "processes": 256}})


def apply_patch(tree: Path, patch: Path) -> None:
    subprocess.run(["git", "apply", str(patch)], cwd=tree, check=True, capture_output=True)


def specsnap(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sdcs_bench.cli", *args], cwd=cwd or ROOT, capture_output=True, text=True,
        env={**os.environ, **(env or {})},
    )


def snakemake_says(run: subprocess.CompletedProcess) -> str:
    """What a Snakemake run printed, less Snakemake's own notice that it uses the workflow's default
    profile (``profiles/default``), which it prints before anything else on every run."""
    lines = (run.stdout + run.stderr).strip().splitlines()
    if lines and lines[0].startswith("Using workflow specific profile "):
        lines = lines[1:]
    return "\n".join(lines).strip()


@pytest.fixture
def clone(tmp_path) -> Path:
    """A second checkout of the project (its files, not the installed package's), with a study of
    its own (`mine`)."""
    dest = tmp_path / "clone"
    dest.mkdir()
    for part in ("Snakefile", "conf", "tiers", "workflow", "harnesses", "containers", "profiles"):
        src = ROOT / part
        if src.is_symlink():  # profiles -> workflow/profiles, where Snakemake finds its default profile
            os.symlink(os.readlink(src), dest / part)
        else:
            (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / part)
    (dest / "conf" / "study" / "mine.yaml").write_text(
        "name: mine\ndescription: only in the clone\ngrid:\n  workload: [tier_2]\n  arm: [Vanilla]\n"
        "  agent: [ref_null]\n  variant: [none]\n  seed: [0]\n")
    return dest


@pytest.fixture(scope="session")
def replay_pairs(tmp_path_factory):
    """``replay_pairs(agent)``: both sessions of a replay agent, run once per test run and shared by
    the harness contract suite and that harness's own tests."""
    from harness_support import run_replay_pair

    cache = {}

    def get(agent: str):
        if agent not in cache:
            cache[agent] = run_replay_pair(agent, tmp_path_factory.mktemp(agent))
        return cache[agent]

    return get


def two_session_jobs(plan: Path, out: Path) -> list[list[str]]:
    """The stage jobs of a two-session trial (scaffold, both sessions, score), as the rules write
    them, for its plan file ``plan`` and its trial directory ``out``."""
    return [["scaffold-sandbox", "--trial", str(plan), "--stage-dir", str(out / "scaffold")],
            ["run-session", "--trial", str(plan), "--session", "1", "--from", str(out / "scaffold"),
             "--stage-dir", str(out / "session_1")],
            ["run-session", "--trial", str(plan), "--session", "2", "--from", str(out / "session_1"),
             "--stage-dir", str(out / "session_2")],
            ["score", "--trial", str(plan), "--from", str(out / "session_2"), "--stage-dir", str(out / "score"),
             "--session-record", str(out / "session_1" / "stage.json"),
             "--session-record", str(out / "session_2" / "stage.json")]]
