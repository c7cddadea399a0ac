"""The program's side of a warm stage job (:mod:`sdcs_bench.warm`): hand the command line to the run's
server, pass on the signals this process gets while the job runs, and end as the job ended.

Every stage job's ``specsnap`` runs this before anything else, so it imports only the standard
library's C modules (``_socket``, ``_signal``, ``_struct`` and ``_json``'s string encoder), not the
``socket``, ``signal`` and ``json`` modules over them, which cost a job about 15 ms of imports, a few
per cent of a reference trial (docs/benchmarks.md). The request is JSON all the same (what the server
reads).
"""

from __future__ import annotations

import os
import sys

import _signal
import _socket
from _struct import Struct

try:
    from _json import encode_basestring_ascii
except ImportError:  # (an interpreter built without it: json's own Python version)
    from json.encoder import py_encode_basestring_ascii as encode_basestring_ascii

ENV = "SPECSNAP_WARM"  # the server's socket, in the environment of the run's jobs
LOG_ENV = "SPECSNAP_WARM_LOG"  # a file the server appends a line to per request (benches and tests read it)
HEADER = Struct("!I")  # the request's length; the request (JSON) follows, the three descriptors with it
STATUS = Struct("!ci")  # b"X" exit status | b"S" signal number
FORWARDED = frozenset({_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGUSR1,
                       _signal.SIGUSR2})
COLD, STARTED = b"C", b"R"
START_TIMEOUT_S = 60.0  # a server that has not started the job by then is not used (the program runs it)
_THREE_INTS = Struct("3i")  # a peer's (pid, uid, gid); the three descriptors a request passes


def delegate(argv: list[str]) -> int | None:
    """Run this command line in the run's server: its exit status (a signal that ended the job ends
    this process the same way), or None when it must run here (no server, or the server said no)."""
    path = os.environ.get(ENV)
    if not path or not _private(os.path.dirname(path)):
        return None
    caught: list[int] = []  # signals before the job started: passed on once it has, else re-raised here
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)

    def on_signal(signum, _frame):
        if caught and caught[0] == -1:
            _forward(sock, signum)
        else:
            caught.append(signum)

    previous = {sig: _signal.signal(sig, on_signal) for sig in sorted(FORWARDED)
                if _signal.getsignal(sig) != _signal.SIG_IGN}  # (an ignored one, as under nohup, stays so)
    sock.settimeout(START_TIMEOUT_S)
    try:
        sock.connect(path)
        if peer(sock)[1] != os.getuid():
            raise PermissionError("the server is another user's")
        umask = os.umask(0o022)
        os.umask(umask)
        request = dumps({"argv": list(argv), "env": dict(os.environ), "cwd": os.getcwd(), "umask": umask,
                         "executable": os.path.realpath(sys.executable), "prefix": sys.prefix}).encode()
        sock.sendmsg([HEADER.pack(len(request))],
                     [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _THREE_INTS.pack(0, 1, 2))])
        sock.sendall(request)
        answer = sock.recv(1)
    except OSError:  # (a timeout too: a job started after it sees the program gone, and is taken down)
        answer = b""
    if answer != STARTED:  # nothing was started: the program runs the job itself
        sock.close()
        _restore(previous, caught)
        return None
    sock.settimeout(None)
    for signum in caught:
        _forward(sock, signum)
    caught[:] = [-1]  # (from now on each signal is passed on as it comes)
    status = _read_status(sock)
    _restore(previous, [])
    sock.close()
    if status is None:
        print("specsnap: error: the run's job server stopped before this job ended", file=sys.stderr)
        return 1
    kind, value = status
    if kind == b"S":
        if value not in (_signal.SIGKILL, _signal.SIGSTOP):
            _signal.signal(value, _signal.SIG_DFL)
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {value})
        os.kill(os.getpid(), value)
        return 128 + value
    return value


def dumps(value) -> str:
    """``json.dumps(value)`` (ASCII) for what a request holds: strings (a lone surrogate of an
    undecodable environment byte included, escaped as json escapes it), integers, lists and dicts
    with string keys (a key is written as ``str(key)``: json would spell a bool or None key otherwise)."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(dumps, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not in a request: {type(value).__name__}")


def peer(conn) -> tuple[int, int]:
    """The connected process's (pid, uid), as the kernel gives them."""
    pid, uid, _gid = _THREE_INTS.unpack(conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _THREE_INTS.size))
    return pid, uid


def _restore(previous: dict, caught: list[int]) -> None:
    """Put back the program's own signal handlers; a signal caught before any job started is then
    delivered to this process as if nothing had been in between."""
    for sig, handler in previous.items():
        _signal.signal(sig, handler)
    for signum in caught:
        os.kill(os.getpid(), signum)


def _private(directory: str) -> bool:
    """The server's directory is this user's and closed to everyone else (else it is not used: a
    stale name in a shared /tmp could be anyone's)."""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o077


def _forward(sock, signum: int) -> None:
    try:
        sock.send(bytes([signum]))
    except OSError:
        pass


def _read_status(sock) -> tuple[bytes, int] | None:
    data = b""
    while len(data) < STATUS.size:
        try:
            chunk = sock.recv(STATUS.size - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return STATUS.unpack(data)
