"""One grid: what `specsnap list studies` shows is what the planner makes, and what a policy can be
planned into is declared on the policy (its ``capabilities:``), never inferred by the planner."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT, specsnap

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.pipeline.plan.compat import Capabilities, check_handoff
from sdcs_bench.pipeline.plan.grid import grid_size, study_grid
from sdcs_bench.pipeline.plan.overrides import split_overrides
from sdcs_bench.pipeline.plan.planner import make_plan
from sdcs_bench.trial import config

STUDIES = sorted(p.stem for p in (ROOT / "conf" / "study").glob("*.yaml"))


@pytest.fixture(scope="module")
def listed() -> dict[str, int]:
    """The trials column of `specsnap list studies`."""
    out = specsnap("list", "studies", env={"COLUMNS": "400"}).stdout
    rows = [[c.strip() for c in line.strip().strip("│").split("│")] for line in out.splitlines() if line.startswith("│ ")]
    return {row[0]: int(row[1]) for row in rows if row[0]}


@pytest.mark.parametrize("study", STUDIES)
def test_every_shipped_study_lists_as_many_trials_as_it_plans(study, listed, tmp_path):
    planned = make_plan(study, [], tmp_path, keys=False).trials
    assert listed[study] == len(planned), f"specsnap list studies shows {listed[study]}, the planner makes {len(planned)}"


@pytest.mark.parametrize("overrides", [
    ["successor=[same,ref_null]"],  # a successor equal to the agent is no handoff: made once
    ["workload=[tier_2]", "agent=[ref_amnesiac]", "variant=[none,uninterrupted]",
     "continuation=[reset,summary,trace:1000]"],  # a one-session control continues nothing: made once
])
def test_the_folds_of_the_grid_are_counted_as_the_planner_makes_them(overrides, tmp_path):
    grid, _ = split_overrides(overrides)
    study = "smoke" if overrides[0].startswith("successor") else "continuity"
    planned = make_plan(study, overrides, tmp_path, keys=False).trials
    product = math.prod(len(values) for values in study_grid(config.entity("study", study)["grid"], grid).values())
    assert grid_size(config.entity("study", study)["grid"], grid) == len(planned) < product
    assert len({t["trial_id"] for t in planned}) == len(planned)


def test_every_reference_policy_declares_its_capabilities_and_no_trial_carries_them(tmp_path):
    references = [a for a in config.options("agent") if config.entity("agent", a).get("reference")]
    assert references and all(isinstance(Capabilities.of(config.entity("agent", a)), Capabilities) for a in references)
    plan = make_plan("smoke", [], tmp_path, keys=False)
    assert all("capabilities" not in t["agent"] for t in plan.trials)
    assert all("capabilities" not in a for a in plan.agents.values())


def test_the_declarations_match_what_the_policies_do():
    """A policy that works from its own state (facts found: ``on_missing_fact``; a task queue:
    ``standards``) keeps no meter and runs alone; one that does nothing fits anywhere."""
    for name in config.options("agent"):
        cfg = config.entity("agent", name)
        if not cfg.get("reference"):
            assert Capabilities.of(cfg) == Capabilities(), name  # a real agent: planned into anything
            continue
        policy, caps = cfg["policy"], Capabilities.of(cfg)
        own_state = bool(policy["acts"] and (policy.get("on_missing_fact") or policy.get("standards")))
        assert (caps.runs_alone, caps.meters) == (own_state, not own_state), name
        expected = "any" if not policy["acts"] else "with_facts" if policy.get("on_missing_fact") else "without_facts"
        assert caps.workloads == expected, name


@pytest.mark.parametrize("block,message", [
    (None, "declares what it can be planned into"),
    ({"meters": True, "runs_alone": False}, "exactly meters, runs_alone, workloads"),
    ({"meters": "yes", "runs_alone": False, "workloads": "any"}, "meters is true or false"),
    ({"meters": True, "runs_alone": False, "workloads": "tiers"}, "workloads is one of"),
])
def test_a_reference_policy_without_a_valid_declaration_is_one_clear_error(block, message):
    cfg = {k: v for k, v in config.entity("agent", "ref_oracle").items() if k != "capabilities"}
    if block is not None:
        cfg["capabilities"] = block
    with pytest.raises(SpecSnapError, match=message):
        Capabilities.of(cfg)


def test_a_policy_that_runs_alone_is_never_handed_off_whatever_was_planned_before_it(tmp_path):
    """The handoff check is made for every pair of agents, not once per successor and workload."""
    alone = config.entity("agent", "ref_follow_standard")
    with pytest.raises(SpecSnapError, match="runs a whole trial alone"):
        check_handoff(alone, config.entity("agent", "ref_amnesiac"), None)
    with pytest.raises(SpecSnapError, match="'ref_follow_standard' runs a whole trial alone"):
        make_plan("coherence_standards", ["agent=[ref_null,ref_follow_standard]", "successor=[ref_amnesiac]"],
                  tmp_path, keys=False)


@pytest.mark.parametrize("overrides", [
    ["variant=[uninterrupted]", "successor=[ref_null]"],
    ["variant=[none,uninterrupted]", "successor=[same,ref_oracle]"],  # refused whole: not folded, not skipped
])
def test_a_successor_with_a_one_session_variant_is_refused_naming_the_variant(overrides, tmp_path):
    """A handoff needs two sessions: a one-session variant (the uninterrupted control) would run the
    first agent alone under a pair's label."""
    with pytest.raises(SpecSnapError) as info:
        make_plan("smoke", ["agent=[ref_amnesiac]", "arm=[Vanilla]", *overrides], tmp_path / "results", keys=False)
    message = str(info.value)
    assert "variant 'uninterrupted'" in message and "a handoff needs two sessions" in message, message
    assert "\n" not in message and not (tmp_path / "results").exists()


def test_the_uninterrupted_control_of_a_share_cut_is_still_planned_under_a_handoff(tmp_path):
    """The exception: a share cut measures against the uninterrupted run, which the grid then needs."""
    plan = make_plan("smoke", ["agent=[ref_amnesiac]", "arm=[Vanilla]", "seed=[0]", "successor=[ref_oracle]",
                               "variant=[uninterrupted,cut_share_50]"], tmp_path / "results", keys=False)
    assert len(plan.trials) == 2
