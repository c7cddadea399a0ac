"""The cleave guarantee under stress: hundreds of sessions whose agent edits a ``.py`` file and
commits in the same action, on a deliberately loaded machine. Not one cleaved edit may be
committed, and the integrity check of every session must agree (it is computed from the
repository alone, independently of the watcher, the hook and the harness hooks).

``SPECSNAP_STRESS_SESSIONS`` scales the run (default: 200 sessions in all).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT
from harness_support import agent_cfg

from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.session.runner import run_session
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.trial.workload_model import CleaveRule

sys.path.insert(0, str(ROOT / "bench"))
from hogs import Hogs  # noqa: E402  (bench/hogs.py: the load the benches put beside a study)

TOTAL = int(os.environ.get("SPECSNAP_STRESS_SESSIONS", "200"))


@pytest.fixture(scope="module")
def loaded_machine():
    """Keep every core busy for the whole module: no timing margin may depend on an idle machine."""
    with Hogs(cpu=os.cpu_count() or 2) as hogs:
        yield hogs.cpu


def _pristine(tmp_path: Path, workload_id: str, arm_name: str) -> Path:
    dest = tmp_path / f"pristine-{workload_id}"
    scaffold(load_workload(workload_id), Arm.from_config(config.entity("arm", arm_name)), dest)
    return dest


def _session(workload_id: str, rule: str | None):
    spec = load_workload(workload_id).schedule[0]
    return replace(spec, cleave=CleaveRule.parse(rule)) if rule else spec


def _carried_conversation(tmp_path: Path, wid: str, mode: str) -> Path:
    """A reference policy's conversation as an earlier session left it (the sprint's prompt), carried
    as the handoff stage carries it: whole for ``resume``, compacted for ``compact``."""
    import json

    from sdcs_bench.agents.continuation import compact_state
    from sdcs_bench.session.carry import write_state

    data = json.dumps({"id": "stress", "turns": [load_workload(wid).schedule[0].prompt]}).encode()
    if mode == "compact":
        data, _ = compact_state(load_workload(wid), data)
    dest = tmp_path / f"carry-{wid}-{mode}.tar.gz"
    write_state({".specsnap-policy/stress.json": data}, dest)
    return dest


def _run_many(tmp_path: Path, cases: list[tuple], n: int, backend_name: str = "bwrap") -> list:
    """Run ``n`` sessions, cycling through (agent, workload, cleave rule[, continuation mode]) cases,
    each in a fresh copy of a scaffolded sandbox: a first session, or with a mode (resume, compact)
    a continuation that resumes a carried conversation under the rule; return one line per session
    whose guarantee did not hold."""
    backend = make_backend(backend_name)
    arm = Arm.from_config(config.entity("arm", "AGENTS_MD_Only"))
    pristine = {wid: _pristine(tmp_path, wid, "AGENTS_MD_Only") for wid in {c[1] for c in cases}}
    failures, outcomes = [], Counter()
    carries = {(c[1], c[3]): _carried_conversation(tmp_path, c[1], c[3]) for c in cases if len(c) > 3}
    for i in range(n):
        agent, wid, rule, *mode = cases[i % len(cases)]
        work = tmp_path / "work" / f"{i:04d}" / "sandbox"
        shutil.copytree(pristine[wid], work, symlinks=True)
        start = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
        resumed = {"index": 2, "continuation": {"mode": mode[0], "conversation": "stress", "resume": True},
                   "carry_in": carries[wid, mode[0]]} if mode else {"index": 1}
        record = run_session(
            trial_id=f"stress-{i}", session=_session(wid, rule), workload=load_workload(wid), arm=arm,
            agent_cfg=agent_cfg(agent), workdir=work, stage_dir=work.parent / "stage", backend=backend,
            timeout_s=120, **resumed,
        )
        cleave = record["cleave"]
        outcomes[(agent, wid, rule, *mode, record["status"])] += 1
        landed = subprocess.run(["git", "rev-list", f"{start}..HEAD"], cwd=work, capture_output=True,
                                text=True).stdout.split()
        problems = []
        metered = rule is not None and CleaveRule.parse(rule).metered
        if not cleave["fired"]:
            problems.append("the cleave never fired")
        elif metered:
            # A token or turn cut: no edit is cut, but nothing may land after the call that reached
            # it. The oracle's metered steps are its read, then one patch and commit each; the step
            # that reached the cut is never performed. A replay agent's reply after the cut: nothing.
            if not cleave["integrity"]["ok"]:
                problems.append(f"integrity: {cleave['integrity']}")
            want = cleave["at_turns"] - 2 if agent.startswith("ref_") else 0
            if len(landed) != want:
                problems.append(f"{len(landed)} commit(s) landed, exactly {want} should have")
        elif not cleave["integrity"]["ok"] or not cleave["edit_uncommitted"]:
            problems.append(f"integrity: {cleave['integrity']}")
        elif not subprocess.run(["git", "status", "--porcelain", "--", cleave["path"]], cwd=work,
                                capture_output=True, text=True).stdout.strip():
            problems.append(f"the cleaved edit of {cleave['path']} is not in the working tree")
        # first_py_edit on tier_2: nothing may land; tier 1's baseline commit and the first commit
        # under nth_py_edit:2 may (each carries only writes made before the cleaving one).
        allowed = 0 if (wid, rule) == ("tier_2", None) else 1
        if not metered and len(landed) > allowed:
            problems.append(f"{len(landed)} commit(s) landed, at most {allowed} may")
        if problems:
            failures.append(f"session {i} ({agent}, {wid}, {rule}): {'; '.join(problems)}")
        shutil.rmtree(work.parent)
    print(dict(outcomes))
    return failures


@pytest.mark.stress
@pytest.mark.slow
def test_reference_policies_never_commit_a_cleaved_edit_under_load(tmp_path, loaded_machine):
    # ref_oracle edits a requirement and commits it in one action, with no pause in between.
    cases = [
        ("ref_oracle", "tier_2", None),  # first_py_edit: the hook refuses by content
        ("ref_verbatim_notes", "tier_2", None),
        ("ref_oracle", "tier_2", "nth_py_edit:2"),  # the first commit lands; the hook asks the watcher
        ("ref_oracle", "tier_1", None),  # first_py_edit_after_commit: the baseline commit arms it
        ("ref_oracle", "tier_2", "after_turns:3"),  # the meter's third call: one patch committed, then the cut
        ("ref_oracle", "tier_2", "after_tokens:2000"),
    ]
    failures = _run_many(tmp_path, cases, TOTAL * 3 // 4)
    assert not failures, "\n".join(failures)


@pytest.mark.stress
@pytest.mark.slow
def test_the_command_adapter_never_commits_a_cleaved_edit_under_load(tmp_path, loaded_machine):
    # The tiny agent writes a module and runs `git add -A && git commit` in the same model reply.
    # Under after_turns:1 the cut fires as the first reply is answered: its commit must never land.
    failures = _run_many(tmp_path, [("replay_command", "tier_2", None), ("replay_command", "tier_2", "after_turns:1")],
                         TOTAL // 4)
    assert not failures, "\n".join(failures)


@pytest.mark.stress
@pytest.mark.slow
def test_resumed_and_compacted_sessions_never_commit_a_cleaved_edit_under_load(tmp_path, loaded_machine):
    # A continuation that resumes the policy's own conversation (whole, or compacted to summary lines)
    # and is cut at its first .py edit: the resumed policy edits and commits in one action, as in S1.
    cases = [("ref_verbatim_notes", "tier_2", None, "resume"), ("ref_verbatim_notes", "tier_2", None, "compact"),
             ("ref_amnesiac", "tier_2", None, "resume"), ("ref_amnesiac", "tier_2", None, "compact")]
    failures = _run_many(tmp_path, cases, TOTAL // 4)
    assert not failures, "\n".join(failures)


@pytest.mark.stress
@pytest.mark.slow
def test_reference_trials_land_on_their_closed_forms_under_a_cpu_and_an_io_hog(tmp_path, loaded_machine):
    """The cut handshake (docs/agents.md): with every core busy and a writer hammering the disk, a grid of
    cuts at the first, second and third edit (and by turns) of gold-patch policies, run through the
    pipeline, lands every row on its closed form: no pause is what makes a cut exact."""
    import pandas as pd
    from test_pipeline import run_grid

    with Hogs(cpu=0, io_dir=tmp_path / "io-hog"):  # (beside the module's CPU hogs)
        board, run = run_grid(tmp_path / "work", "cut_sweep", "loaded", workload=["tier_2"], arm=["State_MD_Only"],
                              agent=["ref_oracle", "ref_verbatim_notes", "ref_reverter"],
                              variant=["none", "cut_nth_2", "cut_nth_3", "cut_turns_2"])
    cards = pd.read_csv(run / "scorecards.csv")
    assert cards["valid"].all(), cards.loc[~cards["valid"], ["trial", "invalid_reasons"]].to_string()
    assert cards["matches_expected"].all(), cards.loc[~cards["matches_expected"].astype(bool), "trial"].tolist()
    assert len(board) == 3 * 4 and board["matches_expected"].all()
