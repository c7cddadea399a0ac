"""Named spans (sdcs_bench/core/timing.py): with SPECSNAP_SPANS naming a file, each process appends
one JSON line of its spans' exclusive times and counts at exit; without it, spans only run their
block. (The module reads SPECSNAP_SPANS when imported: every case runs in a process of its own.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

OUTER_S, INNER_S = 0.25, 0.4  # each span's own sleep
SLACK_S = 0.15  # a loaded machine wakes a sleeper late; far less than either sleep, so no sum passes


def _python(code: str, tmp: Path, spans: Path | None, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SPECSNAP_SPANS"}
    if spans is not None:
        env["SPECSNAP_SPANS"] = str(spans)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def _lines(spans: Path) -> list[dict]:
    return [json.loads(line) for line in spans.read_text().splitlines()]


NESTED = f"""
    import time
    from sdcs_bench.core.timing import span, timed

    @timed("decorated")
    def work(x, *, y):
        time.sleep(0.05)
        return x + y

    with span("outer"):
        time.sleep({OUTER_S})
        with span("inner"):
            time.sleep({INNER_S} / 2)
        with span("inner"):
            time.sleep({INNER_S} / 2)
    assert work(1, y=2) == 3 and work(2, y=3) == 5 and work.__name__ == "work"
    with span("alone"):
        pass
    print("ran")
"""


def test_nested_spans_record_exclusive_times_and_counts(tmp_path):
    spans = tmp_path / "spans.jsonl"
    proc = _python(NESTED, tmp_path, spans, "score", "--trial", "t.json")
    assert proc.stdout == "ran\n"
    (line,) = _lines(spans)
    assert line["argv"] == ["score", "--trial", "t.json"]
    assert line["counts"] == {"outer": 1, "inner": 2, "decorated": 2, "alone": 1}
    times = line["spans"]
    assert set(times) == {"outer", "inner", "decorated", "alone"}
    # the outer span's own sleep only, not its own plus the inner spans'
    assert OUTER_S - 0.01 <= times["outer"] < OUTER_S + SLACK_S, times
    assert INNER_S - 0.01 <= times["inner"] < INNER_S + SLACK_S, times
    assert 0.1 - 0.01 <= times["decorated"] < 0.1 + SLACK_S, times
    assert 0 <= times["alone"] < 0.05


def test_exclusive_times_add_up_to_the_time_spent_in_any_span(tmp_path):
    """A span inside one of the same name, and an exception leaving a span: still each second once."""
    spans = tmp_path / "spans.jsonl"
    proc = _python("""
        import time
        from sdcs_bench.core.timing import span

        t0 = time.perf_counter()
        with span("a"):
            time.sleep(0.1)
            with span("a"):
                time.sleep(0.1)
            try:
                with span("b"):
                    time.sleep(0.1)
                    raise KeyError("out")
            except KeyError:
                pass
            with span("c"):
                with span("a"):
                    time.sleep(0.1)
        print(time.perf_counter() - t0)
    """, tmp_path, spans)
    wall = float(proc.stdout)
    (line,) = _lines(spans)
    assert line["counts"] == {"a": 3, "b": 1, "c": 1}
    times = line["spans"]
    assert sum(times.values()) == pytest.approx(wall, abs=0.02)
    assert 0.3 - 0.01 <= times["a"] < 0.3 + SLACK_S and 0.1 - 0.01 <= times["b"] < 0.1 + SLACK_S, times
    assert 0 <= times["c"] < 0.05, times  # (its only time was inside "a")


def test_an_error_inside_a_span_still_propagates(tmp_path):
    spans = tmp_path / "spans.jsonl"
    env = {**os.environ, "SPECSNAP_SPANS": str(spans)}
    proc = subprocess.run([sys.executable, "-c", "from sdcs_bench.core.timing import span\n"
                           "with span('failing'):\n    raise SystemExit(7)\n"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 7
    (line,) = _lines(spans)
    assert line["counts"] == {"failing": 1}


def test_two_processes_append_a_line_each_to_the_same_file(tmp_path):
    spans = tmp_path / "spans.jsonl"
    code = """
        import sys, time
        from sdcs_bench.core.timing import span
        with span(sys.argv[1]):
            time.sleep(0.05)
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), name], cwd=tmp_path,
                              env={**os.environ, "SPECSNAP_SPANS": str(spans)}) for name in ("first", "second")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    lines = _lines(spans)
    assert len(lines) == 2
    assert sorted(line["argv"][0] for line in lines) == ["first", "second"]
    for line in lines:
        assert list(line["spans"]) == line["argv"] and line["counts"] == {line["argv"][0]: 1}
    _python(code, tmp_path, spans, "third")  # (appended: the earlier lines stay)
    assert [line["argv"] for line in _lines(spans)][:2] == [line["argv"] for line in lines]
    assert len(_lines(spans)) == 3


