"""The agent's box (docs/sandboxes.md, "Threat model"): its own network, nothing of the host's
secrets, and a limit on everything it can consume. Each test is an attack by a scripted agent (the
``command`` harness running one shell script) in one tier_2 session, judged from the host: the
listener it reached for saw nothing, the file it read for is not there, the resource it exhausted
stopped at its limit and the session says ``limit: <reason>`` (never an infrastructure failure to
retry), and nothing of it is left running.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
import warnings
from pathlib import Path

import pytest
from hostile_support import hostile_agent, sandbox_processes

from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.bwrap import BwrapBackend
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.session.runner import run_session
from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial.workload import load_workload

pytestmark = pytest.mark.skipif(not BwrapBackend.available(), reason="bubblewrap is not usable here")

PY = "python3 -I -c"


def _backend(name: str, docker_record: Path | None = None, **limits):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = {"limits": limits}
        if name == "docker":
            options["image_record"] = str(docker_record)
        return make_backend(name, options)


def run_box(tmp_path: Path, script: str, backend, timeout_s: float = 60) -> dict:
    """One session of a scripted agent that knows its proxy (``$SPECSNAP_ENDPOINT``, with its
    token in ``$SPECSNAP_TOKEN``); the session's record."""
    workload = load_workload("tier_2")
    arm = Arm.from_config(config.entity("arm", "AGENTS_MD_Only"))
    spec = effective_schedule(workload, config.entity("variant", "none"))[0]
    workdir = tmp_path / "sandbox"
    scaffold(workload, arm, workdir)
    agent = hostile_agent(script)
    agent["options"]["env"] = {"SPECSNAP_ENDPOINT": "{endpoint}", "SPECSNAP_TOKEN": "{api_key}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = run_session(trial_id="box", index=1, session=spec, workload=workload, arm=arm, agent_cfg=agent,
                             workdir=workdir, stage_dir=tmp_path / "s1", backend=backend, timeout_s=timeout_s)
    left = sandbox_processes(workdir)
    for pid in left:
        os.kill(pid, 9)
    assert not left, f"processes outlived their session: {left}"
    return record


def _out(tmp_path: Path) -> str:
    return (tmp_path / "s1" / "transcript.jsonl").read_text(errors="replace")


