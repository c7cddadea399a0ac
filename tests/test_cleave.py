"""The cleave controller: watcher kill, git guard, and the `edit && git commit` race."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdcs_bench.session.cleave import CleaveController
from sdcs_bench.sandbox.guard import exempt_patterns, guard_state, qualifies
from sdcs_bench.sandbox.guard_install import set_guard
from sdcs_bench.core.gitutil import git, head
from sdcs_bench.sandbox.base import base_env
from sdcs_bench.trial.workload_model import CleaveRule

EXEMPT = exempt_patterns(["tests/**"], ["state.md", "AGENTS.md", "notes/plan.py"])


def test_qualifying_paths():
    assert qualifies("billing/fees.py", EXEMPT)
    assert qualifies("_patch1.py", EXEMPT)  # a new helper script is a source edit too
    assert not qualifies("tests/test_billing.py", EXEMPT)  # visible tests
    assert not qualifies("notes/plan.py", EXEMPT)  # the arm's memory files
    assert not qualifies("state.md", EXEMPT)
    assert not qualifies("billing/fees.pyc", EXEMPT)
    assert not qualifies(".git/hooks/x.py", EXEMPT)


def _commit(repo: Path, *extra: str) -> subprocess.CompletedProcess:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    return subprocess.run(["git", "commit", "-q", *extra, "-m", "x"], cwd=repo, capture_output=True, text=True)


def test_guard_refuses_committing_the_first_py_edit_even_with_no_verify(make_sandbox):
    repo = make_sandbox()
    before = head(repo)
    set_guard(repo, "armed")
    (repo / "state.md").write_text("notes\n")
    assert _commit(repo).returncode == 0, "notes are not a source edit: committing them is fine"
    (repo / "billing" / "fees.py").write_text("# edited\n")
    result = _commit(repo, "--no-verify")
    assert result.returncode != 0
    assert "cleave" in result.stderr
    assert guard_state(repo) == "cleaved"
    assert git(repo, "diff", "--name-only", before, "HEAD").split() == ["state.md"]
    assert "billing/fees.py" in git(repo, "status", "--porcelain")


def test_guard_refuses_everything_once_cleaved_and_nothing_when_off(make_sandbox):
    repo = make_sandbox()
    (repo / "README.md").write_text("changed\n")
    set_guard(repo, "cleaved")
    assert _commit(repo).returncode != 0
    set_guard(repo, "off")
    (repo / "billing" / "fees.py").write_text("# edited\n")
    assert _commit(repo).returncode == 0


def _spawn_writer(backend, repo: Path, tmp_path: Path, script: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    proc = backend.spawn([sys.executable, "-c", script], workdir=repo, home=home, env=base_env(home))
    proc.reap = lambda: backend.reap(repo)  # (the end of a session, as the runner ends every one)
    return proc


def _wait(proc, timeout=20):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the watcher did not stop the agent")
    finally:
        getattr(proc, "reap", lambda: None)()


SLOW_WRITER = """
import time, pathlib
pathlib.Path('state.md').write_text('notes that never trigger a cleave')
pathlib.Path('tests/test_extra.py').write_text('# visible tests are exempt')
time.sleep(0.8)
pathlib.Path('billing/fees.py').write_text('# first source edit')
time.sleep(30)
pathlib.Path('billing/tax.py').write_text('# must never be written')
"""


def test_watcher_kills_the_process_group_at_the_first_py_edit(make_sandbox, backend, tmp_path):
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule("first_py_edit"), exempt_patterns(["tests/**"], ["state.md", "AGENTS.md"]))
    ctl.start()
    proc = _spawn_writer(backend, repo, tmp_path, SLOW_WRITER)
    ctl.attach(proc.pid)
    t0 = time.monotonic()
    _wait(proc)
    ctl.stop()
    assert time.monotonic() - t0 < 20
    assert ctl.record["fired"] and ctl.record["path"] == "billing/fees.py"
    assert (repo / "billing" / "fees.py").read_text() == "# first source edit"  # whole, not truncated
    assert "must never" not in (repo / "billing" / "tax.py").read_text()
    assert guard_state(repo) == "cleaved"


RACER = """
import pathlib, subprocess
pathlib.Path('billing/fees.py').write_text('# edit')
subprocess.run('git add -A && git commit -q --no-verify -m race', shell=True)
"""


@pytest.mark.parametrize("attempt", range(3))
def test_edit_and_commit_in_one_command_never_lands(make_sandbox, backend, tmp_path, attempt):
    repo = make_sandbox()
    before = head(repo)
    ctl = CleaveController(repo, CleaveRule("first_py_edit"), exempt_patterns(["tests/**"], ["state.md"]))
    ctl.start()
    proc = _spawn_writer(backend, repo, tmp_path, RACER)
    ctl.attach(proc.pid)
    _wait(proc)
    time.sleep(0.7)  # let the watcher see the write even if the guard refused the commit first
    ctl.stop()
    assert head(repo) == before, "the cleaved edit was committed"
    assert "billing/fees.py" in git(repo, "status", "--porcelain")
    assert ctl.fired.is_set()


def test_nth_edit_rule_counts_completed_writes(make_sandbox, backend, tmp_path):
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("nth_py_edit:2"), exempt_patterns(["tests/**"], []))
    ctl.start()
    script = (
        "import pathlib, time\n"
        "pathlib.Path('billing/fees.py').write_text('# one')\ntime.sleep(0.8)\n"
        "pathlib.Path('ledger/journal.py').write_text('# two')\ntime.sleep(30)\n"
    )
    proc = _spawn_writer(backend, repo, tmp_path, script)
    ctl.attach(proc.pid)
    _wait(proc)
    ctl.stop()
    assert ctl.record["path"] == "ledger/journal.py"


def test_cleave_rule_parsing():
    assert str(CleaveRule.parse("nth_py_edit:3")) == "nth_py_edit:3"
    assert not CleaveRule.parse("none").active
    with pytest.raises(Exception, match="valid choices"):
        CleaveRule.parse("after_lunch")
    with pytest.raises(Exception, match="positive whole number"):
        CleaveRule.parse("nth_py_edit:0")


def test_after_commit_rule_arms_only_at_the_agents_first_commit(make_sandbox, backend, tmp_path):
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit_after_commit"), exempt_patterns(["tests/**"], []))
    ctl.start()
    assert guard_state(repo) == "await_commit"
    script = (
        "import pathlib, subprocess, time\n"
        "pathlib.Path('billing/fees.py').write_text('# the baseline, before any commit')\n"
        "subprocess.run('git add -A && git commit -q -m baseline', shell=True, check=True)\n"
        "time.sleep(0.8)\n"
        "pathlib.Path('ledger/journal.py').write_text('# first sprint edit')\n"
        "subprocess.run('git add -A && git commit -q -m sprint', shell=True)\n"
        "time.sleep(30)\n"
    )
    before = head(repo)
    proc = _spawn_writer(backend, repo, tmp_path, script)
    ctl.attach(proc.pid)
    _wait(proc)
    ctl.stop()
    assert ctl.record["path"] == "ledger/journal.py"
    log = git(repo, "log", "--format=%s", f"{before}..HEAD").split()
    assert log == ["baseline"], "the baseline commit lands, the sprint edit's commit does not"


@pytest.mark.parametrize("load", [False, True], ids=["idle", "loaded"])
def test_refusal_sees_a_write_completed_just_before_the_question(make_sandbox, load):
    """The model proxy asks before each model call; a call sent right after the cleaving write
    must be refused however fast it comes (the watcher's barrier orders the two), on a loaded
    machine too: the question waits for the watcher instead of answering on a deadline."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4 if load else 0)]
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit"), exempt_patterns(["tests/**"], []))
    ctl.start()
    try:
        for _ in range(5):
            assert ctl.refusal() is None
            (repo / "tests" / "test_extra.py").write_text("# exempt\n")
            assert ctl.refusal() is None  # an exempt write does not cleave
        (repo / "billing" / "fees.py").write_text("# edit\n")
        assert ctl.refusal() == "cleaved"  # no sleep in between
        assert ctl.record["path"] == "billing/fees.py"
        assert ctl.unjudged == []
    finally:
        ctl.stop()
        for proc in burners:
            proc.kill()
            proc.wait()


def test_a_question_the_watcher_cannot_judge_is_refused_with_its_reason(make_sandbox, monkeypatch):
    """Fail closed: a watcher that never passes the barrier (stalled, lost events) or is not
    running turns every model call into a refusal with the reason, never an answer."""
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit"), exempt_patterns(["tests/**"], []),
                           judge_timeout_s=0.5)
    monkeypatch.setattr(ctl, "control_event", lambda name: None)  # the watcher never sees its barrier
    ctl.start()
    try:
        reason = ctl.refusal()
        assert reason is not None and reason.startswith("unjudged:") and "within 0.5 s" in reason
        assert ctl.cleaved_now() is True
    finally:
        ctl.stop()
    assert len(ctl.unjudged) == 2 and not ctl.errors[:-1]
    # The end of the session could not have the watcher judge its last events either: that fails
    # closed too (the cleave fires on the error, and the integrity check reports it).
    assert ctl.fired.is_set() and ctl.record["by"] == "watcher error"
    assert "at the end of the session" in ctl.errors[-1] and "within 0.5 s" in ctl.errors[-1]
    assert ctl.refusal() == "cleaved"
    assert not list((repo / ".git" / "specsnap").glob("barrier.*"))


def test_a_question_asked_of_a_stopped_watcher_is_refused(make_sandbox):
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit"), exempt_patterns(["tests/**"], []))
    ctl.start()
    ctl.stop()
    assert ctl.refusal().startswith("unjudged: the cleave watcher is not running")
    assert not ctl.fired.is_set() and not ctl.errors


def test_the_proxy_refuses_and_records_an_unjudged_call(make_sandbox, tmp_path):
    import httpx

    from sdcs_bench.proxy import ModelProxy, ReplayScript, read_ledger

    script_path = tmp_path / "s.yaml"
    script_path.write_text('{"responses": [{"text": "never served"}]}')
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit"), exempt_patterns(["tests/**"], []),
                           judge_timeout_s=0.3)
    ctl.control_event = lambda name: None
    ctl.start()
    ledger = tmp_path / "ledger.jsonl"
    try:
        with ModelProxy(ledger=ledger, script=ReplayScript.load(script_path).for_session(1, {}),
                        refusal=ctl.refusal) as proxy:
            resp = httpx.post(proxy.url + "/v1/chat/completions", json={"model": "m", "messages": []})
    finally:
        ctl.stop()
    assert resp.status_code == 403 and "cannot be answered" in resp.text
    (row,) = read_ledger(ledger)
    assert row["refused"] and row["refused_reason"].startswith("unjudged:") and row["usage"] is None


@pytest.mark.parametrize("state", ["", "arme", "armed\ncleaved", "garbage"])
def test_the_hook_refuses_on_a_state_it_does_not_recognise(make_sandbox, state):
    repo = make_sandbox()
    (repo / ".git" / "specsnap" / "guard").write_text(state)
    (repo / "README.md").write_text("changed\n")
    result = _commit(repo)
    assert result.returncode != 0 and "unrecognised cleave guard state" in result.stderr


def test_the_hook_refuses_when_the_guard_file_is_missing(make_sandbox):
    repo = make_sandbox()
    (repo / ".git" / "specsnap" / "guard").unlink()
    (repo / "README.md").write_text("changed\n")
    assert _commit(repo).returncode != 0


def test_guard_state_changes_are_atomic_renames(make_sandbox):
    """The state file is never truncated in place: every change is a new file renamed over the old
    one, so a hook reading it concurrently sees the old state or the new one."""
    repo = make_sandbox()
    path = repo / ".git" / "specsnap" / "guard"
    inode = path.stat().st_ino
    set_guard(repo, "armed")
    assert path.read_text() == "armed\n" and path.stat().st_ino != inode
    with pytest.raises(ValueError):
        set_guard(repo, "armd")
    assert [p.name for p in path.parent.iterdir() if p.name.startswith("guard")] == ["guard"]


def test_under_an_nth_rule_the_hook_asks_the_watcher_and_fails_closed_without_one(make_sandbox):
    from sdcs_bench.sandbox.guard_install import install_guard

    repo = make_sandbox()
    install_guard(repo, exempt_patterns(["tests/**"], []), ask_polls=30)
    set_guard(repo, "watch")  # an nth_py_edit rule whose watcher is gone
    (repo / "README.md").write_text("changed\n")
    result = _commit(repo)
    assert result.returncode != 0 and "did not answer" in result.stderr
    assert not list((repo / ".git" / "specsnap").glob("ask.*"))
    ctl = CleaveController(repo, CleaveRule.parse("nth_py_edit:3"), exempt_patterns(["tests/**"], []))
    ctl.start()
    try:
        assert guard_state(repo) == "watch"
        assert _commit(repo).returncode == 0  # the watcher answers: nothing has cleaved yet
    finally:
        ctl.stop()


def test_a_file_created_empty_then_written_is_cleaved_with_its_content(make_sandbox, backend, tmp_path):
    """Some harnesses create a new file empty and write its content a moment later; the cleave
    must keep the content, not the empty file."""
    repo = make_sandbox()
    ctl = CleaveController(repo, CleaveRule.parse("first_py_edit"), exempt_patterns(["tests/**"], []))
    ctl.start()
    script = (
        "import pathlib, time\n"
        "p = pathlib.Path('ledger/periods.py')\np.touch()\ntime.sleep(0.15)\n"
        "p.write_text('PERIODS = 12\\n')\ntime.sleep(30)\n"
    )
    proc = _spawn_writer(backend, repo, tmp_path, script)
    ctl.attach(proc.pid)
    _wait(proc)
    ctl.stop()
    assert ctl.record["path"] == "ledger/periods.py"
    assert (repo / "ledger" / "periods.py").read_text() == "PERIODS = 12\n"