@pytest.mark.parametrize("setting", [None, ""])
def test_without_a_spans_file_nothing_is_written_and_the_block_still_runs(tmp_path, setting):
    env = {k: v for k, v in os.environ.items() if k != "SPECSNAP_SPANS"}
    if setting is not None:
        env["SPECSNAP_SPANS"] = setting
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(NESTED)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ran\n"
    assert list(tmp_path.iterdir()) == []


def test_a_process_that_opened_no_span_writes_nothing(tmp_path):
    spans = tmp_path / "spans.jsonl"
    _python("import sdcs_bench.core.timing\nprint('imported')", tmp_path, spans)
    assert not spans.exists()


# -- the layers of a real trial (bench/trial_breakdown.py reads these) -------------------------------
LAYERS = {
    "scaffold-sandbox": {"imports", "workload load", "scaffold files", "git (host processes)", "snapshot write",
                         "record writing", "stage, other"},
    "run-session": {"imports", "workload load", "snapshot restore", "leak check", "guard", "cleave bookkeeping",
                    "cleave watcher", "agent process", "process cleanup", "session instruments", "redaction",
                    "snapshot write", "record writing", "stage, other"},
    "score": {"imports", "workload load", "snapshot restore", "scoring copy", "sentinel planting", "test tree digest",
              "pytest (sandboxed)", "verdict stream", "boundary check", "closed form", "record writing",
              "stage, other"},
}


def test_a_reference_trials_stages_record_every_layer_the_breakdown_names(tmp_path):
    """The stages of one two-session reference trial, run as the rules run them (through the
    ``specsnap`` program's entry), each leave one line naming every layer it passed through."""
    from conftest import ROOT, two_session_jobs

    env = {**os.environ, "SPECSNAP_ROOT": str(ROOT), "SPECSNAP_WORK_ROOT": str(tmp_path / "work")}
    env.pop("SPECSNAP_SPANS", None)
    results = tmp_path / "results"
    subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--study", "smoke", "--results", str(results)],
                   env=env, cwd=ROOT, check=True, capture_output=True)
    trial = "tier_2__Vanilla__ref_compressed_notes__none__s0"
    plan, out = results / "smoke" / "plan" / "trials" / f"{trial}.json", results / "smoke" / "trials" / trial
    spans = tmp_path / "spans.jsonl"
    entry = [sys.executable, "-m", "sdcs_bench.entry"]
    jobs = two_session_jobs(plan, out)
    for job in jobs:
        proc = subprocess.run([*entry, *job], env={**env, "SPECSNAP_SPANS": str(spans)}, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _lines(spans)
    assert [line["argv"][0] for line in lines] == [job[0] for job in jobs]  # one line per stage process
    for line in lines:
        missing = LAYERS[line["argv"][0]] - set(line["spans"])
        assert not missing, (line["argv"][0], missing)
        assert all(v >= 0 for v in line["spans"].values())
    # the stage's own record says the same trial ran: the scorecard's closed form held
    card = json.loads((out / "score" / "scorecard.json").read_text())
    assert card["valid"] and card["expected"] is not None
