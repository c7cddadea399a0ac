"""Isolation and the leak check that runs before every session."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from sdcs_bench.sandbox.leakcheck import leak_check
from sdcs_bench.core.paths import project_root
from sdcs_bench.sandbox import SandboxLeak, make_backend



# -- the contract every isolating backend keeps (bwrap, docker) ----------------------------------
def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return home


def test_hides_the_project_hidden_tests_gold_and_home(isolated_backend, make_sandbox, tier2, tmp_path):
    sandbox, home = make_sandbox(), _home(tmp_path)
    secrets = [*tier2.secret_dirs(), project_root() / "conf", project_root() / "tiers", Path.home() / ".cache"]
    assert all(p.exists() for p in secrets)
    assert isolated_backend.leak_probe(sandbox, home, secrets) == []
    assert leak_check(sandbox, home, tier2, isolated_backend)["isolated"]


def test_the_leak_probe_reports_what_it_sees_and_fails_when_it_cannot_look(isolated_backend, make_sandbox, tmp_path,
                                                                          monkeypatch):
    """The probe is a check, not a hope: a path that is visible inside is named (the sandbox's own
    directory is), and a probe that did not run to its end raises rather than answering "nothing"."""
    sandbox, home = make_sandbox(), _home(tmp_path)
    hidden = project_root() / "tiers"
    assert isolated_backend.leak_probe(sandbox, home, [hidden, sandbox, home]) == [sandbox, home]
    monkeypatch.setattr(isolated_backend, "run", lambda *a, **k: (127, b"", b"sh: not found"))
    with pytest.raises(SandboxLeak, match="did not run.*127.*not found"):
        isolated_backend.leak_probe(sandbox, home, [hidden])
    monkeypatch.setattr(isolated_backend, "run", lambda *a, **k: (0, b"", b""))  # killed before its last line
    with pytest.raises(SandboxLeak, match="did not run"):
        isolated_backend.leak_probe(sandbox, home, [hidden])

    def unconfinable(*a, **k):
        raise OSError("confine: could not confine the sandbox: (a test's failure)")

    monkeypatch.setattr(isolated_backend, "run", unconfinable)  # a sandbox that would not start
    with pytest.raises(SandboxLeak, match="did not run.*could not confine"):
        isolated_backend.leak_probe(sandbox, home, [hidden])


def test_the_guards_check_runs_after_the_leak_probe_in_the_same_sandbox(isolated_backend, make_sandbox, tmp_path,
                                                                          monkeypatch):
    """Before a cut session one sandbox start does both: the probe (what it sees is still named),
    then the guard's check, judged from its exit status and stderr: a guard git runs refuses the
    update with its own message; one git no longer runs lets it land, which is judged unverified
    and taken back out. A probe whose command did not get to say how it ended is a failed check."""
    from sdcs_bench.sandbox.base import SANDBOX_MARKER, base_env, sandbox_marker
    from sdcs_bench.sandbox.guard_install import VERIFY_COMMAND, VERIFY_REF, judge_verify, verifying

    sandbox, home = make_sandbox(), _home(tmp_path)
    hidden = project_root() / "tiers"
    env = {**base_env(home), SANDBOX_MARKER: sandbox_marker(sandbox)}
    with verifying(sandbox):
        probe = isolated_backend.probe(sandbox, home, [hidden, sandbox], then=VERIFY_COMMAND, env=env)
        assert probe.visible == [sandbox] and probe.status not in (0, None), probe
        assert judge_verify(sandbox, home, isolated_backend, env, probe.status, probe.stderr) == {"verified": True}
    (sandbox / ".git" / "hooks" / "reference-transaction").unlink()  # a guard git no longer runs
    with verifying(sandbox):
        probe = isolated_backend.probe(sandbox, home, [hidden], then=VERIFY_COMMAND, env=env)
        assert probe.visible == [] and probe.status == 0, probe
        judged = judge_verify(sandbox, home, isolated_backend, env, probe.status, probe.stderr)
    assert judged["verified"] is False and "did not run the guard hook" in judged["problem"], judged
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=sandbox, capture_output=True, text=True)
    assert VERIFY_REF not in refs.stdout.split(), "the update that landed was not taken back out"
    # The command after the probe may run the agent's own hook: one that garbles the last line or
    # kills the shell leaves how it ended unsaid (judged unverified), never the probe's answer.
    for garbling in (("sh", "-c", "printf x"), ("sh", "-c", "kill -KILL $PPID")):
        probe = isolated_backend.probe(sandbox, home, [hidden, sandbox], then=garbling, env=env)
        assert probe.visible == [sandbox] and probe.status is None, (garbling, probe)
        assert judge_verify(sandbox, home, isolated_backend, env, probe.status, probe.stderr)["verified"] is False
    # (no "done" line: the probe did not run to its end, with a command after it or not)
    monkeypatch.setattr(isolated_backend, "run", lambda *a, **k: (0, f"{sandbox}\n".encode(), b""))
    for then in (VERIFY_COMMAND, ()):
        with pytest.raises(SandboxLeak, match="did not run"):
            isolated_backend.probe(sandbox, home, [hidden], then=then, env=env)


def test_can_write_only_its_own_directory(isolated_backend, make_sandbox, tmp_path):
    sandbox, home = make_sandbox(), _home(tmp_path)
    env = {"PATH": "/usr/bin:/bin"}
    outside = tmp_path / "outside.txt"  # under /tmp: lands in the sandbox's private tmpfs, if anywhere
    isolated_backend.run(["sh", "-c", f"echo x > {outside}"], workdir=sandbox, home=home, env=env, timeout=60)
    assert not outside.exists()
    code, _, _ = isolated_backend.run(["sh", "-c", "echo x > /var/tmp/specsnap-escape"], workdir=sandbox, home=home,
                                      env=env, timeout=60)
    assert code != 0 and not Path("/var/tmp/specsnap-escape").exists()  # the root file system is read-only
    code, _, _ = isolated_backend.run(["sh", "-c", "echo x > inside.txt && echo y > $HOME/h"], workdir=sandbox,
                                      home=home, env={**env, "HOME": str(home)}, timeout=60)
    assert code == 0 and (sandbox / "inside.txt").exists() and (home / "h").exists()


def test_read_only_paths_inside_the_sandbox_stay_unchanged(isolated_backend, make_sandbox, tmp_path):
    sandbox, home = make_sandbox(), _home(tmp_path)
    guarded = sandbox / "guarded"
    guarded.mkdir()
    (guarded / "t.py").write_text("original\n")
    code, _, err = isolated_backend.run(["sh", "-c", "echo forged > guarded/t.py; rm -f guarded/t.py; echo ok > free.txt"],
                                        workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"}, timeout=60,
                                        read_only=[guarded])
    assert (guarded / "t.py").read_text() == "original\n", err
    assert (sandbox / "free.txt").read_text() == "ok\n"


def test_no_network_but_the_named_port(isolated_backend, make_sandbox, tmp_path):
    """Reference policies and scoring get no network at all; a harness that needs its endpoint on
    127.0.0.1 reaches exactly that port (relayed), never another host port: the sandbox's network is
    its own, whatever it asks for."""
    import socket
    import sys

    listeners = []
    for _ in range(2):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listeners.append(listener)
    port, other = (sock.getsockname()[1] for sock in listeners)
    probe = ("import socket,sys\nfor port in sys.argv[1:]:\n try:\n  socket.create_connection(('127.0.0.1', int(port)), "
             "timeout=5); print('reached', port)\n except OSError as e:\n  print('refused', port)")
    sandbox, home = make_sandbox(), _home(tmp_path)
    try:
        for network, ports, expected in ((False, (), f"refused {port}\nrefused {other}\n"),
                                         (True, (), f"refused {port}\nrefused {other}\n"),
                                         (True, (port,), f"reached {port}\nrefused {other}\n")):
            code, out, err = isolated_backend.run([sys.executable, "-I", "-c", probe, str(port), str(other)],
                                                  workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"},
                                                  timeout=60, network=network, ports=ports)
            assert out.decode() == expected, (network, ports, out, err)
    finally:
        for listener in listeners:
            listener.close()


def test_the_host_processes_are_out_of_sight(isolated_backend, make_sandbox, tmp_path):
    import os
    import sys

    sandbox, home = make_sandbox(), _home(tmp_path)
    code, out, err = isolated_backend.run(
        [sys.executable, "-I", "-c", f"import os; print(os.path.exists('/proc/{os.getpid()}/environ'), os.getpid())"],
        workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"}, timeout=60)
    seen, pid = out.decode().split()
    assert code == 0 and seen == "False" and int(pid) != os.getpid(), (out, err)


def test_stdin_exit_status_and_inherited_descriptors_pass_through(isolated_backend, make_sandbox, tmp_path):
    """The session runner and the scorer drive every backend alike: input on stdin, the exit status,
    separate stdout and stderr, and a descriptor inherited for writing (the verdict pipe)."""
    import subprocess
    import sys

    from sdcs_bench.scoring.verdicts import StreamReader

    sandbox, home = make_sandbox(), _home(tmp_path)
    stream = StreamReader()
    script = ("import os,sys; data=sys.stdin.read(); os.write(%d, b'verdict ' + data.encode()); "
              "print('out'); print('err', file=sys.stderr); sys.exit(7)" % stream.write_fd)
    proc = isolated_backend.spawn([sys.executable, "-I", "-c", script], workdir=sandbox, home=home,
                                  env={"PATH": "/usr/bin:/bin"}, pass_fds=(stream.write_fd,), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(b"from the runner\n", timeout=60)
    assert (proc.returncode, out, err) == (7, b"out\n", b"err\n")
    assert stream.lines() == ["verdict from the runner"]


def test_a_timed_out_command_is_gone_with_everything_it_started(isolated_backend, make_sandbox, tmp_path):
    sandbox, home = make_sandbox(), _home(tmp_path)
    code, _, _ = isolated_backend.run(["sh", "-c", "sleep 2718 & sleep 2719"], workdir=sandbox, home=home,
                                      env={"PATH": "/usr/bin:/bin"}, timeout=3)
    assert code is None
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).startswith("sleep 271")]
    assert isolated_backend.reap(sandbox) == []  # nothing left to remove


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


# -- privileges: what an agent running as whoever runs SpecSnap (root here) cannot do ---------------
PROBE = r"""
import json, os, socket, subprocess, sys
out = {}
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
out["caps"] = {k: int(status[k].strip(), 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
out["no_new_privs"] = status["NoNewPrivs"].strip()
def run(*argv):
    try:
        return subprocess.run(argv, capture_output=True, timeout=20).returncode
    except OSError as exc:
        return f"cannot run: {exc.strerror}"
out["remount_root_rw"] = run("mount", "-o", "remount,rw", "/")
out["mount_tmpfs"] = run("mount", "-t", "tmpfs", "none", os.environ["HOME"])
out["bind_root"] = run("mount", "--bind", "/", os.environ["HOME"])
out["unshare_then_bind_root"] = run("unshare", "-Urm", "sh", "-c", "mount --bind / $HOME && ls $HOME" + sys.argv[1])
out["chroot"] = run("chroot", "/", "true")
writes = {}
for target in sys.argv[2:]:
    try:
        with open(target, "w") as fh:
            fh.write("import os; os.system('touch /var/tmp/specsnap-pwned-pth')\n")
        writes[target] = "written"
    except OSError as exc:
        writes[target] = exc.strerror
out["writes"] = writes
sockets = []
for root in ("/run", "/var/run", "/var/lib", "/tmp"):
    for dirpath, dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                if os.path.exists(path) and __import__("stat").S_ISSOCK(os.lstat(path).st_mode):
                    sockets.append(path)
            except OSError:
                pass
out["sockets"] = sockets
print(json.dumps(out))
"""


def test_an_agent_cannot_gain_privileges_or_reach_the_host(isolated_backend, make_sandbox, tmp_path):
    """Capability probes, whoever runs SpecSnap: no capability in any set and no new privileges, no
    (re)mount, not even from a new user namespace, no write into our own interpreter's tree (a
    ``.pth`` there would run in every later host Python) or the project, and no unix socket of the
    host's (a Docker engine's socket is root on the host)."""
    import json
    import sys
    import sysconfig

    import socket
    import uuid

    sandbox, home = make_sandbox(), _home(tmp_path)
    # A unix socket of the host's, as a Docker engine or a munge daemon has one under /run.
    host_socket = Path("/run") / f"specsnap-probe-{uuid.uuid4().hex[:8]}.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(host_socket))
    listener.listen(1)
    purelib = Path(sysconfig.get_paths()["purelib"])
    targets = [purelib / "specsnap-probe.pth", Path(sys.prefix) / "specsnap-probe", project_root() / "specsnap-probe",
               Path("/usr/lib/specsnap-probe")]
    try:
        code, out, err = isolated_backend.run(
            [sys.executable, "-I", "-c", PROBE, str(project_root()), *map(str, targets)], workdir=sandbox, home=home,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home)}, timeout=120)
    finally:
        listener.close()
        host_socket.unlink()
    assert code == 0, err.decode()
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["caps"] == {"CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0, "CapAmb": 0}, seen
    assert seen["no_new_privs"] == "1"
    for attempt in ("remount_root_rw", "mount_tmpfs", "bind_root", "unshare_then_bind_root", "chroot"):
        assert seen[attempt] != 0, (attempt, seen)
    assert all(v != "written" for v in seen["writes"].values()), seen["writes"]
    assert not any(t.exists() for t in targets)
    assert seen["sockets"] == [], seen["sockets"]
    assert not Path("/var/tmp/specsnap-pwned-pth").exists()


def test_local_backend_is_not_isolated_and_says_so(make_sandbox, tier2, tmp_path):
    from sdcs_bench.sandbox.local import LocalBackend

    LocalBackend._warned = False
    backend = make_backend("local")
    with pytest.warns(UserWarning, match="no isolation"):
        backend.wrap(["true"], workdir=tmp_path, home=tmp_path, network=False, ro_binds=[])
    assert not leak_check(make_sandbox(), tmp_path, tier2, backend)["isolated"]


def test_leak_check_catches_a_copied_hidden_test_and_the_canary(make_sandbox, tier2, tmp_path):
    backend = make_backend("local")
    sandbox = make_sandbox()
    shutil.copyfile(tier2.hidden_dir / "tests" / "test_baseline.py", sandbox / "tests" / "copied.py")
    with warnings.catch_warnings(), pytest.raises(SandboxLeak, match="canary"):
        warnings.simplefilter("ignore")
        leak_check(sandbox, tmp_path, tier2, backend)
    (sandbox / "tests" / "copied.py").unlink()
    gold = tier2.requirements[0].gold.read_text()
    stripped = "\n".join(l for l in gold.splitlines() if tier2.canary not in l)
    (sandbox / "notes.txt").write_text(stripped)
    leak_check(sandbox, tmp_path, tier2, backend)  # content without the canary is fine...
    shutil.copyfile(tier2.requirements[0].gold, sandbox / "gold.patch")
    with pytest.raises(SandboxLeak):
        leak_check(sandbox, tmp_path, tier2, backend)  # ...but a gold file is not


def test_unknown_backend_names_the_choices():
    with pytest.raises(Exception, match="valid choices: auto, bwrap, docker, local"):
        make_backend("docker-desktop")


@pytest.mark.parametrize("failure", [OSError, KeyboardInterrupt], ids=["a step fails", "interrupted"])
def test_a_sandbox_that_cannot_be_confined_never_runs_its_command(make_sandbox, tmp_path, monkeypatch, failure):
    """Run as root, bubblewrap is started and confined from SpecSnap's own process while it waits
    (cgroups, limits, the user map, no nested user namespace: sandbox/confine.py). If a step fails,
    or the job is interrupted there, the start fails, bubblewrap and its waiting sandbox are killed
    before the command ran, and the sandbox is reaped (its work tree handed back, its cgroups gone);
    the next sandbox is confined."""
    import os

    from sdcs_bench.sandbox import cgroup, confine
    from sdcs_bench.sandbox.base import sandbox_marker
    from sdcs_bench.sandbox.bwrap import BwrapBackend

    backend = make_backend("bwrap")
    sandbox, home = make_sandbox(), _home(tmp_path)
    if not BwrapBackend.available() or backend.sandbox_uid(sandbox) is None:
        pytest.skip("the user map is made only when SpecSnap runs as root with setpriv and nsenter")
    ran = sandbox / "ran"
    real = confine._confine_sandbox
    calls = []

    def failing(bwrap, pid, options):  # (its last step fails: the sandbox has its map, and must not go on)
        calls.append(pid)
        real(bwrap, pid, options)
        raise failure("could not forbid user namespaces in the sandbox (a test's failure)")

    monkeypatch.setattr(confine, "_confine_sandbox", failing)
    said = "could not confine the sandbox" if failure is OSError else "a test's failure"
    command = ["/bin/sh", "-c", f"touch {ran}; exec sleep 30"]
    with pytest.raises(failure, match=said):  # (the start alone: nothing reaps after it)
        backend.spawn(command, workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"})
    assert calls and _dead(calls[0])  # (bubblewrap's waiting sandbox is gone with it, long before 30 s)
    assert not ran.exists()
    backend.reap(sandbox)
    with pytest.raises(failure, match=said):  # a command run: the failed start is reaped as any command is
        backend.run(command, workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert _dead(calls[-1]) and not ran.exists()
    assert os.stat(sandbox).st_uid == os.getuid()  # handed back
    assert not cgroup.kill(sandbox_marker(sandbox))  # nothing left in its cgroups
    monkeypatch.setattr(confine, "_confine_sandbox", real)
    code, out, err = backend.run(["/bin/sh", "-c", f"cat /proc/sys/user/max_user_namespaces; id -u; touch {ran}"],
                                 workdir=sandbox, home=home, env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert code == 0, err
    assert out.decode().split() == ["0", "1000"] and ran.exists()


def _dead(pid: int, wait_s: float = 10.0) -> bool:
    """The process is gone or a zombie (killed, not yet reaped by whoever inherited it)."""
    import time

    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_the_scaffold_repository_is_small_and_quiet(make_sandbox, tmp_path):
    """What every stage archives and restores: the baseline's objects in one pack (not a file per
    object), no template's sample hooks, and no automatic housekeeping: a commit in the sandbox
    starts no `git maintenance` (nor `gc --auto`) process."""
    sandbox = make_sandbox("Vanilla")
    git = sandbox / ".git"
    loose = [p for p in (git / "objects").iterdir() if len(p.name) == 2]
    assert loose == [] and len(list((git / "objects" / "pack").glob("*.pack"))) == 1
    assert sorted(p.name for p in (git / "hooks").iterdir()) == ["reference-transaction"]
    assert not (git / "description").exists()
    said = subprocess.run(["git", "config", "--file", str(git / "config"), "--list"], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    assert {"gc.auto=0", "maintenance.auto=false", "commit.gpgsign=false", "user.name=SpecSnap Agent"} <= set(said)
    (sandbox / "ledger" / "extra.py").write_text("X = 1\n")
    trace = tmp_path / "trace"
    env = {**os.environ, "GIT_TRACE": str(trace), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["add", "-A"], ["commit", "-q", "--no-verify", "-m", "more"]):
        subprocess.run(["git", *args], cwd=sandbox, env=env, check=True, capture_output=True)
    started = trace.read_text()
    assert "built-in: git commit" in started and "maintenance" not in started and "gc --auto" not in started
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=sandbox, check=True, capture_output=True)


def test_the_baselines_packs_stay_under_the_snapshots_cap_on_one_file(tmp_path):
    """A snapshot leaves out a file over its cap: the baseline's objects go in packs of at most the
    given size (three incompressible files of 600 KiB under a 1 MiB limit: several packs), and stay
    loose where the cap is below git's smallest pack limit."""
    from sdcs_bench.core.gitutil import PACK_MIN_BYTES, commit_all, init_repo

    for limit, packed in ((PACK_MIN_BYTES, True), (PACK_MIN_BYTES // 2, False)):
        repo = tmp_path / f"repo-{limit}"
        repo.mkdir()
        for i in range(3):
            (repo / f"blob{i}.bin").write_bytes(os.urandom(600 << 10))
        init_repo(repo)
        commit_all(repo, "baseline", max_pack_bytes=limit)
        packs = list((repo / ".git" / "objects" / "pack").glob("*.pack"))
        loose = [p for p in (repo / ".git" / "objects").iterdir() if len(p.name) == 2]
        if packed:
            assert len(packs) >= 2 and loose == [] and all(p.stat().st_size <= limit for p in packs), packs
        else:
            assert packs == [] and loose, "below git's smallest pack limit the objects stay loose"
        subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, check=True, capture_output=True)
