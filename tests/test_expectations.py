"""The closed-form expected score of every reference policy in every smoke arm (tier_2)."""

from __future__ import annotations

import pytest
from conftest import arm

from sdcs_bench import config
from sdcs_bench.agents.expectations import expected_reference_score

NONE = {"name": "none", "schedule": "as_workload"}
UNCUT = {"name": "uninterrupted", "schedule": "single_session"}

# (agent, arm) -> net of 8 after the cleaved two-session schedule
CUT = {
    ("ref_oracle", "Vanilla"): 8, ("ref_oracle", "AGENTS_MD_Only"): 8, ("ref_oracle", "State_MD_Only"): 8,
    ("ref_null", "Vanilla"): 0, ("ref_null", "AGENTS_MD_Only"): 0, ("ref_null", "State_MD_Only"): 0,
    # Only the first requirement's edit, left uncommitted on disk at the cleave, survives.
    ("ref_amnesiac", "Vanilla"): 1, ("ref_amnesiac", "AGENTS_MD_Only"): 1, ("ref_amnesiac", "State_MD_Only"): 1,
    # Notes need a notes file: only State_MD_Only gives one.
    ("ref_verbatim_notes", "Vanilla"): 1, ("ref_verbatim_notes", "AGENTS_MD_Only"): 1,
    ("ref_verbatim_notes", "State_MD_Only"): 8,
    # One-line notes keep R-BIL-2 and R-RBA-2 (summaries lossless) and lose the other five unfinished.
    ("ref_compressed_notes", "Vanilla"): 1, ("ref_compressed_notes", "AGENTS_MD_Only"): 1,
    ("ref_compressed_notes", "State_MD_Only"): 3,
    ("ref_reverter", "Vanilla"): 0, ("ref_reverter", "AGENTS_MD_Only"): 0, ("ref_reverter", "State_MD_Only"): 0,
}


@pytest.mark.parametrize("agent,arm_name", sorted(CUT))
def test_cleaved_schedule(tier2, agent, arm_name):
    exp = expected_reference_score(tier2, arm(arm_name), config.entity("agent", agent), NONE)
    assert exp["net"] == CUT[(agent, arm_name)]


@pytest.mark.parametrize("agent", sorted({a for a, _ in CUT}))
def test_uninterrupted_control_reaches_the_full_score(tier2, agent):
    exp = expected_reference_score(tier2, arm("Vanilla"), config.entity("agent", agent), UNCUT)
    assert exp["net"] == (0 if agent == "ref_null" else 8)


def test_compressed_notes_lose_exactly_the_lossy_requirements(tier2):
    exp = expected_reference_score(tier2, arm("State_MD_Only"), config.entity("agent", "ref_compressed_notes"), NONE)
    kept = {r for r, ok in exp["requirements"].items() if ok}
    lossless = {r.id for r in tier2.requirements if r.from_summary is None}
    assert kept == {"R-LED-1"} | lossless and lossless == {"R-BIL-2", "R-RBA-2"}


def test_reverter_loses_the_s1_edit(tier2):
    exp = expected_reference_score(tier2, arm("Vanilla"), config.entity("agent", "ref_reverter"), NONE)
    assert exp["s1_edit_survived"] is False
    amnesiac = expected_reference_score(tier2, arm("Vanilla"), config.entity("agent", "ref_amnesiac"), NONE)
    assert amnesiac["s1_edit_survived"] is True


def test_models_have_no_reference_expectation(tier2):
    assert expected_reference_score(tier2, arm("Vanilla"), {"name": "m", "harness": "x"}, NONE) is None
