"""The typed components (sdcs_bench.trial.components): checked against the user-facing JSON schema of a
trial file, built from every shipped config, carried typed by the trial."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from conftest import ROOT

from sdcs_bench.agents.stochastic import DRAWS
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.pipeline.plan.compat import CAPABILITIES
from sdcs_bench.pipeline.plan.planner import make_plan
from sdcs_bench.trial import config, policy_rules
from sdcs_bench.trial.components import (
    MODEL_KIND, REFERENCE_KIND, REPLAY_KIND, AgentConfig, Injection, Keep, Policy, StudyConfig, VariantConfig)
from sdcs_bench.trial.schedule import TRANSFORMS
from sdcs_bench.trial.spec import TrialSpec

SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "trial.schema.yaml").read_text())
AGENT = SCHEMA["properties"]["agent"]
POLICY = AGENT["properties"]["policy"]
VARIANT = SCHEMA["properties"]["variant"]


def fields(model) -> set[str]:
    return {f.name for f in dataclasses.fields(model)} - {"raw"}


def test_each_model_has_exactly_the_keys_the_schema_states():
    assert fields(AgentConfig) == set(AGENT["properties"])
    assert fields(Policy) == set(POLICY["properties"])
    assert fields(Keep) == set(POLICY["properties"]["keep"]["properties"])
    assert fields(VariantConfig) == set(VARIANT["properties"])
    assert fields(Injection) == set(VARIANT["properties"]["inject"]["properties"])
    # what the schema requires of a trial's agent, the model has no default for
    required = {f.name for f in dataclasses.fields(AgentConfig)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert required == set(AGENT["required"])


def test_the_schemas_choices_are_the_codes_own():
    assert set(POLICY["properties"]["notes"]["enum"]) == {*policy_rules.NOTE_STYLES, "facts"}
    assert set(POLICY["properties"]["knows_sprint"]["enum"]) == {*policy_rules.KNOWS_SPRINT, "from_prompt"}
    assert set(POLICY["properties"]["standards"]["enum"]) == set(policy_rules.STANDARDS_MODES)
    assert set(POLICY["properties"]["keep"]["properties"]["draws"]["enum"]) == set(DRAWS)
    assert set(VARIANT["properties"]["schedule"]["enum"]) == set(TRANSFORMS)
    assert Policy().knows_sprint == "from_prompt" and Keep(0.5).draws == DRAWS[0]


@pytest.mark.parametrize("name", config.options("agent"))
def test_every_shipped_agent_builds_and_keeps_its_mapping(name):
    cfg = config.entity("agent", name)
    agent = AgentConfig.from_dict(cfg)
    assert agent.to_dict() == cfg and AgentConfig.of(agent) is agent
    assert agent.name == name and agent.harness == cfg["harness"] and agent.model == cfg.get("model")
    assert agent.kind == (REFERENCE_KIND if cfg["reference"] else REPLAY_KIND if cfg["proxy"] == "replay" else MODEL_KIND)
    assert agent.api == (cfg["provider"] if agent.kind == MODEL_KIND else "none")
    policy = cfg.get("policy") or {}
    assert agent.policy.notes == policy.get("notes", "none") and agent.policy.acts == policy.get("acts", True)
    assert (agent.policy.keep is not None) == bool(policy.get("keep"))
    assert (CAPABILITIES in cfg) == agent.reference  # (read by planning only: not a field of the model)


@pytest.mark.parametrize("name", config.options("variant"))
def test_every_shipped_variant_builds(name):
    cfg = config.entity("variant", name)
    variant = VariantConfig.from_dict(cfg)
    assert variant.name == name and variant.to_dict() == cfg
    inject = cfg.get("inject") or {}
    assert (variant.inject is None) == (not inject)
    if inject:
        assert variant.inject.after_session == inject.get("after_session", 1)
        assert variant.inject.poison == inject.get("poison")
    withholding = variant.withholding
    assert (withholding is not None) == bool(cfg.get("withhold") or inject.get("withhold"))
    if cfg.get("withhold"):
        assert withholding == (cfg["withhold"], None)


@pytest.mark.parametrize("name", config.options("study"))
def test_every_shipped_study_builds(name):
    study = StudyConfig.from_dict(config.entity("study", name))
    assert study.name == name and study.grid and study.description


def test_a_component_missing_a_key_is_one_clear_error():
    with pytest.raises(SpecSnapError, match="agent 'x' lacks 'harness'.*rerun `specsnap plan`"):
        AgentConfig.from_dict({"name": "x"})
    with pytest.raises(SpecSnapError, match="a variant lacks 'name'"):
        VariantConfig.from_dict({"schedule": "single_session"})
    with pytest.raises(SpecSnapError, match="study 's': grid must be a mapping"):
        StudyConfig.from_dict({"name": "s", "grid": ["tier_1"]})


def test_a_trial_carries_its_components_typed_and_its_file_keeps_the_mappings(tmp_path):
    plan = make_plan("smoke", ["successor=[ref_oracle]", "variant=[poison_v1]", "agent=[ref_amnesiac]", "seed=[0]",
                               "arm=[Vanilla]"], results=tmp_path, keys=False)
    raw = plan.trials[0]
    trial = TrialSpec.from_dict(json.loads(json.dumps(raw)), run_dir=tmp_path / plan.run)
    assert isinstance(trial.agent, AgentConfig) and isinstance(trial.successor, AgentConfig)
    assert isinstance(trial.variant, VariantConfig)
    assert trial.agent.to_dict() == raw["agent"] and trial.successor.to_dict() == raw["successor"]
    assert trial.agent_for(1) is trial.agent and trial.agent_for(2) is trial.successor
    assert trial.labels()["successor"]["name"] == raw["successor"]["name"]
    assert trial.variant.to_dict() == raw["variant"] and trial.injection == Injection(1, "v1", None)
