"""Closed-form expected scores of the reference policies (SPEC §7).

Each follows from the workload data alone, which is what makes the reference policies the
pipeline's end-to-end check: a trial whose observed score differs from its expectation means
the pipeline (scaffold, cleave, sessions or scoring) is broken, not the policy.
"""

from __future__ import annotations

from typing import Any

from ..arms import Arm
from ..schedule import effective_schedule
from ..workload import Workload


def expected_reference_score(
    workload: Workload, arm: Arm, agent: dict[str, Any], variant: dict[str, Any]
) -> dict[str, Any] | None:
    """``{"raw", "net", "requirements", "s1_edit_survived", "no_cleave"}``, or ``None`` when the
    agent is not a reference policy or no closed form covers this schedule."""
    if not agent.get("reference"):
        return None
    policy = agent.get("policy", {})
    reqs = workload.requirements
    schedule = effective_schedule(workload, variant)
    cut_first = [s.cleave.kind for s in schedule] == ["first_py_edit", "none"] and len(schedule) == 2
    uncut = len(schedule) == 1 and not schedule[0].cleave.active
    if not (cut_first or uncut):
        return None
    acts = policy.get("acts", True)
    if not acts:
        passing: set[str] = set()
    elif policy.get("knows_sprint") == "always" or uncut:
        passing = {r.id for r in reqs}
    else:
        # S1 reads the sprint, takes notes (if the arm gave it the notes file), writes the first
        # requirement's gold and is cut at that write. S2 sees only the disk.
        first = reqs[0].id
        kept = set() if policy.get("revert_uncommitted") else {first}
        notes = policy.get("notes", "none") if arm.notes_file and arm.notes_file == policy.get("notes_file") else "none"
        if notes == "verbatim":
            passing = {r.id for r in reqs}
        elif notes == "compressed":
            # A one-line note reproduces a requirement only when it keeps every tested detail.
            passing = kept | {r.id for r in reqs if r.from_summary is None}
        else:
            passing = kept
    survived = None
    if cut_first and acts and policy.get("knows_sprint") != "always":
        survived = not policy.get("revert_uncommitted")
    elif cut_first and acts:
        survived = True
    raw = len(passing)
    return {
        "raw": raw,
        "net": raw,  # gold and summary patches keep the baseline and the boundary rules
        "requirements": {r.id: r.id in passing for r in reqs},
        "s1_edit_survived": survived,
        "no_cleave": cut_first and not acts,
    }
