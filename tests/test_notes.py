"""Notes size in tokens of a real tokenizer (o200k_base), against the arm's cap."""

from __future__ import annotations

from sdcs_bench.scoring.notes import count_tokens, notes_size


def test_o200k_counts_like_tiktoken():
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # special tokens in notes are plain text


def test_cap_and_whether_it_was_exceeded(tmp_path):
    (tmp_path / "state.md").write_text(" ".join(["word"] * 600))
    size = notes_size(tmp_path, "state.md", 500)
    assert size["tokenizer"] == "o200k_base" and size["tokens"] == 600 and size["cap_exceeded"]
    assert not notes_size(tmp_path, "state.md", 1200)["cap_exceeded"]
    assert notes_size(tmp_path, None, 500) is None
    missing = notes_size(tmp_path, "gone.md", 500)
    assert missing["exists"] is False and missing["tokens"] == 0


def test_a_notes_policy_keeps_its_notes_in_the_arm_s_notes_file_whatever_its_name(tmp_path):
    """The arm is the one source of its notes file's name: under an arm whose notes file is
    ``plan.md``, the verbatim note-taker writes the sprint into plan.md (no state.md appears), the
    continuation works from it, and the closed form, which follows the arm too, agrees."""
    import warnings

    from sdcs_bench.agents.expectations import expected_reference_score
    from sdcs_bench.core.tokens import TokenUsage
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.scaffold import scaffold
    from sdcs_bench.scoring import score_sandbox
    from sdcs_bench.session.runner import run_session
    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm
    from sdcs_bench.trial.schedule import effective_schedule
    from sdcs_bench.trial.workload import load_workload

    arm = Arm.from_config({
        "name": "Plan_MD", "description": "notes in plan.md", "notes_file": "plan.md", "notes_cap_tokens": 2000,
        "files": [{"path": "AGENTS.md", "text": "# Agents\n\nKeep the requirements in `plan.md`.\n"},
                  {"path": "plan.md", "text": "# plan.md\n\n## Requirements\n"}]})
    workload = load_workload("tier_2")
    agent = config.entity("agent", "ref_verbatim_notes")
    variant = config.entity("variant", "none")
    sandbox = tmp_path / "sandbox"
    scaffold(workload, arm, sandbox)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backend = make_backend("auto")
        records = [run_session(trial_id="notes", index=i, session=spec, workload=workload, arm=arm, agent_cfg=agent,
                               workdir=sandbox, stage_dir=tmp_path / f"s{i}", backend=backend, timeout_s=300)
                   for i, spec in enumerate(effective_schedule(workload, variant), start=1)]
        card = score_sandbox(workload, sandbox, tokens=TokenUsage(source="none"), backend=backend, arm=arm,
                             sessions=records)
    plan = (sandbox / "plan.md").read_text()
    assert all(r.text.strip().splitlines()[0] in plan for r in workload.requirements), plan
    assert not (sandbox / "state.md").exists()
    expected = expected_reference_score(workload, arm, agent, variant)
    assert (card["raw"], card["net"], card["requirements"]) == (expected["raw"], expected["net"], expected["requirements"])
    assert expected["net"] == len(workload.requirements)  # the notes carried the whole sprint across the reset
    assert card["diagnostics"]["notes"]["file"] == "plan.md" and card["diagnostics"]["notes"]["tokens"] > 0
