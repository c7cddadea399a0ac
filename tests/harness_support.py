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
    workdir: Path
    stage_dir: Path
    start_head: str
    ledger: list[dict[str, Any]]

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.workdir, capture_output=True, text=True, check=True).stdout

    @property
    def proxy_totals(self):
        return ledger_totals(self.ledger)


def agent_cfg(name: str) -> dict[str, Any]:
    return config.entity("agent", name)


def scaffold_tier2(dest: Path, arm_name: str = "AGENTS_MD_Only") -> Path:
    scaffold(load_workload("tier_2"), Arm.from_config(config.entity("arm", arm_name)), dest)
    return dest


def run_replay_session(agent: str | dict[str, Any], workdir: Path, stage_dir: Path, index: int = 1,
                       arm_name: str = "AGENTS_MD_Only", timeout_s: float = 300) -> SessionRun:
    """Run session ``index`` of tier_2's schedule in an existing sandbox with the (replay) agent."""
    cfg = agent_cfg(agent) if isinstance(agent, str) else agent
    workload = load_workload("tier_2")
    schedule = effective_schedule(workload, config.entity("variant", "none"))
    start = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workdir, capture_output=True, text=True).stdout.strip()
    record = run_session(
        trial_id=f"test-{cfg['name']}", index=index, session=schedule[index - 1], workload=workload,
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
    assert (run.workdir / edited).is_file()
