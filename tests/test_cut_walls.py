"""The cut sees every write, times it on SpecSnap's clock, and keeps its own resource use bounded.

Three attacks from a hostile-agent study, each run by a scripted agent under bwrap
(``hostile_support``), and the controller's own behaviour behind each defence:

- a first ``.py`` edit written through ``mmap`` by a process that keeps the file open raises no
  inotify event until the file is closed: no model call may be answered after it (the controller
  compares the qualifying files' content with what it last judged before every model call);
- an mtime the agent set (``touch -d``) must not reach ``write_to_exit_s`` (the controller times
  each qualifying write itself);
- thousands of directories must not make the runner hold one inotify watch each without a cap: the
  watch count stays at the cap, and the session ends as a limit (``by: "watcher limit"``).
"""

from __future__ import annotations

import mmap
import os
import subprocess
import threading
from pathlib import Path

import pytest
from hostile_support import MODEL_CALL, assert_held, backend_named, calls_made, run_calling, run_hostile

from sdcs_bench.core.gitutil import git, head
from sdcs_bench.proxy import read_ledger
from sdcs_bench.sandbox.bwrap import BwrapBackend
from sdcs_bench.sandbox.guard import exempt_patterns
from sdcs_bench.session import cleave
from sdcs_bench.session.cleave import CleaveController
from sdcs_bench.trial.workload_model import CleaveRule

EXEMPT = exempt_patterns(["tests/**"], [])
TARGET = "ledger/journal.py"  # a source file of tier_2's scaffold, edited in place

# A process that edits TARGET through a shared mapping (its first byte changed, the size kept: no
# write(2), no truncate, so no IN_MODIFY) and keeps the file open for 30 s; the script goes on
# once the edit is made.
MMAP_EDIT = ("python3 -c 'import mmap, time\n"
             f"f = open(\"{TARGET}\", \"r+b\")\n"
             "m = mmap.mmap(f.fileno(), 0)\n"
             "m[0:1] = b\"#\" if m[0:1] != b\"#\" else b\"\\n\"\n"
             "open(\".git/mmapped\", \"w\").close()\n"
             "time.sleep(30)' &\n"
             "while [ ! -e .git/mmapped ]; do sleep 0.05; done\n")


@pytest.fixture
def bwrap():
    if not BwrapBackend.available():
        pytest.skip("the attacks run under bwrap")
    return backend_named("bwrap")


def _generate_rows(stage: Path) -> list[dict]:
    return [r for r in read_ledger(stage / "ledger.jsonl") if r.get("kind") == "generate"]


# -- 1. an edit through mmap ------------------------------------------------------------------------
@pytest.mark.parametrize("rule", ["first_py_edit", "nth_py_edit:1"])
def test_no_model_call_is_answered_after_an_edit_written_through_mmap(tmp_path, bwrap, rule):
    """One call before the edit is answered; the edit is made through a mapping its writer keeps
    open; every call after it is refused, the cut fired at the first of them, and the record says
    the content check found the edit. The trial is valid and the edit stays uncommitted."""
    h = run_calling(tmp_path, f"{MODEL_CALL}\n{MMAP_EDIT}{MODEL_CALL}\n{MODEL_CALL}\nsleep 20\n", bwrap,
                    cleave=rule)
    rows = _generate_rows(tmp_path / "s1")
    record, cut = h.record, h.record["cleave"]
    assert cut["fired"] and cut["by"] == "watcher" and cut["path"] == TARGET, cut
    assert cut["edit_completed_by"] == "content check", cut
    # The call before the edit was answered, none after it (the cut killed the agent while the
    # first of them waited for its answer: it got a 403 or nothing).
    assert rows and not rows[0]["refused"] and all(r["refused"] for r in rows[1:]), rows
    assert record["model_calls"] == 1, rows
    statuses = calls_made(h)
    assert statuses[:1] == ["200"] and set(statuses[1:]) <= {"403"}, statuses
    assert "unjudged_questions" not in cut, cut
    assert cut["integrity"]["ok"] and cut["edit_uncommitted"], cut
    assert 0 < cut["write_to_exit_s"], cut
    assert_held(h)


