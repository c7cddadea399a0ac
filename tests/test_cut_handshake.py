"""The cut handshake (docs/agents.md): a reference policy in a session cut at an edit asks the
session's controller after each action and waits; the controller answers only once its watcher has
judged every earlier write, and never after the cut. So the cut lands exactly however late the
watcher is. Here the watcher is made late on purpose (each file event held 0.4 s before it is
judged, as a starved thread on a loaded machine would be): the policy must still stop at the
cutting write, with no later write in the working tree. With the fact-driven policy's old pause (0.1 s) in place
of the handshake, it wrote on past the cut (its case fails with the handshake switched off); the
gold-patch oracle's commits are held by the git hook's own question under an nth rule as well."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from harness_support import agent_cfg

from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.session import cleave as cleave_module
from sdcs_bench.session.runner import run_session
from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.trial.workload_model import CleaveRule

LATE_S = 0.4


WRITES = ("created", "modified", "closed", "moved", "deleted")


@pytest.fixture
def late_watcher(monkeypatch):
    """Every write event in the working tree judged LATE_S after the watcher takes it (and so is every
    event behind it in the one ordered stream, the policy's questions included)."""
    original = cleave_module.CleaveController.dispatch

    def dispatch(self, event):
        src = os.fsdecode(event.src_path or b"")
        if event.event_type in WRITES and not src.startswith(self.control_dir) and "/.git/" not in src:
            time.sleep(LATE_S)
        return original(self, event)

    monkeypatch.setattr(cleave_module.CleaveController, "dispatch", dispatch)


def _changed_py(work: Path) -> list[str]:
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=work, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    return sorted(line[3:] for line in status if line.endswith(".py"))


@pytest.mark.parametrize("agent,workload,rule", [
    ("ref_oracle", "tier_2", "nth_py_edit:2"),  # its first edit lands (committed); the second is cut
    ("ref_every_fact", "motifs_s2", "first_py_edit"),  # its notes first (answered), then the cut .py edit
])
def test_a_cut_at_an_edit_is_exact_with_a_late_watcher(late_watcher, tmp_path, agent, workload, rule):
    wl = load_workload(workload)
    arm = Arm.from_config(config.entity("arm", "State_MD_Only"))
    work = tmp_path / "sandbox"
    scaffold(wl, arm, work)
    session = replace(wl.schedule[0], cleave=CleaveRule.parse(rule))
    record = run_session(trial_id=f"late-{agent}", session=session, workload=wl, arm=arm, agent_cfg=agent_cfg(agent),
                         workdir=work, stage_dir=tmp_path / "stage", backend=make_backend("auto"), timeout_s=120, index=1)
    cut = record["cleave"]
    assert cut["fired"] and record["status"] == "cleaved", cut
    assert cut["integrity"]["ok"] and cut["edit_uncommitted"], cut
    assert _changed_py(work) == [cut["path"]], "the policy wrote on past the cut"
    shutil.rmtree(work)
