"""Stage jobs started warm: a local run's stage jobs without a fresh interpreter and imports each.

A study runs one job per stage of every trial, and each paid an interpreter's start and the imports
of what it runs, about a sixth of a reference trial's job time (docs/benchmarks.md). For a local run
the workflow starts one server before its first job (``start``, from Snakemake's ``onstart``): a
process that imports what the stages run, then waits on a Unix socket in a directory only this user
can enter. A stage job's ``specsnap`` (the same command line the rule always had) hands the server
its command line, environment, working directory, umask and its stdin, stdout and stderr
(``warm_client.delegate``); the server forks a process that takes all of them on and runs the job exactly as the
program would (``sdcs_bench.jobs``); the job's exit status, or the signal that ended it, is the
command's own, and a signal the command receives is passed on to the job. What a rule declares is
unchanged: one job per stage in Snakemake's DAG, with its outputs, log and benchmark (whose wall time
is the job's; its CPU and memory columns count the small client only), caching and resume.

The program runs the job itself (cold) whenever the server is not there or says no: a cluster job
(the server is started for local execution only), a job started before the server was ready, another
interpreter (a conda environment), a command line that is not a stage job, or ``warm_jobs=false``.
A connection from any other user, or from a process in another user, mount or pid namespace (a
sandbox), is refused; agents never see the socket anyway (their sandbox has a /tmp of its own and an
environment of SpecSnap's choosing), and the server leaves when the run does.

The program's side is :mod:`sdcs_bench.warm_client` (light: every stage job imports it first).
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import sys

from sdcs_bench.warm_client import COLD, ENV, FORWARDED, HEADER, LOG_ENV, START_TIMEOUT_S, STARTED, STATUS, peer

_MAX_REQUEST = 4 << 20  # a command line and its environment

# What the stages run (each stage imports only its own part when it starts cold: docs/benchmarks.md).
PRELOAD = (
    "sdcs_bench.jobs",
    "sdcs_bench.pipeline.stages",
    "sdcs_bench.sandbox.scaffold",
    "sdcs_bench.sandbox.bwrap",
    "sdcs_bench.sandbox.local",
    "sdcs_bench.sandbox.poison",
    "sdcs_bench.sandbox.withhold",
    "sdcs_bench.session.runner",
    "sdcs_bench.session.redact",
    "sdcs_bench.session.carry",
    "sdcs_bench.session.handoff",
    "sdcs_bench.coherence.session",
    "sdcs_bench.coherence.conversation",
    "sdcs_bench.agents.credentials",
    "sdcs_bench.agents.continuation",
    "sdcs_bench.trial.notes",
    "sdcs_bench.scoring.scorer",
    "grimp",
    "importlinter.api",
)
# Then what every job looks up and none changes, looked up once here (each job inherits the answer):
# the walk of the host's /etc that every sandbox's /etc is made of, whether bubblewrap runs here, the
# sandbox's system-call filter as libseccomp compiles it, where our interpreter finds the test runner,
# the workload schema and its validator's version. (A failure is left to the jobs, which look it up
# themselves.)
WARM_UP = ("sdcs_bench.sandbox.bwrap:public_etc", "sdcs_bench.sandbox.bwrap:BwrapBackend.available",
           "sdcs_bench.sandbox.syscalls:compiled", "sdcs_bench.scoring.scorer:host_runner_dirs",
           "sdcs_bench.trial.workload:warm_up")


# -- the run's side ---------------------------------------------------------------------------------------
def start(python: str = sys.executable, *, wait_s: float = 0.0) -> str:
    """Start a server for this process's jobs; returns its socket's path, also set in ``ENV`` here
    (so every job this process starts finds it). It leaves when this process does (``stop`` ends it
    before). ``wait_s``: wait up to that long for it to take requests (a job sent before runs cold)."""
    import subprocess
    import tempfile
    import time

    directory = tempfile.mkdtemp(prefix="specsnap-warm-")  # (0700: this user's only)
    path = os.path.join(directory, "socket")
    env = {k: v for k, v in os.environ.items() if k != ENV}
    argv = [python, "-P", "-m", "sdcs_bench.warm", path, str(os.getpid())]
    if os.environ.get(LOG_ENV):
        argv.append(os.environ[LOG_ENV])
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            start_new_session=True)
    os.environ[ENV] = path
    _SERVERS[path] = proc
    deadline = time.monotonic() + wait_s
    while not os.path.exists(path) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    return path


_SERVERS: dict = {}


def stop(path: str | None = None) -> None:
    """End the server(s) this process started (a job already running goes on to its end)."""
    import shutil

    for key in [path] if path else list(_SERVERS):
        proc = _SERVERS.pop(key, None)
        if proc is None:
            continue
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except Exception:
            proc.kill()
            proc.wait()
        shutil.rmtree(os.path.dirname(key), ignore_errors=True)
        if os.environ.get(ENV) == key:
            del os.environ[ENV]


def serve(path: str, parent: int, log: str | None = None) -> None:
    """Import what the stages run, then answer requests on ``path`` until ``parent`` is gone (each
    request's fate appended to ``log``, if given: ``warm <verb> <pid>`` or ``cold <why>``)."""
    global _LOG
    _LOG = log
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # (an optional part missing here: such a job imports it, or fails, as it would cold)
    warm_up()
    import gc

    gc.freeze()  # (what was imported is never traversed by a job's collections: fewer pages copied per job)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C goes to the jobs, through their clients
    signal.signal(signal.SIGTERM, _leave)  # (``stop``)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    os.chmod(path + ".new", 0o600)
    os.rename(path + ".new", path)
    listener.listen(64)
    try:
        while os.getppid() == parent:
            _reap()  # (waited for, so that the CPU time of the jobs adds up to the run's as cold jobs' does)
            ready, _, _ = select.select([listener], [], [], 1.0)
            if not ready:
                continue
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                code = 0
                try:
                    _handle(conn)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            conn.close()
    except SystemExit:
        pass
    finally:
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass
        _reap()


def warm_up() -> None:
    """Look up :data:`WARM_UP` here, once (the server's jobs inherit the answers). An answer of
    nothing (None: libseccomp not loadable here, say; False: bubblewrap would not start) or a failure
    is not kept: each job looks it up itself, and says what is wrong."""
    for name in WARM_UP:
        try:
            lookup = lookup_of(name)
            if not lookup() and hasattr(lookup, "cache_clear"):
                lookup.cache_clear()
        except Exception:  # noqa: BLE001
            pass


def lookup_of(name: str):
    """The function a :data:`WARM_UP` entry names (``module:attribute[.attribute]``)."""
    import importlib

    module, _, path = name.partition(":")
    found = importlib.import_module(module)
    for part in path.split("."):
        found = getattr(found, part)
    return found


def _leave(_signum, _frame) -> None:
    raise SystemExit(0)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


_LOG: str | None = None


def _note(line: str) -> None:
    if _LOG is None:
        return
    fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _same_namespaces(pid: int) -> bool:
    """The process lives in this server's user, mount and pid namespaces: never in a sandbox, whose
    agent could otherwise be this user (bubblewrap maps its uid to the user's when no host uid of its
    own is set up) and, were the socket's directory bound into its sandbox, reach it."""
    try:
        return all(os.readlink(f"/proc/{pid}/ns/{ns}") == os.readlink(f"/proc/self/ns/{ns}")
                   for ns in ("user", "mnt", "pid"))
    except OSError:
        return False


def _receive(conn: socket.socket) -> tuple[dict, list[int]] | None:
    """One request: its JSON and the three descriptors it passed (None for a malformed one)."""
    fds = array.array("i")
    msg, ancdata, _flags, _addr = conn.recvmsg(HEADER.size, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if len(msg) != HEADER.size or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    (size,) = HEADER.unpack(msg)
    if size > _MAX_REQUEST:
        return None
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(min(1 << 16, size - len(body)))
        if not chunk:
            return None
        body += chunk
    return json.loads(body), list(fds)


def _same_python(request: dict) -> bool:
    """The job would run on this interpreter, in this environment, with the settings that shape an
    interpreter as it starts (``PYTHON*``, the locale): else it runs cold."""
    if request.get("executable") != os.path.realpath(sys.executable) or request.get("prefix") != sys.prefix:
        return False
    env = request.get("env") or {}
    shaping = {k for k in (*env, *os.environ) if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "LANGUAGE")}
    return all(env.get(k) == os.environ.get(k) for k in shaping)


def _handle(conn: socket.socket) -> None:
    """One request, in a process of its own: refuse it (the program then runs the job itself), or
    run the job in a child and report how it ended, passing on the signals the program forwards."""
    from sdcs_bench import jobs

    # The signals a job may be sent are held (blocked) here and in the job until it is set up, then
    # delivered with the job's own dispositions: one sent as the job starts is never lost.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    for sig in FORWARDED:
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    pid, uid = peer(conn)
    if uid != os.getuid():
        _note("refused another user")
        return
    if not _same_namespaces(pid):
        _note("refused a process in a sandbox")
        return
    conn.settimeout(START_TIMEOUT_S)
    received = _receive(conn)
    if received is None:
        _note("refused a malformed request")
        return
    request, fds = received
    args = None
    if not _same_python(request):
        _note("cold another interpreter or its settings")
    else:
        args = jobs.parse(list(request["argv"][1:]))
        if args is None:
            _note("cold not a stage job")
    if args is None:
        for fd in fds:
            os.close(fd)
        conn.sendall(COLD)
        return
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        _run_job(request, fds, args, conn, me)
    try:
        _supervise(conn, pid, fds, args.verb)
    except BaseException:
        _signal_group(pid, signal.SIGKILL)  # (no job without its supervisor)
        raise


def _supervise(conn: socket.socket, pid: int, fds: list[int], verb: str) -> None:
    """Tell the program its job started, pass on its signals, and report how the job ended."""
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # (the job did it first)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)  # (before the program hears of the job: a failure here leaves none running)
    conn.settimeout(None)
    try:
        conn.sendall(STARTED)
    except OSError:
        pass  # the program is gone already: the loop below sees it and takes the job down
    try:
        _note(f"warm {verb} {pid}")
    except OSError:
        pass
    watched = [conn, pidfd]
    while True:
        ready, _, _ = select.select(watched, [], [])
        if pidfd in ready:
            break
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data:  # the program is gone: so is its job
            watched.remove(conn)
            _signal_group(pid, signal.SIGKILL)
            continue
        for signum in data:
            _signal_group(pid, signum)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        answer = STATUS.pack(b"S", os.WTERMSIG(status))
    else:
        answer = STATUS.pack(b"X", os.waitstatus_to_exitcode(status))
    try:
        conn.sendall(answer)
    except OSError:
        pass


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (OSError, ValueError):
        pass


def _run_job(request: dict, fds: list[int], args, conn: socket.socket, supervisor: int) -> None:
    """In the job's process: become the program that sent the request, run the job, exit as it would."""
    import atexit
    import ctypes
    import tempfile
    import time
    import traceback

    code: int = 1
    interrupted = False
    try:
        os.setpgid(0, 0)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: not without its supervisor
        if os.getppid() != supervisor:
            return  # (it was gone before that took hold)
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.umask(int(request["umask"]))
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        tempfile.tempdir = None  # (TMPDIR is the job's)
        time.tzset()
        from sdcs_bench.core import timing

        timing.configure()
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
        from sdcs_bench import jobs

        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # (what was sent meanwhile arrives now)
        try:
            jobs.run(args)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except KeyboardInterrupt:
            traceback.print_exc()
            interrupted = True
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
        _flush()
        if interrupted:  # as the interpreter ends on an uncaught ^C: by the signal itself
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # (taking the request on failed: said on its stderr, status 1)
        try:
            os.write(2, ("specsnap: internal error in the warm job server\n" + traceback.format_exc()).encode())
        except OSError:
            pass
    finally:
        os._exit(code)


def _exit_code(value) -> int:
    """``sys.exit(value)``'s status, as the interpreter would give it (a message is printed)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
