#!/usr/bin/env bash
# Start or stop a Docker engine for SpecSnap's docker sandbox backend, on a machine with no
# service manager. Only ever with --iptables=false --bridge=none: the default bridge rewrites the
# host's firewall and turns on IP forwarding. Containers then have `lo` only (--network none) or
# the host's network (--network host); SpecSnap uses only the former for reference policies and
# scoring.
#
#   containers/engine.sh start   # no-op if an engine already answers on the socket
#   containers/engine.sh stop    # stops the engine this script started (by its PID), nothing else
#   containers/engine.sh status
#
# SPECSNAP_DOCKER_STATE (default /run/specsnap-dockerd) holds its pid file and log.
set -euo pipefail

state="${SPECSNAP_DOCKER_STATE:-/run/specsnap-dockerd}"
sock="/var/run/docker.sock"
pidfile="$state/dockerd.pid"

answers() { python3 - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
try:
    s.connect(sys.argv[1]); s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n"); ok = b"200 OK" in s.recv(64)
except OSError:
    ok = False
sys.exit(0 if ok else 1)
PY
}

case "${1:-}" in
  start)
    if answers; then echo "engine.sh: an engine already answers on $sock"; exit 0; fi
    command -v dockerd >/dev/null || { echo "engine.sh: dockerd is not installed (Debian: apt-get install docker.io)" >&2; exit 1; }
    [ "$(id -u)" = 0 ] || { echo "engine.sh: starting dockerd needs root" >&2; exit 1; }
    mkdir -p "$state"
    dockerd --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
            --host "unix://$sock" --pidfile "$pidfile" >"$state/dockerd.log" 2>&1 &
    echo $! >"$state/started-by-specsnap"
    for _ in $(seq 1 100); do answers && { echo "engine.sh: engine up (pid $(cat "$pidfile"))"; exit 0; }; sleep 0.2; done
    echo "engine.sh: dockerd did not answer within 20 s; see $state/dockerd.log" >&2
    exit 1
    ;;
  stop)
    if [ ! -f "$state/started-by-specsnap" ]; then echo "engine.sh: no engine started by this script"; exit 0; fi
    pid="$(cat "$state/started-by-specsnap")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$state/started-by-specsnap"
    echo "engine.sh: engine stopped"
    ;;
  status)
    if answers; then echo "engine.sh: an engine answers on $sock"; else echo "engine.sh: no engine answers on $sock"; exit 1; fi
    ;;
  *) echo "usage: containers/engine.sh start|stop|status" >&2; exit 2 ;;
esac
