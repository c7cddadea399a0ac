"""The estimator enumeration (`specsnap enumerate-estimators`): the counts it prints, the per-k
breakdown, the prediction checked on every run, mutant estimators that the check must catch, and
bad ranges refused before any work."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from conftest import specsnap
from typer.testing import CliRunner

from sdcs_bench.cli import app
from sdcs_bench.coherence import enumeration as en
from sdcs_bench.coherence.enumeration import EVENT_TYPES, Event, State

K_RANGE = range(2, 7)


def _row(stdout: str, label: str) -> list[str]:
    """The cells after ``label`` on its row of a printed table."""
    for line in stdout.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line) if c.strip()]
        if cells and cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no row {label!r} in:\n{stdout}")


def test_the_command_prints_the_counts():
    result = specsnap("enumerate-estimators")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # this run's figure, then the paper's beside it
    assert _row(out, "runs") == ["1,089", "1,089"]
    assert _row(out, "fully covered") == ["124", "124"]
    assert _row(out, "event-only false alarms among them") == ["119", "119"]
    assert _row(out, "all-read runs") == ["5", "5"]
    assert _row(out, "event-only overstatement = prior-covered set") == ["1,089", "1,089"]
    assert "published" in out and "no agent" in out
    assert "held on every one of the 1,089 runs" in out and "FAIL" not in out


def test_json_summary_and_the_published_figures_beside_it():
    result = specsnap("enumerate-estimators", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["runs"], summary["fully_covered"], summary["event_only_false_alarms"], summary["all_read"]) \
        == (1089, 124, 119, 5)
    assert summary["all_read_estimators_agree"] == 5
    assert summary["union_aware_exact"] == summary["overstatement_equals_parametric"] == 1089
    assert summary["overstatement_mean"] == 1.84 and summary["overstatement_max"] == 6
    assert summary["proposition_holds"] is True and summary["violations"] == []
    published = summary["published"]
    assert published["label"].startswith("published") and "not produced by this run" in published["label"]
    for key in ("runs", "fully_covered", "event_only_false_alarms", "all_read", "union_aware_exact",
                "overstatement_equals_parametric", "overstatement_mean", "overstatement_max"):
        assert summary[key] == published[key], key


def test_per_k_breakdown():
    summary = json.loads(specsnap("enumerate-estimators", "--json").stdout)
    assert [row["k"] for row in summary["per_k"]] == list(K_RANGE)
    for row in summary["per_k"]:
        k = row["k"]
        # 3^k assignments; 2^k without an uncovered fact; of those, all but the all-read one alarm
        assert row["runs"] == 3 ** k
        assert row["fully_covered"] == 2 ** k
        assert row["event_only_false_alarms"] == 2 ** k - 1
        assert row["all_read"] == 1
        assert row["overstatement_max"] == k
        assert row["overstatement_mean"] == round(k / 3, 2)  # each fact is prior-covered in a third of runs


def test_another_range_has_no_published_column():
    result = specsnap("enumerate-estimators", "--k-min", "1", "--k-max", "3", "--json")
    summary = json.loads(result.stdout)
    assert result.returncode == 0 and summary["runs"] == 3 + 9 + 27 and "published" not in summary
    assert "published" not in specsnap("enumerate-estimators", "--k-min", "1", "--k-max", "3").stdout


def test_the_prediction_holds_on_every_run():
    runs = en.enumerate_runs(2, 6)
    expected = [a for k in K_RANGE for a in itertools.product(("read", "prior", "uncovered"), repeat=k)]
    assert [tuple(s.value for s in run.trace.assignment) for run in runs] == expected  # every assignment, once
    for run, assignment in zip(runs, expected):
        facts = {name: {f"F{i + 1}" for i, s in enumerate(assignment) if s == name} for name in ("read", "prior",
                                                                                                  "uncovered")}
        assert not run.problems, (run.name, run.problems)
        assert run.union_missing == facts["uncovered"]
        assert run.event_missing == facts["uncovered"] | facts["prior"]
        assert run.event_missing - run.union_missing == facts["prior"]
        assert run.oracle_passed == (not facts["uncovered"])
        types = [e.type for e in run.trace.events]
        assert set(types) <= set(EVENT_TYPES)
        # the prior leaves nothing in the stream: one read and one extraction per read fact only
        assert types.count("file_read") == types.count("fact_extracted") == len(facts["read"])
        if run.oracle_passed:
            assert "revert" not in types
        else:  # a failed edit is reverted: with a read fact, the trace carries all five event types
            assert set(types) == {"edit_intent", "test_feedback", "revert"} | (
                {"file_read", "fact_extracted"} if facts["read"] else set())
        if facts["prior"] == set(run.trace.facts):  # fully prior-covered: a passing edit, every fact "missing"
            assert run.oracle_passed and run.event_missing == set(run.trace.facts) and run.false_alarm


def test_a_claimed_reliance_is_not_coverage():
    """The edit_intent lists the facts the agent says it relied on, prior ones included. That is
    the agent's own claim: an estimator that believed it would see the prior in the events."""
    trace = en.build_trace([State.READ, State.PRIOR, State.UNCOVERED])
    _, intent = trace.edit()
    assert set(intent.data["relied_on"]) == {"F1", "F2"}
    assert en.event_only(trace) == {"F2", "F3"}

    def believes_claims(t):
        index, edit = t.edit()
        return t.required() - en.resident(t.events[:index]) - set(edit.data["relied_on"])

    assert en.check_run(trace, event=believes_claims).problems


