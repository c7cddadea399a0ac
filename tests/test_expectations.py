"""The closed-form expected score of every reference policy in every smoke arm (tier_2)."""

from __future__ import annotations

import pytest
from conftest import arm

from sdcs_bench.trial import config
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
    assert expected_reference_score(tier2, arm("Vanilla"), config.entity("agent", "claude_code_sonnet"), NONE) is None


# tier x agent x arm -> net after the workload's own (cleaved) schedule
TIERS = {
    ("tier_1", "ref_amnesiac", "Vanilla"): 1, ("tier_1", "ref_verbatim_notes", "Tuned_Reference"): 6,
    ("tier_1", "ref_compressed_notes", "State_MD_Only"): 1, ("tier_1", "ref_reverter", "Gate_I"): 0,
    ("tier_3", "ref_verbatim_notes", "State_MD_Only"): 24, ("tier_3", "ref_compressed_notes", "Tuned_Reference"): 1,
    # tier 4: each of the three cleaved sessions leaves one edit on disk
    ("tier_4", "ref_amnesiac", "Vanilla"): 3, ("tier_4", "ref_wave_amend", "State_MD_Original_Rule"): 36,
    ("tier_4", "ref_wave_overwrite", "State_MD_Original_Rule"): 15, ("tier_4", "ref_hash_check", "Gate_I"): 36,
    # one-line notes steer every later session into a wrong patch: worse than no notes at all
    ("tier_4", "ref_compressed_notes", "State_MD_InPlace_Rule"): 1, ("tier_4", "ref_compressed_notes", "Vanilla"): 3,
}


@pytest.mark.parametrize("tier,agent,arm_name", sorted(TIERS))
def test_other_tiers(tier, agent, arm_name):
    from sdcs_bench.trial.workload import load_workload

    exp = expected_reference_score(load_workload(tier), arm(arm_name), config.entity("agent", agent), NONE)
    assert exp["net"] == TIERS[(tier, agent, arm_name)]


def test_tier4_superseded_form_is_upgraded_only_when_the_amendment_is_known():
    from sdcs_bench.trial.workload import load_workload

    tier4 = load_workload("tier_4")
    amended = [r for r in tier4.requirements if r.amendment]
    assert len(amended) == 6 and {r.amended_in for r in amended} == {"S2", "S3"}
    uncut = expected_reference_score(tier4, arm("Vanilla"), config.entity("agent", "ref_amnesiac"), UNCUT)
    assert uncut["net"] == 36  # the control sees every wave and every amendment at once


ALL_AGENTS = ["ref_oracle", "ref_null", "ref_amnesiac", "ref_verbatim_notes", "ref_compressed_notes", "ref_reverter",
              "ref_wave_overwrite", "ref_wave_amend", "ref_hash_check"]


@pytest.mark.parametrize("tier", ["tier_1", "tier_2", "tier_3", "tier_4"])
def test_every_tier_and_arm_has_a_closed_form_with_the_expected_order(tier):
    from sdcs_bench.trial.workload import load_workload

    workload = load_workload(tier)
    n = len(workload.requirements)
    for arm_name in config.options("arm"):
        the_arm = arm(arm_name)
        net = {a: expected_reference_score(workload, the_arm, config.entity("agent", a), NONE)["net"] for a in ALL_AGENTS}
        control = {a: expected_reference_score(workload, the_arm, config.entity("agent", a), UNCUT)["net"] for a in ALL_AGENTS}
        assert net["ref_oracle"] == n and net["ref_null"] == 0 and net["ref_reverter"] == 0
        assert control == {a: (0 if a == "ref_null" else n) for a in ALL_AGENTS}
        # with no drift to repair, the hash check changes nothing; amending never loses to overwriting
        assert net["ref_hash_check"] == net["ref_wave_amend"] >= net["ref_wave_overwrite"] >= net["ref_amnesiac"]
        if the_arm.notes_file is None:  # no notes file: every note-taker is an amnesiac
            assert {net[a] for a in ALL_AGENTS if "notes" in a or "wave" in a or "hash" in a} == {net["ref_amnesiac"]}
        else:
            assert net["ref_verbatim_notes"] == net["ref_wave_amend"] == n