# -- 2. an agent-chosen mtime -------------------------------------------------------------------------
@pytest.mark.parametrize("when", ["2001-01-01 00:00:00", "2099-01-01 00:00:00"], ids=["past", "future"])
def test_an_mtime_the_agent_set_never_reaches_the_records(tmp_path, bwrap, when):
    """The edit is written beside the tree, its mtime set far away, then renamed into place (the
    rename keeps the mtime and completes the write at once): the cut's latency is timed from when
    SpecSnap saw the write, so it stays small and positive."""
    script = (f"printf 'SNEAK = 1\\n' > .git/sneak.tmp && touch -d '{when}' .git/sneak.tmp && "
              "mv .git/sneak.tmp ledger/sneak.py && sleep 20")
    h = run_hostile(tmp_path, [script], bwrap)
    cut = h.record["cleave"]
    assert cut["fired"] and cut["path"] == "ledger/sneak.py" and cut["edit_completed_by"] == "moved", cut
    mtime = os.lstat(h.workdir / "ledger" / "sneak.py").st_mtime
    assert abs(mtime - h.record["started_at"]) > 3600 * 24 * 365, "the agent's mtime stayed on the file"
    assert 0 < cut["write_to_exit_s"] < 60, cut  # (within the session's timeout: never the agent's clock)
    assert_held(h)


# -- 3. thousands of directories ----------------------------------------------------------------------
def _inotify_watches() -> int:
    """The inotify watches this process holds now, from the kernel's own account (every inotify
    descriptor's ``inotify wd:`` lines): the controller runs in this process."""
    total = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                total += sum(1 for line in fh if line.startswith("inotify wd:"))
        except OSError:
            continue
    return total


class _WatchSampler:
    """The most inotify watches this process held while it ran (sampled as fast as it can)."""

    def __init__(self) -> None:
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, _inotify_watches())
            self.samples += 1

    def __enter__(self) -> _WatchSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_thousands_of_directories_end_the_session_at_the_watch_cap(tmp_path, bwrap):
    """5,000 directories made at once (more than the cap, 4,096 by default): the watcher never
    holds more than the cap, the cleave fires as a limit, the agent is killed and the session
    ends normally with the limit recorded."""
    base = _inotify_watches()  # (watchers this process still holds: none of this session's)
    script = ("python3 -c 'import os\n"
              "for i in range(5000):\n    os.makedirs(f\"ledger/many/d{i}\")' && sleep 30")
    with _WatchSampler() as sampler:
        h = run_hostile(tmp_path, [script], bwrap)
    cut = h.record["cleave"]
    peak = sampler.peak - base
    assert sampler.samples > 10
    assert cleave.MAX_WATCHES // 2 < peak <= cleave.MAX_WATCHES, peak  # (it grew to the cap, never past it)
    assert cut["fired"] and cut["by"] == "watcher limit" and cut["path"] is None, cut
    assert cut["limit"]["reason"] == "watches" and str(cleave.MAX_WATCHES) in cut["limit"]["detail"], cut
    assert h.record["status"] == "limit" and h.record["limit"]["reason"] == "watches", h.record["limit"]
    assert cut["stopped_by"] == "watcher kill"  # (killed at the limit, not at the end of its sleep)
    assert "write_to_exit_s" not in cut
    assert _inotify_watches() == base
    assert_held(h)


def test_the_watch_cap_holds_for_a_controller_and_sets_its_limit(make_sandbox):
    """The controller's side of the cap: past ``max_watches`` no watch is added, ``limit`` says why,
    the cleave fired as a limit, and every later model call is refused."""
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("nth_py_edit:3"), EXEMPT, max_watches=200)
    ctl.start()
    try:
        assert ctl.refusal() is None and ctl.limit is None
        for i in range(400):
            (repo / "ledger" / f"d{i}").mkdir()
        assert ctl.fired.wait(20)
        assert ctl.watch_count() <= 200
        assert ctl.refusal() == "cleaved"
    finally:
        ctl.stop()
    assert ctl.limit["reason"] == "watches" and "200" in ctl.limit["detail"], ctl.limit
    assert ctl.record["by"] == "watcher limit" and ctl.record["limit"] == ctl.limit
    assert not ctl.errors


def test_a_session_without_a_rule_only_stops_recording_at_the_cap(make_sandbox):
    """A continuation with no cut rule only records its writes: past the cap nothing is killed,
    the record says it is incomplete, and the watches stay capped."""
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("none"), EXEMPT, max_watches=100, record_writes={})
    ctl.start()
    try:
        for i in range(300):
            (repo / "ledger" / f"d{i}").mkdir()
        (repo / "ledger" / "d0" / "x.py").write_text("X = 1\n")
        ctl._wait_for_watcher()
        assert ctl.watch_count() <= 100
    finally:
        ctl.stop()
    assert not ctl.fired.is_set() and ctl.limit is None
    assert "watches" in ctl.written_record()["failed"]