def test_a_read_without_extraction_and_a_stale_extraction_are_not_resident():
    read_only = [Event("file_read", {"path": "facts/f1.py", "version": 1, "bytes": [0, 64]})]
    assert en.resident(read_only) == frozenset()
    extracted = read_only + [Event("fact_extracted", {"fact": "F1", "value": 100, "source": "facts/f1.py",
                                                      "version": 1, "mode": "read"})]
    assert en.resident(extracted) == {"F1"}
    changed = extracted + [Event("file_read", {"path": "facts/f1.py", "version": 2, "bytes": [0, 64]})]
    assert en.resident(changed) == frozenset()


def _ignores_prior(trace):
    index, _ = trace.edit()
    return trace.required() - en.resident(trace.events[:index])


def test_the_check_catches_an_estimator_that_ignores_the_prior():
    runs = en.enumerate_runs(2, 6, union=_ignores_prior)
    broken = {run.name for run in runs if run.problems}
    with_prior = {run.name for run in runs if run.trace.facts_in(State.PRIOR)}
    assert broken == with_prior and len(broken) == 1089 - 2 ** 2 - 2 ** 3 - 2 ** 4 - 2 ** 5 - 2 ** 6
    summary = en.summarise(runs, 2, 6)
    assert summary["proposition_holds"] is False and summary["union_aware_exact"] == 124


def test_the_command_fails_when_an_estimator_is_broken(monkeypatch):
    monkeypatch.setattr(en, "union_aware", _ignores_prior)
    result = CliRunner().invoke(app, ["enumerate-estimators"])
    assert result.exit_code == 1
    assert "FAIL k=2 RP: union-aware estimator reports {F2} missing, the uncovered facts are {}" in result.output
    assert "prediction failed" in result.output and "held on every" not in result.output
    result = CliRunner().invoke(app, ["enumerate-estimators", "--json"])
    summary = json.loads(result.output)
    assert result.exit_code == 1 and summary["proposition_holds"] is False and len(summary["violations"]) > 965


def test_the_check_catches_a_wrong_oracle():
    trace = en.build_trace([State.READ, State.UNCOVERED])
    feedback = next(e for e in trace.events if e.type == "test_feedback")
    lying = en.Trace(trace.assignment, tuple(e if e is not feedback else Event("test_feedback", {**feedback.data,
                                                                                                 "passed": True})
                                             for e in trace.events), trace.prior, trace.truth)
    assert en.check_run(lying).problems == ("the test passed with uncovered facts {F2}",)


@pytest.mark.parametrize("args,message", [
    (["--k-min", "0"], "--k-min 0 is out of range: k runs from 1 to 10"),
    (["--k-max", "11"], "--k-max 11 is out of range: k runs from 1 to 10"),
    (["--k-min", "-3", "--k-max", "2"], "--k-min -3 is out of range: k runs from 1 to 10"),
    (["--k-min", "5", "--k-max", "3"], "--k-min 5 is greater than --k-max 3: give 1 <= k-min <= k-max <= 10"),
])
def test_bad_range_is_one_line_before_any_work(args, message):
    result = specsnap("enumerate-estimators", *args, "--json")
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_an_unknown_event_type_is_refused():
    with pytest.raises(en.SpecSnapError, match="unknown event type 'file_write'; valid choices: edit_intent, "
                                               "fact_extracted, file_read, revert, test_feedback"):
        Event("file_write", {})
