"""Run one command in a fresh container with the docker SDK, as if it were a local process.

    python -I -B container_shim.py SPEC_JSON -- ARGV...

The docker backend's ``wrap`` puts this in front of the agent's (or the scorer's) command line,
so the session runner keeps its one interface: a process whose stdin, stdout, stderr and exit code
are the container's. The container gets this process's environment (the sandbox marker
included, so a kill by marker reaches what runs inside it), carries the sandbox's label, and is
removed when the command ends. If this process is killed (a cleave, a timeout, a killed study),
everything in the container dies with it through the lifeline (a FIFO only this process writes to,
watched from inside), and the backend's ``reap`` removes the container by its label. Run as a
file, so it imports nothing of sdcs_bench.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (run as a file, beside relay.py)
from relay import forward, listen_inside, tcp  # noqa: E402


def _copy_stdin(sock) -> None:
    raw = getattr(sock, "_sock", sock)
    try:
        while True:
            chunk = sys.stdin.buffer.read1(65536)
            if not chunk:
                break
            raw.sendall(chunk)
    except OSError:
        pass  # the command exited without reading everything
    finally:
        try:
            raw.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _copy_output(stream) -> None:
    for out, err in stream:
        if out:
            sys.stdout.buffer.write(out)
            sys.stdout.buffer.flush()
        if err:
            sys.stderr.buffer.write(err)
            sys.stderr.buffer.flush()


def _relay(fifo: str, number: int) -> None:
    """Copy what the container writes into the FIFO to our inherited descriptor ``number``."""
    try:
        with open(fifo, "rb", buffering=0) as src:
            while chunk := src.read(65536):
                os.write(number, chunk)
    except OSError:
        pass
    finally:
        try:
            os.close(number)
        except OSError:
            pass


# -- inside the container, before the command ---------------------------------------------------
def inside(args: list[str]) -> None:
    """``--inside KIND:PATH=N ... -- ARGV``: the lifeline watcher; for each port a child listening on
    127.0.0.1:N (the container has no other network) that carries each connection through the unix
    socket at PATH to this shim on the host, which connects it to the host's 127.0.0.1:N; each
    relayed descriptor's FIFO opened at its number N; then exec ARGV, which thus inherits the
    descriptors and finds its endpoint as it would outside a container."""
    i = args.index("--")
    pairs = [(kind, *spec.rsplit("=", 1)) for kind, spec in (a.split(":", 1) for a in args[:i])]
    for kind, path, _ in pairs:
        if kind == "life" and os.fork() == 0:
            # The shim on the host is the lifeline's only writer: when it is gone (even by SIGKILL,
            # with the session runner), the read ends and everything in the container is killed.
            # Opened without waiting for a writer: if the shim is already gone, the first read is
            # the end, at once (a blocking open would wait for a writer that never comes).
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            while os.read(fd, 64):
                pass
            os.kill(-1, signal.SIGKILL)
            os._exit(0)
    listen_inside([(int(n), path) for kind, path, n in pairs if kind == "port"])
    for kind, path, n in pairs:
        if kind == "fd":
            fd = os.open(path, os.O_WRONLY)
            if fd != int(n):
                os.dup2(fd, int(n))
                os.close(fd)
    os.execvp(args[i + 1], args[i + 1:])


def _relays(spec: dict, argv: list[str], scratch: str) -> list[str]:
    """A FIFO per inherited descriptor and a unix socket per port, mounted into the container, and
    the lifeline, each the container's user's to open; the command line that sets them up inside it."""
    uid, gid = (int(n) for n in spec["user"].split(":"))

    def theirs(path: str) -> str:
        if (uid, gid) != (os.getuid(), os.getgid()):
            os.chown(path, uid, gid)
        return path

    pairs = []
    for number in spec["pass_fds"]:
        fifo = os.path.join(scratch, f"fd-{number}")
        os.mkfifo(fifo, 0o600)
        theirs(fifo)
        target = f"/run/specsnap/fd-{number}"
        spec["mounts"].append({"type": "bind", "source": fifo, "target": target, "read_only": False})
        threading.Thread(target=_relay, args=(fifo, number), daemon=True).start()
        pairs.append(f"fd:{target}={number}")
    for port in spec["ports"]:
        path = os.path.join(scratch, f"port-{port}.sock")
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        theirs(path)
        server.listen(64)
        target = f"/run/specsnap/port-{port}.sock"
        spec["mounts"].append({"type": "bind", "source": path, "target": target, "read_only": False})
        threading.Thread(target=forward, args=(server, tcp(port)), daemon=True).start()
        pairs.append(f"port:{target}={port}")
    life = os.path.join(scratch, "lifeline")
    os.mkfifo(life, 0o600)
    theirs(life)
    os.open(life, os.O_RDWR)  # never closed: held until this process ends, however it ends
    spec["mounts"].append({"type": "bind", "source": life, "target": "/run/specsnap/lifeline", "read_only": True})
    return [spec["python"], "-I", "-S", "-B", __file__, "--inside", "life:/run/specsnap/lifeline=0", *pairs, "--", *argv]


def main() -> int:
    spec = json.loads(sys.argv[1])
    # The relays' directory is named by the sandbox, so the backend's reap removes it if we are killed.
    scratch = tempfile.mkdtemp(prefix=f"{spec['relay_prefix']}")
    try:
        return _main(spec, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _main(spec: dict, scratch: str) -> int:
    import docker

    argv = _relays(spec, sys.argv[sys.argv.index("--") + 1:], scratch)
    client = docker.DockerClient(base_url=spec["engine"], timeout=3600)
    api = client.api
    mounts = [docker.types.Mount(m["target"], m.get("source"), type=m["type"], read_only=m.get("read_only", False),
                                 tmpfs_size=m.get("size"))
              for m in spec["mounts"]]
    limits = dict(spec["limits"])
    limits["ulimits"] = [docker.types.Ulimit(name=u["Name"], soft=u["Soft"], hard=u["Hard"]) for u in limits["ulimits"]]
    host_config = api.create_host_config(
        mounts=mounts, network_mode=spec["network"], read_only=True, cap_drop=["ALL"],
        security_opt=["no-new-privileges", f"seccomp={spec['seccomp']}"], init=True, **limits,
    )
    created = api.create_container(
        spec["image"], command=argv, environment=dict(os.environ), working_dir=spec["workdir"],
        user=spec["user"], labels=spec["labels"], host_config=host_config,
        stdin_open=True,  # with attach (detach=False): StdinOnce, our stdin's EOF reaches the command
    )
    container = client.containers.get(created["Id"])

    def stop(signum, frame):  # a polite kill of this process ends the container too
        try:
            container.kill()
        except Exception:
            pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        output = container.attach(stdout=True, stderr=True, stream=True, demux=True, logs=True)
        sock = container.attach_socket(params={"stdin": 1, "stream": 1})
        container.start()
        reader = threading.Thread(target=_copy_output, args=(output,), daemon=True)
        reader.start()
        threading.Thread(target=_copy_stdin, args=(sock,), daemon=True).start()
        code = container.wait()["StatusCode"]
        reader.join(timeout=30)
        try:  # the engine's word on how it ended: killed at its memory limit is the agent's doing
            container.reload()
            with open(spec["report"], "w") as fh:
                json.dump({"oom_killed": bool(container.attrs["State"].get("OOMKilled"))}, fh)
        except Exception:
            pass
        return code
    finally:
        try:
            container.remove(force=True)
        except Exception:
            pass


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inside"]:  # this same file, run inside the container (it is mounted there)
        inside(sys.argv[2:])
    sys.exit(main())