class Listener:
    """A host service on 127.0.0.1 (a TCP port) or an abstract unix socket: what connected to it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        if kind == "tcp":
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.address = str(self.sock.getsockname()[1])
        else:
            self.sock = socket.socket(socket.AF_UNIX)
            self.name = f"specsnap-test-{uuid.uuid4().hex[:12]}"
            self.sock.bind("\0" + self.name)
            self.address = self.name
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.reached: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(1)
            try:
                self.reached.append(conn.recv(100) or b"(connected)")
                conn.sendall(b"secret-of-the-host\n")
            except OSError:
                self.reached.append(b"(connected)")
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


REACH = ("import os, socket, sys, urllib.request\n"
         "tcp, abstract = sys.argv[1], sys.argv[2]\n"
         "for fam, addr in ((socket.AF_INET, ('127.0.0.1', int(tcp))), (socket.AF_UNIX, '\\0' + abstract)):\n"
         "    s = socket.socket(fam); s.settimeout(2)\n"
         "    try:\n"
         "        s.connect(addr); s.sendall(b'hello'); print('REACHED', addr, s.recv(100))\n"
         "    except OSError as e:\n"
         "        print('REFUSED', addr, e)\n"
         "req = urllib.request.Request(os.environ['SPECSNAP_ENDPOINT'] + '/v1/models',\n"
         "                             headers={'authorization': 'Bearer ' + os.environ['SPECSNAP_TOKEN']})\n"
         "print('PROXY', urllib.request.urlopen(req, timeout=10).status)\n")


def _network(tmp_path, backend) -> None:
    tcp, abstract = Listener("tcp"), Listener("abstract")
    try:
        script = f"{PY} {_quote(REACH)} {tcp.address} {abstract.address}"
        record = run_box(tmp_path, script, backend)
    finally:
        tcp.close()
        abstract.close()
    out = _out(tmp_path)
    assert tcp.reached == [] and abstract.reached == [], (tcp.reached, abstract.reached, out)
    assert "REACHED" not in out
    assert "PROXY 200" in out, (out, (tmp_path / "s1" / "agent.stderr.log").read_text())
    assert record["status"] == "ok"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_the_agent_reaches_its_own_proxy_and_no_host_listener_bwrap(tmp_path):
    """A host TCP port (standing for another trial's proxy or any local service) and an abstract
    unix socket, both listening: the agent reaches neither, and still reaches its own proxy."""
    _network(tmp_path, _backend("bwrap"))


def test_the_agent_reaches_its_own_proxy_and_no_host_listener_docker(tmp_path, docker_image):
    _network(tmp_path, _backend("docker", docker_image))


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_no_host_secret_and_no_root_inside(tmp_path, backend, request):
    """The agent is not uid 0 inside; /etc holds no shadow, no ssh or TLS private keys; the host's
    /tmp, /dev/shm and the invoking user's HOME are not its own (a file planted in each is not there)."""
    box = _backend("bwrap") if backend == "bwrap" else _backend("docker", request.getfixturevalue("docker_image"))
    canaries = [Path(d) / f".specsnap-canary-{uuid.uuid4().hex[:8]}" for d in ("/dev/shm", "/tmp", Path.home())]
    for c in canaries:
        c.write_text("host canary")
    try:
        names = " ".join(str(c) for c in canaries)
        script = ("id -u; for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/ssh /etc/ssl/private /etc/munge "
                  f"/etc/slurm {names} /var/run/docker.sock /run/munge; do "
                  "[ -r $f ] && echo PRESENT $f; done; grep -c . /etc/passwd; echo done")
        record = run_box(tmp_path, script, box)
    finally:
        for c in canaries:
            c.unlink()
    out = _out(tmp_path)
    assert out.splitlines()[0].strip() != "0", out
    assert "PRESENT" not in out, out
    assert out.strip().endswith("done") and record["status"] == "ok"


def _limited(tmp_path, script: str, reason: str, **limits) -> dict:
    record = run_box(tmp_path, script, _backend("bwrap", **limits))
    assert record["status"] == "limit", (record["status"], record.get("limit"), _out(tmp_path)[-500:])
    assert record["limit"]["reason"] == reason, record["limit"]
    assert record["infra_failure"] is None  # the agent's own doing: kept, never retried
    return record


def test_a_memory_balloon_stops_at_the_memory_limit(tmp_path):
    record = _limited(tmp_path, f"{PY} 'b = []\nwhile True: b.append(bytearray(16 << 20))'", "memory",
                      memory="128m")
    if "memory" in record["limits"]["enforced_by_kernel"]:
        assert record["limits"]["peak"]["memory"] <= 160 << 20


def test_a_process_storm_stops_at_the_task_limit(tmp_path):
    _limited(tmp_path, "for i in $(seq 400); do sleep 30 & done; wait", "processes", processes=64)


def test_an_output_flood_is_capped_on_disk(tmp_path):
    _limited(tmp_path, "yes specsnap-flood-line", "output", output="1m")
    assert (tmp_path / "s1" / "transcript.jsonl").stat().st_size <= 1 << 20


def test_a_full_disk_stops_at_the_disk_limit(tmp_path):
    # (several files under the per-file cap, so only the total can stop them)
    _limited(tmp_path, "for i in $(seq 40); do head -c 4000000 /dev/urandom > blob$i; done; sleep 20", "disk",
             disk="32m")


def test_many_files_stop_at_the_entry_limit(tmp_path):
    _limited(tmp_path, "mkdir many && cd many && for i in $(seq 3000); do : > f$i; done; sleep 20", "files",
             files=500)


def test_a_huge_or_sparse_file_stops_at_the_file_size_limit(tmp_path):
    """Neither a dense nor a sparse file can pass the file-size limit (the write or the truncate fails)."""
    run_box(tmp_path, "head -c 3000000 /dev/zero > dense; truncate -s 4G sparse; echo sizes $(stat -c %s dense sparse)",
            _backend("bwrap", file_size="1m"))
    sandbox = tmp_path / "sandbox"
    assert (sandbox / "dense").stat().st_size <= 1 << 20
    assert not (sandbox / "sparse").exists() or (sandbox / "sparse").stat().st_size <= 1 << 20


def test_tmp_and_shm_are_private_and_capped(tmp_path):
    run_box(tmp_path, "head -c 40000000 /dev/zero > /tmp/x; echo tmp $?; head -c 40000000 /dev/zero > /dev/shm/y; "
                      "echo shm $?; ls -l /tmp/x /dev/shm/y", _backend("bwrap", tmp="8m"))
    out = _out(tmp_path) + (tmp_path / "s1" / "agent.stderr.log").read_text()
    assert "tmp 0" not in out and "shm 0" not in out, out
    assert "No space left" in out


def test_local_with_a_real_agent_needs_the_unconfined_flag(tmp_path):
    """`local` runs an agent unconfined on the host: with a real agent (a replay agent here) the plan
    is refused in one line naming the flag and the isolating backends; with the flag it plans and
    says once that the agent runs unconfined; a reference policy needs no flag."""
    from conftest import specsnap

    real = ["--override", "agent=[replay_command]", "--override", "workload=[tier_2]", "--override", "arm=[Vanilla]"]
    refused = specsnap("plan", "--results", str(tmp_path / "a"), *real, "--override", "sandbox.backend=local")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "unconfined" in refused.stderr and "sandbox.allow_unconfined=true" in refused.stderr
    assert "valid choices: bwrap, docker" in refused.stderr
    assert not (tmp_path / "a").exists() or not list((tmp_path / "a").rglob("trial.json"))
    allowed = specsnap("plan", "--results", str(tmp_path / "b"), *real, "--override", "sandbox.backend=local",
                       "--override", "sandbox.allow_unconfined=true")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stderr.count("UNCONFINED") == 1
    policy = specsnap("plan", "--results", str(tmp_path / "c"), "--override", "sandbox.backend=local")
    assert policy.returncode == 0 and "UNCONFINED" not in policy.stderr, policy.stderr


def test_a_mistyped_limit_is_one_line_with_the_choices(tmp_path):
    from conftest import specsnap

    result = specsnap("plan", "--results", str(tmp_path), "--override", "+sandbox.limits.memroy=2g")
    assert result.returncode == 2
    assert "unknown limit sandbox.limits.memroy" in result.stderr and "memory" in result.stderr
    bad = specsnap("plan", "--results", str(tmp_path), "--override", "sandbox.limits.memory=lots")
    assert bad.returncode == 2 and "is not a size" in bad.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give the sandbox a host uid of its own")
def test_run_as_root_the_agent_is_not_root_on_the_host(tmp_path):
    """A file only root may read, planted in a tree the sandbox must see (/opt), is unreadable inside:
    the agent's uid 1000 maps to a host uid of its own, with no capability; it cannot make a user
    namespace of its own either. After the session the tree is SpecSnap's again (git works in it)."""
    canary = Path("/opt") / f".specsnap-canary-{uuid.uuid4().hex[:8]}"
    canary.write_text("root's secret")
    canary.chmod(0o600)
    try:
        record = run_box(tmp_path, f"cat {canary}; echo read=$?; cat /proc/self/uid_map; unshare -U true; "
                                   "echo userns=$?; grep CapEff /proc/self/status; echo mine > mine.txt; echo w=$?",
                         _backend("bwrap"))
    finally:
        canary.unlink()
    out = _out(tmp_path)
    assert "root's secret" not in out and "read=1" in out, out
    rows = [line.split() for line in out.split("read=1")[1].split("userns")[0].strip().splitlines()]
    agent = [r for r in rows if r[0] == "1000"]  # (0 maps to 0 for bubblewrap's set-up; nothing inside is 0)
    assert agent and int(agent[0][1]) not in (0, os.getuid()), out
    assert "userns=1" in out and "CapEff:\t0000000000000000" in out and "w=0" in out, out
    assert record["status"] == "ok"
    sandbox = tmp_path / "sandbox"
    assert (sandbox / "mine.txt").stat().st_uid == os.geteuid()  # handed back when the session ended
    assert all(p.lstat().st_uid == os.geteuid() for p in sandbox.rglob("*"))


def test_under_docker_a_memory_balloon_ends_the_session_as_the_agents_limit(tmp_path, docker_image):
    """The engine kills the balloon at the container's memory limit; the shim reports it, and the
    session ends with `limit: memory`, the agent's doing, never an infrastructure failure to retry."""
    record = run_box(tmp_path, f"{PY} 'b = []\nwhile True: b.append(bytearray(16 << 20))'",
                     _backend("docker", docker_image, memory="128m"))
    assert record["status"] == "limit" and record["limit"]["reason"] == "memory", (record["status"], record["limit"])
    assert record["infra_failure"] is None


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give the sandbox a host uid of its own")
def test_under_docker_run_as_root_the_agent_is_not_root_on_the_host(tmp_path, docker_image):
    """Without a user namespace a container's uid 0 is the host's root: the agent runs as the
    sandbox's own host uid instead (the one bwrap maps to), with no capability, a passwd entry of its
    own, and the image's root-only files closed to it. Its work tree is writable while it runs and
    SpecSnap's again after."""
    record = run_box(tmp_path, "id -u; cat /etc/shadow; echo read=$?; grep CapEff /proc/self/status; "
                               "whoami; echo mine > mine.txt; echo w=$?", _backend("docker", docker_image))
    out = _out(tmp_path)
    uid = int(out.splitlines()[0])
    assert uid not in (0, os.getuid()), out
    assert "read=1" in out and "root:" not in out, out
    assert "CapEff:\t0000000000000000" in out and "agent" in out and "w=0" in out, out
    assert record["status"] == "ok"
    sandbox = tmp_path / "sandbox"
    assert all(p.lstat().st_uid == os.geteuid() for p in [sandbox, *sandbox.rglob("*")])


KERNEL = ("import ctypes, errno, os\n"
          "libc = ctypes.CDLL(None, use_errno=True)\n"
          "buf = ctypes.create_string_buffer(512)\n"
          "calls = {'keyctl': (250, 0, -3, 1), 'io_uring_setup': (425, 1, ctypes.addressof(buf)),\n"
          "         'userfaultfd': (323, 0), 'perf_event_open': (298, ctypes.addressof(buf), 0, -1, -1, 0),\n"
          "         'bpf': (321, 0, ctypes.addressof(buf), 48), 'unshare': (272, 0x20000),\n"
          "         'ptrace': (101, 16, os.getppid(), 0, 0), 'process_vm_readv': (310, os.getppid(), 0, 0, 0, 0, 0)}\n"
          "for name, (nr, *args) in calls.items():\n"
          "    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])\n"
          "    print('CALL', name, 'ok' if r >= 0 else errno.errorcode.get(ctypes.get_errno()))\n")


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_the_kernel_surface_an_unprivileged_process_could_reach_is_refused(tmp_path, backend, request):
    """Keyrings (shared by every process of a host uid), io_uring, userfaultfd, perf events, BPF,
    new namespaces and other processes' memory: each call is refused (EPERM), whoever runs SpecSnap."""
    box = _backend("bwrap") if backend == "bwrap" else _backend("docker", request.getfixturevalue("docker_image"))
    record = run_box(tmp_path, f"{PY} {_quote(KERNEL)}", box)
    calls = dict(line.split()[1:3] for line in _out(tmp_path).splitlines() if line.startswith("CALL "))
    assert len(calls) == 8, _out(tmp_path)
    assert all(result == "EPERM" for result in calls.values()), calls
    assert record["status"] == "ok"


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_no_namespace_of_its_own_and_threads_still_start(tmp_path, backend, request):
    """A clone that asks for a new namespace is refused; an ordinary thread and process start (the
    C library falls back from clone3 to clone)."""
    box = _backend("bwrap") if backend == "bwrap" else _backend("docker", request.getfixturevalue("docker_image"))
    script = ("import ctypes, errno, os, threading\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "r = libc.syscall(56, ctypes.c_long(0x10000000 | 17), 0, 0, 0, 0)\n"  # clone(CLONE_NEWUSER|SIGCHLD)
              "print('CLONE', 'ok' if r >= 0 else errno.errorcode.get(ctypes.get_errno()))\n"
              "if r == 0: os._exit(0)\n"
              "t = threading.Thread(target=print, args=('THREAD ran',)); t.start(); t.join()\n"
              "pid = os.fork()\n"
              "if pid == 0: os._exit(7)\n"
              "print('FORK', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    record = run_box(tmp_path, f"{PY} {_quote(script)}", box)
    out = _out(tmp_path)
    assert "CLONE EPERM" in out and "THREAD ran" in out and "FORK 7" in out, out
    assert record["status"] == "ok"
