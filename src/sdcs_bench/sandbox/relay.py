"""The only way out of a sandbox's network namespace: its own model proxy, through a unix socket.

    python -I -S -B relay.py --listen N=SOCKET [--listen ...] -- ARGV...

A sandboxed agent has a network namespace of its own (bwrap ``--unshare-net``, docker ``--network
none``): its loopback is not the host's, so no host port (another trial's proxy, a database, an
admin endpoint) and no abstract unix socket of the host can be reached. Its proxy is: the session
runner binds a unix socket on the host that connects to the proxy's port, the backend binds that
socket (and nothing else of the host's) into the sandbox, and this program, run first inside the
namespace, listens on 127.0.0.1:N there and carries each connection through the socket; then it
execs ARGV, which finds its endpoint at the same URL as it would outside.

Standard library only, and run as a file (it is imported by the host-side relay too): nothing of
sdcs_bench is imported. At most :data:`MAX_CONNECTIONS` connections are carried at once, each by
two threads; more are closed at once (no thread is kept per waiting connection).
"""

from __future__ import annotations

import os
import socket
import sys
import threading

MAX_CONNECTIONS = 32
BUFFER = 65536


def _pump(a: socket.socket, b: socket.socket, done: threading.Semaphore | None) -> None:
    try:
        while data := a.recv(BUFFER):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (a, b):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if done is not None:
            done.release()


def forward(server: socket.socket, connect, max_connections: int = MAX_CONNECTIONS) -> None:
    """Each connection accepted on ``server``, piped both ways to a new ``connect()``, at most
    ``max_connections`` at once; returns when ``server`` is closed."""
    slots = threading.Semaphore(2 * max_connections)  # two pumps per connection
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        if not slots.acquire(blocking=False):
            conn.close()
            continue
        if not slots.acquire(blocking=False):
            slots.release()
            conn.close()
            continue
        try:
            up = connect()
        except OSError:
            conn.close()
            slots.release()
            slots.release()
            continue
        threading.Thread(target=_pump, args=(conn, up, slots), daemon=True).start()
        threading.Thread(target=_pump, args=(up, conn, slots), daemon=True).start()


def unix(path: str):
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(path)
        return sock
    return connect


def tcp(port: int):
    def connect() -> socket.socket:
        return socket.create_connection(("127.0.0.1", port))
    return connect


def host_side(path: str, port: int) -> socket.socket:
    """On the host: a unix socket at ``path`` (mode 0600) whose connections go to 127.0.0.1:``port``;
    served by a daemon thread until the returned socket is closed."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    os.chmod(path, 0o666)  # the sandbox's user may be another uid than the runner's
    server.listen(64)
    threading.Thread(target=forward, args=(server, tcp(port)), daemon=True, name=f"specsnap-relay-{port}").start()
    return server


def listen_inside(pairs: list[tuple[int, str]]) -> None:
    """Inside the namespace: a child that listens on 127.0.0.1:N for each (N, socket) and carries
    connections to the socket; returns once every port is listening."""
    if not pairs:
        return
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        os.close(ready_r)
        servers = []
        for port, path in pairs:
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", port))
            server.listen(64)
            servers.append((server, path))
        os.write(ready_w, b"1")
        os.close(ready_w)
        for server, path in servers[1:]:
            threading.Thread(target=forward, args=(server, unix(path)), daemon=True).start()
        forward(servers[0][0], unix(servers[0][1]))
        os._exit(0)
    os.close(ready_w)
    os.read(ready_r, 1)  # listening before the command starts
    os.close(ready_r)


def main(args: list[str]) -> None:
    i = args.index("--")
    pairs = []
    for j in range(0, i, 2):
        if args[j] != "--listen":
            raise SystemExit(f"relay: unknown argument {args[j]!r}")
        port, path = args[j + 1].split("=", 1)
        pairs.append((int(port), path))
    listen_inside(pairs)
    os.execvp(args[i + 1], args[i + 1:])


if __name__ == "__main__":
    main(sys.argv[1:])