# -- the content check, in the controller -------------------------------------------------------------
def _mmap_write(path: Path, data: bytes) -> tuple[object, mmap.mmap]:
    """Overwrite the start of ``path`` through a shared mapping and keep it open (no write(2))."""
    fh = open(path, "r+b")  # noqa: SIM115 - kept open on purpose
    m = mmap.mmap(fh.fileno(), 0)
    m[0:len(data)] = data
    return fh, m


def test_the_content_check_counts_an_mmap_edit_once_under_an_nth_rule(make_sandbox):
    """nth_py_edit:2: an edit through a mapping is counted at the next model call (once: its writer's
    close later is the same edit), a normal write after it is the second edit."""
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("nth_py_edit:2"), EXEMPT)
    ctl.start()
    try:
        assert ctl.refusal() is None
        fh, m = _mmap_write(repo / TARGET, b"#")
        assert ctl.refusal() is None and ctl.watched().edits[0][0] == TARGET
        assert TARGET in ctl.watched().seen
        m.close()
        fh.close()
        assert ctl.refusal() is None and len(ctl.watched().edits) == 1  # (the close: the same edit)
        (repo / "billing" / "fees.py").write_text("# the second edit\n")
        assert ctl.refusal() == "cleaved"
        assert ctl.record["path"] == "billing/fees.py" and ctl.record["edit_completed_by"] == "closed"
    finally:
        ctl.stop()
    assert not ctl.errors and ctl.unjudged == []


def test_the_content_check_finds_an_edit_through_a_hard_link_outside_the_tree(make_sandbox, tmp_path):
    repo = make_sandbox()
    outside = tmp_path / "outside.py"
    os.link(repo / TARGET, outside)
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit"), EXEMPT)
    ctl.start()
    try:
        assert ctl.refusal() is None
        with open(outside, "r+b") as fh:  # (a write through the other name: no event names the tree's path)
            fh.write(b"#")
        assert ctl.refusal() == "cleaved"
    finally:
        ctl.stop()
    assert ctl.record["path"] == TARGET and ctl.record["edit_completed_by"] == "content check"


def test_honest_writes_are_judged_by_the_watcher_not_the_content_check(make_sandbox):
    """Writes with events are the watcher's: the content check finds nothing to add (no double
    count under an nth rule), and the cut names how the watcher saw the edit."""
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("nth_py_edit:3"), EXEMPT)
    ctl.start()
    try:
        for i, rel in enumerate(["billing/fees.py", "ledger/journal.py"]):
            (repo / rel).write_text(f"# edit {i}\n")
            assert ctl.refusal() is None
            assert len(ctl.watched().edits) == i + 1
        tmp = repo / ".git" / "x.tmp"
        tmp.write_text("# by rename\n")
        os.replace(tmp, repo / "ledger" / "accounts.py")
        assert ctl.refusal() == "cleaved"
        assert ctl.record["edit_completed_by"] == "moved"
    finally:
        ctl.stop()


def test_the_after_commit_rule_takes_unseen_changes_before_arming_as_its_baseline(make_sandbox):
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit_after_commit"), EXEMPT)
    ctl.start()
    try:
        fh, m = _mmap_write(repo / TARGET, b"#")
        assert ctl.refusal() is None and not ctl.fired.is_set()  # not armed: the baseline
        m.close()
        fh.close()
        env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"}
        subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "baseline"],
                       cwd=repo, check=True, env=env)
        assert ctl.refusal() is None
        fh, m = _mmap_write(repo / "billing" / "fees.py", b"#")
        assert ctl.refusal() == "cleaved" and ctl.record["path"] == "billing/fees.py"
        m.close()
        fh.close()
    finally:
        ctl.stop()
    assert "billing/fees.py" not in git(repo, "show", "--name-only", "--format=", head(repo)).split()


def test_a_rule_that_cuts_no_edit_never_reads_the_tree_at_a_call(make_sandbox, monkeypatch):
    """Token and turn rules, and sessions with no rule, do no content check (nothing to cut at)."""
    repo = make_sandbox()
    monkeypatch.setattr(cleave, "_fingerprint", lambda *a: pytest.fail("the tree was read for a content check"))
    for i, rule in enumerate(("after_turns:3", "none")):
        ctl = CleaveController(repo, CleaveRule.parse(rule), EXEMPT)
        ctl.start()
        try:
            fh, m = _mmap_write(repo / TARGET, b"#\n"[i:i + 1])
            assert ctl.refusal() is None
            m.close()
            fh.close()
        finally:
            ctl.stop()
