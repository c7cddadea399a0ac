"""Stage jobs started warm (sdcs_bench/warm.py): a stage job's ``specsnap`` hands its command line,
environment, working directory and stdin/stdout/stderr to the run's server, which runs the job in a
forked process. The job must end exactly as it would have cold (outputs, exit status, a signal), the
program must fall back to running it itself whenever the server says no, and nobody but the user
who started the run (no other uid, no agent in its sandbox) may have a job run."""

from __future__ import annotations

import array
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, two_session_jobs

from sdcs_bench import warm, warm_client

TRIAL = "tier_2__Vanilla__ref_compressed_notes__none__s0"


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A warm server of this test process (as a run's main process starts one), its requests logged."""
    log = tmp_path / "served.log"
    monkeypatch.setenv(warm_client.LOG_ENV, str(log))
    path = warm.start(wait_s=60)
    assert os.path.exists(path), "the server never took requests"
    yield path, log
    warm.stop(path)
    assert not os.path.exists(os.path.dirname(path))


def _served(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _env(tmp_path: Path, path: str | None) -> dict[str, str]:
    env = {**os.environ, "SPECSNAP_ROOT": str(ROOT), "SPECSNAP_WORK_ROOT": str(tmp_path / "work")}
    env.pop(warm_client.ENV, None)
    env.pop("SPECSNAP_SPANS", None)
    if path is not None:
        env[warm_client.ENV] = path
    return env


def _program(*argv: str, env: dict[str, str], cwd: Path = ROOT, **kw) -> subprocess.CompletedProcess:
    """The ``specsnap`` program, as a rule's shell line starts it."""
    return subprocess.run([sys.executable, "-m", "sdcs_bench.entry", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, **kw)


def test_what_the_server_loads_and_looks_up_exists():
    """A module of PRELOAD or a function of WARM_UP that was renamed would only make every job slower
    (the server skips what fails): each must import and run here."""
    import importlib

    for name in warm.PRELOAD:
        importlib.import_module(name)
    for name in warm.WARM_UP:
        warm.lookup_of(name)()


@pytest.mark.parametrize("lookup", ["seccomp", "bubblewrap"])
def test_a_lookup_that_found_nothing_is_left_to_the_jobs(monkeypatch, lookup):
    """The server looks up once what every job would (WARM_UP); an answer of "nothing" (libseccomp
    not loadable in the server: None; bubblewrap would not start there: False) is not kept for the
    run's jobs: each looks again itself."""
    import shutil
    import sys

    from sdcs_bench.sandbox import bwrap, syscalls

    cached = {"seccomp": syscalls.compiled, "bubblewrap": bwrap.BwrapBackend.available}[lookup]
    cached.cache_clear()
    if lookup == "seccomp":
        monkeypatch.setitem(sys.modules, "pyseccomp", None)  # (import fails: compiled() answers None)
    else:
        which = shutil.which
        monkeypatch.setattr(bwrap.shutil, "which", lambda name, *a, **k: None if name == "bwrap" else which(name, *a, **k))
    try:
        warm.warm_up()
        assert cached.cache_info().currsize == 0
    finally:
        cached.cache_clear()


def test_the_test_runner_is_found_once_per_interpreter_and_nothing_found_is_not_kept(monkeypatch):
    """Where our interpreter finds pytest is asked once (the server asks for its jobs), and is what a
    fresh ask says; an interpreter that found nothing is asked again next time."""
    from sdcs_bench.scoring import scorer

    monkeypatch.setattr(scorer, "_HOST_RUNNER", {})
    found = scorer.host_runner_dirs()
    assert {p.name for p in found} >= {"_pytest", "pluggy"}, found

    def no_second_ask(*_a, **_k):
        raise AssertionError("asked again")

    monkeypatch.setattr(scorer.subprocess, "run", no_second_ask)
    assert scorer.host_runner_dirs() == found
    monkeypatch.undo()
    monkeypatch.setattr(scorer, "_HOST_RUNNER", {})
    assert scorer.host_runner_dirs("/bin/true") is None  # (prints nothing: no runner)
    assert "/bin/true" not in scorer._HOST_RUNNER


def test_the_client_imports_only_the_standard_librarys_c_modules():
    """Every stage job's program imports the client first: a module over the C ones (socket, signal,
    json) would cost every job its import again."""
    probe = ("import sys; before = set(sys.modules); import sdcs_bench.warm_client; "
             "print(' '.join(sorted(set(sys.modules) - before)))")
    new = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")}).stdout.split()
    assert set(new) <= {"sdcs_bench", "sdcs_bench.warm_client", "__future__", "_socket", "_signal", "_json",
                        "_struct"}, new


@pytest.mark.parametrize("value", [
    {"argv": ["specsnap", "run-session", "--trial", "t.json"], "umask": 18, "cwd": "/w"},
    {"env": {"K": "v\n\"q\" \\ é ☃ \x00 \x7f", "UNDECODABLE": "b\udcff\udc80"}},
    {"nested": [[1, -2], {"a": []}], "flags": [True, False, None]},
])
def test_a_request_is_the_json_the_server_reads(value):
    """The client writes its request without the json module: byte for byte what json.dumps writes
    (an environment's undecodable byte, a lone surrogate, escaped the same way)."""
    assert warm_client.dumps(value) == json.dumps(value)
    assert json.loads(warm_client.dumps(value)) == value


# -- a job ends as it would have cold -----------------------------------------------------------------
def test_a_reference_trial_run_warm_scores_as_it_does_cold(server, tmp_path):
    path, log = server
    results = tmp_path / "results"
    subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--study", "smoke", "--results", str(results)],
                   env=_env(tmp_path, None), cwd=ROOT, check=True, capture_output=True)
    plan = results / "smoke" / "plan" / "trials" / f"{TRIAL}.json"
    cards = {}
    for mode, socket_path in (("cold", None), ("warm", path)):
        out = tmp_path / mode
        for job in two_session_jobs(plan, out):
            proc = _program(*job, env=_env(tmp_path, socket_path))
            assert proc.returncode == 0, proc.stderr[-3000:]
        cards[mode] = json.loads((out / "score" / "scorecard.json").read_text())
        session = json.loads((out / "session_1" / "stage.json").read_text())
        assert session["session"]["status"] == "cleaved"
    assert [line.split()[:2] for line in _served(log)] == [["warm", job[0]] for job in two_session_jobs(plan, tmp_path)]
    from sdcs_bench.pipeline.rows import scorecard_row

    rows = {mode: scorecard_row(card) for mode, card in cards.items()}
    for key in ("raw", "net", "valid", "matches_expected"):
        assert rows["warm"][key] == rows["cold"][key], key
    assert rows["warm"]["valid"] and rows["warm"]["matches_expected"]


def test_exit_status_output_and_working_directory_are_the_jobs(server, tmp_path):
    """A job's error: its one line on the program's stderr, its status the program's, a relative path
    read from the program's working directory (there the trial file exists, and is broken; from the
    server's it would not exist)."""
    path, log = server
    where = tmp_path / "elsewhere"
    where.mkdir()
    (where / "broken.json").write_text("{")
    argv = ["score", "--trial", "broken.json", "--from", "a", "--stage-dir", "b"]
    cold = _program(*argv, env=_env(tmp_path, None), cwd=where)
    hot = _program(*argv, env=_env(tmp_path, path), cwd=where)
    assert (hot.returncode, hot.stdout, hot.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert hot.returncode == 2 and "broken.json" in hot.stderr and "does not exist" not in hot.stderr
    assert _served(log)[-1].startswith("warm score ")
    argv = ["score", "--trial", "nothere.json", "--from", "a", "--stage-dir", "b"]
    assert _served(log)[-1].startswith("warm score ")
    logged = tmp_path / "job.log"  # --log: the job's output into its file, its error also on the terminal
    hot = _program("--log", str(logged), *argv, env=_env(tmp_path, path), cwd=where)
    assert hot.returncode == 2 and "nothere.json" in hot.stderr and "nothere.json" in logged.read_text()


def test_anything_but_a_stage_job_runs_in_the_program_itself(server, tmp_path):
    path, log = server
    proc = _program("list", "arms", env=_env(tmp_path, path))
    assert proc.returncode == 0 and "Vanilla" in proc.stdout
    assert _served(log) == ["cold not a stage job"]


def test_without_a_server_the_program_runs_the_job_itself(tmp_path):
    gone = tmp_path / "no-server" / "socket"
    proc = _program("score", "--trial", "nothere.json", "--from", "a", "--stage-dir", "b",
                    env=_env(tmp_path, str(gone)))
    assert proc.returncode == 2 and "nothere.json does not exist" in proc.stderr


def _request(path: str, body: dict, *, fds=(0, 1, 2)) -> bytes:
    """A request as the program sends one; the server's first answer (b"" when it hung up)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        data = json.dumps(body).encode()
        try:
            sock.sendmsg([warm_client.HEADER.pack(len(data))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            sock.sendall(data)
            sock.settimeout(30)
            return sock.recv(1)
        except (BrokenPipeError, ConnectionResetError):
            return b""  # (hung up on while still sending)


def test_a_job_for_another_interpreter_runs_cold(server, tmp_path):
    """A job of a conda environment (another Python) is not run by this interpreter's server."""
    path, log = server
    body = {"argv": ["specsnap", "score", "--trial", "t", "--from", "a", "--stage-dir", "b"], "env": dict(os.environ),
            "cwd": str(tmp_path), "umask": 0o022, "executable": "/opt/conda/envs/x/bin/python", "prefix": sys.prefix}
    assert _request(path, body) == warm_client.COLD
    same = {**body, "executable": os.path.realpath(sys.executable)}
    assert _request(path, {**same, "prefix": "/opt/venvs/other"}) == warm_client.COLD  # a venv on the same Python
    assert _request(path, {**same, "env": {**os.environ, "PYTHONHASHSEED": "7"}}) == warm_client.COLD
    assert _served(log) == ["cold another interpreter or its settings"] * 3


# -- signals -------------------------------------------------------------------------------------------
def _held_job(tmp_path: Path, path: str | None) -> subprocess.Popen:
    """A job that, its work done, blocks at its exit: its spans file is a FIFO nobody reads."""
    fifo = tmp_path / f"spans-{'warm' if path else 'cold'}"
    os.mkfifo(fifo)
    env = {**_env(tmp_path, path), "SPECSNAP_SPANS": str(fifo)}
    return subprocess.Popen([sys.executable, "-m", "sdcs_bench.entry", "score", "--trial", "nothere.json", "--from",
                             "a", "--stage-dir", "b"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _opening_fifo(pid: int) -> bool:
    """The process waits in open(2) of its spans FIFO for a reader."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "wait_for_partner"
    except OSError:
        return False


def _held_warm_job(tmp_path: Path, path: str, log: Path) -> tuple[subprocess.Popen, int]:
    """A held job run warm: the program, and the job's own pid once it waits at its exit."""
    proc = _held_job(tmp_path, path)
    _wait_for(lambda: any(line.startswith("warm score") for line in _served(log)))
    job = int(_served(log)[-1].split()[2])
    _wait_for(lambda: _opening_fifo(job))
    return proc, job


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_program_reaches_the_job_and_ends_both_alike(server, tmp_path, signum):
    path, log = server
    ends = {}
    for socket_path in (None, path):
        if socket_path is None:
            proc = _held_job(tmp_path, None)
            _wait_for(lambda: _opening_fifo(proc.pid))
        else:
            proc, _ = _held_warm_job(tmp_path, socket_path, log)
        proc.send_signal(signum)
        proc.communicate(timeout=60)
        ends["warm" if socket_path else "cold"] = proc.returncode
    assert ends["warm"] == ends["cold"] != 0, ends


def test_a_job_killed_outright_ends_the_program_by_the_same_signal(server, tmp_path):
    path, log = server
    proc, job = _held_warm_job(tmp_path, path, log)
    os.kill(job, signal.SIGKILL)  # (as the kernel's OOM killer would)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def test_a_malformed_request_runs_nothing(server, tmp_path):
    """No descriptors, or a length past the bound: the server hangs up (the program then runs the job
    itself) and starts nothing."""
    path, log = server
    body = {"argv": ["specsnap", "score", "--trial", "t", "--from", "a", "--stage-dir", "b"], "env": dict(os.environ),
            "cwd": str(tmp_path), "umask": 0o022, "executable": os.path.realpath(sys.executable), "prefix": sys.prefix}
    assert _request(path, body, fds=()) == b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendmsg([warm_client.HEADER.pack(1 << 30)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
        sock.settimeout(30)
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
    assert _served(log) == ["refused a malformed request"] * 2


def test_a_killed_program_takes_its_job_with_it(server, tmp_path):
    path, log = server
    proc, job = _held_warm_job(tmp_path, path, log)
    proc.kill()
    proc.wait()
    _wait_for(lambda: not Path(f"/proc/{job}").exists() or "Z" in Path(f"/proc/{job}/stat").read_text().split()[2])


# -- who may have a job run ------------------------------------------------------------------------------
def _as_nobody(path: str) -> str:
    """Connect to the server as uid/gid 65534 (the tests run as root) and send it a stage job: what
    happened, in one line (a fork that drops to that user; its own interpreter could not be run)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        line = b""
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            body = {"argv": ["specsnap", "score", "--trial", "t", "--from", "a", "--stage-dir", "b"], "env": {},
                    "cwd": "/", "umask": 0o022, "executable": os.path.realpath(sys.executable)}
            line = f"answer {_request(path, body)!r}".encode()
        except OSError as exc:
            line = f"refused {exc.errno}".encode()
        finally:
            os.write(write, line)
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as fh:
        return fh.read().decode()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to become another user")
def test_another_user_cannot_reach_the_server_nor_have_a_job_run(server, tmp_path):
    path, log = server
    assert _as_nobody(path) == "refused 13"  # its directory is the user's only
    # Past the directory (opened up by hand), the server itself says no: it checks who connected.
    os.chmod(os.path.dirname(path), 0o755)
    os.chmod(path, 0o777)
    assert _as_nobody(path) in ("answer b''", "refused 104", "refused 32")  # (hung up on, mid-request or after)
    assert _served(log) == ["refused another user"]


def test_an_agent_in_its_sandbox_cannot_see_the_server(server, isolated_backend, make_sandbox, tmp_path):
    path, _ = server
    sandbox, home = make_sandbox(), tmp_path / "home"
    home.mkdir()
    code, out, _ = isolated_backend.run(
        ["sh", "-c", f'ls -d "{os.path.dirname(path)}" "{path}" 2>/dev/null; echo seen'],
        workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert out.decode().strip() == "seen", out  # neither the directory nor the socket is there


PROBE = """
import array, json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print("refused", exc.errno)
    raise SystemExit
body = json.dumps({"argv": ["specsnap", "score", "--trial", "t", "--from", "a", "--stage-dir", "b"], "env": {},
                   "cwd": "/", "umask": 18, "executable": sys.argv[2], "prefix": sys.argv[3]}).encode()
try:
    s.sendmsg([struct.pack("!I", len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    s.sendall(body)
    print("answer", repr(s.recv(1)))
except OSError as exc:
    print("refused", exc.errno)
"""


def test_a_process_in_a_sandbox_is_refused_even_where_the_socket_is_bound_in(server, isolated_backend, make_sandbox,
                                                                            tmp_path):
    """A misconfiguration that shows the socket's directory inside a sandbox (bound in here on
    purpose) still gets the agent nothing: the server refuses a process of another user or of
    another namespace (a bubblewrap agent may be this very user, mapped)."""
    path, log = server
    sandbox, home = make_sandbox(), tmp_path / "home"
    home.mkdir()
    os.chmod(os.path.dirname(path), 0o755)  # (and past its directory's and the socket's own modes)
    os.chmod(path, 0o777)
    code, out, err = isolated_backend.run(
        [sys.executable, "-I", "-S", "-c", PROBE, path, os.path.realpath(sys.executable), sys.prefix],
        workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"}, timeout=60, ro_binds=[Path(path).parent])
    said = out.decode().strip()
    assert said in ("answer b''", "refused 104", "refused 32"), (said, err)  # connected, then hung up on
    assert _served(log) in (["refused another user"], ["refused a process in a sandbox"])


# -- the server's life -------------------------------------------------------------------------------------
def test_the_server_leaves_with_the_process_that_started_it(tmp_path):
    started = subprocess.run([sys.executable, "-c", "from sdcs_bench import warm; print(warm.start(wait_s=60))"],
                             capture_output=True, text=True, timeout=120, env=_env(tmp_path, None))
    path = started.stdout.strip()
    assert path.endswith("socket"), started.stderr
    _wait_for(lambda: not os.path.exists(path), timeout=30)  # its parent is gone: it removed its socket and left
    os.rmdir(os.path.dirname(path))


@pytest.mark.parametrize("local,main,in_storage,asked,wanted", [
    (True, True, False, True, True),
    (True, True, False, "true", True),
    (True, True, False, "false", False),  # warm_jobs=false
    (False, True, False, True, False),  # a cluster's jobs (SLURM, Kubernetes) run on other machines
    (True, False, False, True, False),  # a job's own Snakemake process (on a node) starts no server
    (True, True, True, True, False),  # no shared file system
])
def test_a_server_is_started_only_for_a_local_runs_main_process(local, main, in_storage, asked, wanted):
    from types import SimpleNamespace

    from sdcs_bench.pipeline.startup import Run

    run = Run(root=ROOT, study="smoke", results="results", name="smoke", subset=None, in_storage=in_storage, cells={})
    workflow = SimpleNamespace(local_exec=local, is_main_process=main)
    assert run.warm_jobs(workflow, {"warm_jobs": asked}) is wanted


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs util-linux's unshare")
def test_a_process_in_another_user_namespace_is_not_this_servers_peer():
    """(The check behind the refusal above, where the sandbox's user would be this one.)"""
    assert warm._same_namespaces(os.getpid())
    inside = subprocess.Popen(["unshare", "--user", "--map-current-user", "sleep", "30"])
    try:
        _wait_for(lambda: os.readlink(f"/proc/{inside.pid}/ns/user") != os.readlink("/proc/self/ns/user"))
        assert not warm._same_namespaces(inside.pid)
    finally:
        inside.kill()
        inside.wait()
    assert not warm._same_namespaces(inside.pid)  # (gone: not a peer either)
