"""Running a real harness binary for one session against the replay proxy (shared by the
per-harness tests)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.proxy import ReplayScript, ledger_totals, read_ledger
from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.session.runner import run_session
from sdcs_bench.trial.workload import load_workload

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class SessionRun:
    record: dict[str, Any]
    workdir: Path  # the sandbox the session ran in
    stage_dir: Path
    start_head: str
    ledger: list[dict[str, Any]]
    state: Path | None = None  # the repository as this session left it (default: the sandbox itself)

    @property
    def tree(self) -> Path:
        return self.state or self.workdir

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.tree, capture_output=True, text=True, check=True).stdout

    @property
    def proxy_totals(self):
        return ledger_totals(self.ledger)


def agent_cfg(name: str) -> dict[str, Any]:
    return config.entity("agent", name)


def scaffold_tier2(dest: Path, arm_name: str = "AGENTS_MD_Only") -> Path:
    scaffold(load_workload("tier_2"), Arm.from_config(config.entity("arm", arm_name)), dest)
    return dest


def run_replay_session(agent: str | dict[str, Any], workdir: Path, stage_dir: Path, index: int = 1,
                       arm_name: str = "AGENTS_MD_Only", timeout_s: float = 300, cleave: str | None = None) -> SessionRun:
    """Run session ``index`` of tier_2's schedule in an existing sandbox with the (replay) agent
    (under another cleave rule than the schedule's, when ``cleave`` is given)."""
    from dataclasses import replace

    from sdcs_bench.trial.workload_model import CleaveRule

    cfg = agent_cfg(agent) if isinstance(agent, str) else agent
    workload = load_workload("tier_2")
    schedule = effective_schedule(workload, config.entity("variant", "none"))
    session = schedule[index - 1] if cleave is None else replace(schedule[index - 1], cleave=CleaveRule.parse(cleave))
    start = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workdir, capture_output=True, text=True).stdout.strip()
    record = run_session(
        trial_id=f"test-{cfg['name']}", index=index, session=session, workload=workload,
        arm=Arm.from_config(config.entity("arm", arm_name)), agent_cfg=cfg, workdir=workdir, stage_dir=stage_dir,
        backend=make_backend("bwrap"), timeout_s=timeout_s,
    )
    return SessionRun(record, workdir, stage_dir, start, read_ledger(stage_dir / "ledger.jsonl"))


def served_usage(agent: str, index: int, *entries: int):
    """The usage of the given (1-based) entries of the agent's replay script for session ``index``."""
    from sdcs_bench.core.tokens import TokenUsage

    script = ReplayScript.load(ROOT / agent_cfg(agent)["replay_script"]).for_session(index, {})
    return sum((script.entries[e - 1].reply.usage for e in entries), TokenUsage(source="proxy"))


def served_entries(ledger: list[dict[str, Any]]) -> list[int]:
    """The replay entries the proxy answered (refused calls excluded), in order."""
    return [r["replay_entry"] for r in ledger if r.get("kind") == "generate" and not r.get("refused")]


def without_source(usage: dict[str, Any]) -> dict[str, Any]:
    """Token components only (to compare a native report with the proxy's)."""
    return {k: v for k, v in usage.items() if k != "source"}


def script_usage(agent: str, index: int):
    cfg = agent_cfg(agent)
    return ReplayScript.load(ROOT / cfg["replay_script"]).expected_usage(index)


def assert_cleaved_and_uncommitted(run: SessionRun, edited: str) -> None:
    """The protocol's promise for S1: the cleave fired on the edit, the edit is in the working tree,
    and the commit issued in the same reply never happened."""
    rec = run.record
    assert rec["status"] == "cleaved", (rec["status"], rec["exit_code"], (run.stage_dir / "agent.stderr.log").read_text()[-3000:])
    assert rec["cleave"]["fired"] and rec["cleave"]["path"] == edited, rec["cleave"]
    assert rec["cleave"]["edit_uncommitted"] is True
    assert run.git("rev-parse", "HEAD").strip() == run.start_head, "a commit landed after the cleave"
    assert edited in run.git("status", "--porcelain", "--untracked-files=all")
    assert (run.tree / edited).is_file()


@dataclass
class ReplayPair:
    """Both sessions of one replay agent in one sandbox: S1 (cleaved) then S2 (the continuation),
    with what the private HOMEs held (copied before the runner removed them) and every request
    body the proxy saw (``SPECSNAP_PROXY_DUMP``)."""

    agent: str
    base: Path
    s1: SessionRun
    s2: SessionRun

    @property
    def workdir(self) -> Path:
        return self.s1.workdir

    @property
    def dump(self) -> Path:
        return self.base / "dump"

    def home(self, index: int) -> Path:
        return self.base / "home-copies" / str(index)

    def home_files(self, index: int) -> list[str]:
        return sorted(p.relative_to(self.home(index)).as_posix() for p in self.home(index).rglob("*") if p.is_file())

    def session(self, index: int) -> SessionRun:
        return self.s1 if index == 1 else self.s2


def run_replay_pair(agent: str, base: Path, timeout_s: float = 120) -> ReplayPair:
    """Run a replay agent's two sessions (a missing pinned binary is an error here, never a skip)."""
    import shutil

    import pytest

    from sdcs_bench.agents import make_harness
    from sdcs_bench.agents.real import RealHarness

    harness = make_harness(agent_cfg(agent))
    if isinstance(harness, RealHarness) and harness.pin is not None:
        assert harness.binary().is_file(), f"{harness.binary()} missing: run `specsnap install-harnesses`"
    original = RealHarness.usage

    def keep_home(self, ctx, transcript):
        shutil.copytree(ctx.home, base / "home-copies" / str(ctx.index), symlinks=True, dirs_exist_ok=True)
        return original(self, ctx, transcript)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RealHarness, "usage", keep_home)
        mp.setenv("SPECSNAP_PROXY_DUMP", str(base / "dump"))
        workdir = scaffold_tier2(base / "repo")
        s1 = run_replay_session(agent, workdir, base / "s1", 1, timeout_s=timeout_s)
        s1.state = base / "after-s1"  # what S1 left, kept for the S1 tests (S2 changes the sandbox)
        shutil.copytree(workdir, s1.state, symlinks=True)
        s2 = run_replay_session(agent, workdir, base / "s2", 2, timeout_s=timeout_s)
    return ReplayPair(agent, base, s1, s2)
