"""The reference policies' decision rules (sdcs_bench.trial.policy_rules): one home, used by the policy
in its sandbox and by its closed form."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from sdcs_bench.agents import expectations, reference_policy
from sdcs_bench.agents.reference import FACT_POLICY_SCRIPT, POLICY_CHANNEL, POLICY_RULES, POLICY_SCRIPT
from sdcs_bench.trial import policy_rules as rules
from sdcs_bench.trial.policy_rules import Req

R1 = Req("R1", "Add a --dry-run flag\nthat prints the plan.", "dry-run flag", None)
R2 = Req("R2", "Sort the report by date.", "sorted report", "Sort the report by date, newest first.")
R10 = Req("R10", "Cache the index.", "cached index", None)


def test_learning_reads_the_conversation_then_the_notes_and_says_where():
    known, where, amended = rules.learn([R1, R2, R10], "Please:  Add a --dry-run   flag that prints\nthe plan.",
                                        "# notes\n- R2: sorted report\n", oracle=False)
    assert known == {"R1": "full", "R2": "summary"} and where == {"R1": "prompt", "R2": "notes"}
    assert amended == set()
    known, where, amended = rules.learn([R2], "go on", R2.text + "\n" + R2.amendment, oracle=False)
    assert known == {"R2": "full"} and where == {"R2": "notes"} and amended == {"R2"}
    # a summary line a continuation carried into the prompt; and no notes file at all
    assert rules.learn([R10], "Earlier: - R10: cached index", None, oracle=False)[:2] == ({"R10": "summary"},
                                                                                        {"R10": "prompt"})
    # the oracle knows everything from its briefing; without a notes file, a summary in "notes" is not read
    assert rules.learn([R1, R2], "", None, oracle=True) == ({"R1": "full", "R2": "full"},
                                                          {"R1": "briefing", "R2": "briefing"}, {"R2"})


def test_a_hint_counts_where_its_text_is_read_and_the_first_place_wins():
    hints = [("Look at the  date parser.", ["B1", "B2"]), ("The cache is stale.", ["B2", "B3"])]
    assert rules.hinted(hints, ["nothing", "x The cache is\nstale. y", "Look at the date parser."]) == {
        "B1": 2, "B2": 2, "B3": 1}
    assert rules.hinted(hints, []) == {}


@pytest.mark.parametrize("known, superseded, amendment, form", [
    ("summary", True, True, "summary"), ("full", True, False, "superseded"), ("full", True, True, "gold"),
    ("full", False, False, "gold")])
def test_the_patch_form_follows_what_is_known(known, superseded, amendment, form):
    assert rules.patch_form(known, has_superseded=superseded, amendment_known=amendment) == form


@pytest.mark.parametrize("current, target, step", [
    ("gold", "gold", "done"), (None, "gold", "write"), ("superseded", "gold", "in_place"),
    ("summary", "gold", "skip"), ("superseded", "summary", "skip"), ("other", "gold", "skip")])
def test_the_next_step_writes_amends_in_place_or_skips_a_conflict(current, target, step):
    assert rules.next_step(current, target) == step


def test_each_note_style_writes_what_it_says():
    head = "# state.md\n\n## Requirements\n"
    known = {"R1": "full", "R2": "full"}
    text, written, n = rules.take_notes("compressed", head, [R1, R2], known, set(), "")
    assert written == ["- R1: dry-run flag", "- R2: sorted report"] and n == 2 and text.endswith("- R2: sorted report\n")
    assert rules.take_notes("compressed", text, [R1, R2], known, set(), "") == (text, [], 0)  # nothing new
    text, written, n = rules.take_notes("amend", head + "\n" + R2.text + "\n\nother\n", [R2], {"R2": "full"}, {"R2"}, "")
    assert written == [R2.amendment] and text.index(R2.amendment) < text.index("other")  # right under it
    text, written, n = rules.take_notes("verbatim", head + "\n" + R2.text + "\n\nother\n", [R2], {"R2": "full"}, {"R2"}, "")
    assert text.rstrip().endswith(R2.amendment)  # appended
    text, written, n = rules.take_notes("overwrite", head + "old entries\n", [R1, R2], known, set(), "Do: " + R2.text)
    assert text == "# state.md\n\n" + R2.text + "\n" and written == [R2.text] and n == 1
    assert rules.take_notes("overwrite", text, [R1, R2], known, set(), "nothing asked") == (text, [], 0)
    assert rules.take_notes("none", head, [R1], known, set(), R1.text) == (head, [], 0)


@pytest.mark.parametrize("mode, stated, code, chosen", [
    ("follow_standard", "worse", "better", ("worse", "standard")), ("follow_standard", None, "worse", ("worse", "code")),
    ("follow_code", "better", "worse", ("worse", "code")), ("follow_code", None, None, ("better", "own")),
    ("gold", "worse", "worse", ("better", "own"))])
def test_a_standards_policy_chooses_its_form_by_its_source(mode, stated, code, chosen):
    assert rules.choose_form(mode, stated, code) == chosen


def test_the_policy_and_its_closed_form_take_their_rules_from_this_one_module():
    """Neither side keeps a copy: no normaliser, summary line or note style of its own."""
    for module in (reference_policy, expectations):
        tree = ast.parse(Path(module.__file__).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert not defined & {"_norm", "norm", "summary_line", "_notes_after", "target"}, module.__name__
    assert reference_policy.rules.__file__ == str(POLICY_RULES)


@pytest.mark.parametrize("script", [POLICY_SCRIPT, FACT_POLICY_SCRIPT], ids=["gold-patch", "fact-driven"])
def test_the_policy_runs_with_only_the_files_its_invocation_binds(tmp_path, script):
    """In the sandbox a policy has its own file and what its invocation binds beside it (the rules
    file, the channel to the controller), at their paths: copied alone into a fresh tree with that
    layout, it loads them and acts (here: an idle policy)."""
    agents, trial = tmp_path / "pkg" / "agents", tmp_path / "pkg" / "trial"
    agents.mkdir(parents=True)
    trial.mkdir()
    bound = {POLICY_SCRIPT: [POLICY_SCRIPT, POLICY_RULES, POLICY_CHANNEL],
             FACT_POLICY_SCRIPT: [FACT_POLICY_SCRIPT, POLICY_CHANNEL]}[script]
    for path in bound:
        (tmp_path / "pkg" / path.parent.name / path.name).write_bytes(path.read_bytes())
    if script is FACT_POLICY_SCRIPT:
        briefing = '{"params": {"acts": false}, "prompt": "", "facts": []}'
        proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(agents / script.name)], input=briefing,
                              capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0 and '"action": "idle"' in proc.stdout, proc.stderr
        return
    briefing = '{"params": {"acts": false}, "prompt": "", "skills": []}'
    proc = subprocess.run([sys.executable, "-I", "-B", str(agents / POLICY_SCRIPT.name)], input=briefing,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"action": "idle"' in proc.stdout
    (trial / POLICY_RULES.name).unlink()
    proc = subprocess.run([sys.executable, "-I", "-B", str(agents / POLICY_SCRIPT.name)], input=briefing,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0 and "policy_rules.py" in proc.stderr
