"""What a live session consumes, watched from the host: the agent's output streamed to disk and
capped, and a monitor that ends the session at the first limit it hits (docs/sandboxes.md).

The kernel enforces what it can (the sandbox's cgroups: memory, tasks, CPU; resource limits: file
size, descriptors; tmpfs sizes); the monitor reads what the kernel stopped (an OOM kill, a refused
fork) and measures what no kernel limit covers here: the bytes and entries the work tree and HOME
hold, and, where no memory or task controller could be had, the agent's processes' memory and
number. The first limit hit wins: the session's process group is killed and the session ends with
``limit: <reason>`` (:func:`sdcs_bench.sandbox.limits.hit`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from sdcs_bench.core import safefs
from sdcs_bench.sandbox.base import Backend
from sdcs_bench.sandbox.limits import Limits, hit

CHUNK = 65536
POLL_S = 0.1  # the kernel's counters and the processes' memory
DISK_POLL_S = 1.0  # a walk of the work tree and HOME


class Stopper:
    """The first limit hit, and what to do about it (kill the session): thread-safe, once."""

    def __init__(self, kill: Callable[[], None]) -> None:
        self.kill = kill
        self.limit: dict[str, str] | None = None
        self._lock = threading.Lock()

    def __call__(self, reason: str, detail: str) -> None:
        with self._lock:
            if self.limit is not None:
                return
            self.limit = hit(reason, detail)
        self.kill()


def pump(src: IO[bytes], dest: IO[bytes], cap: int, stop: Stopper, name: str) -> threading.Thread:
    """Copy ``src`` (the agent's stdout or stderr) to ``dest`` as it comes, at most ``cap`` bytes;
    past it the rest is read and dropped (so the agent never blocks on a full pipe before it is
    killed) and the session is stopped at ``limit: output``. Never holds more than a chunk."""

    def run() -> None:
        kept = 0
        try:
            while chunk := src.read1(CHUNK) if hasattr(src, "read1") else src.read(CHUNK):
                if kept < cap:
                    part = chunk[: cap - kept]
                    dest.write(part)
                    dest.flush()
                    kept += len(part)
                    if len(part) < len(chunk):
                        stop("output", f"{name} passed {cap} bytes")
                else:
                    stop("output", f"{name} passed {cap} bytes")
        except (OSError, ValueError):
            pass
        finally:
            try:
                src.close()
            except OSError:
                pass

    thread = threading.Thread(target=run, name=f"specsnap-{name}", daemon=True)
    thread.start()
    return thread


def tree_usage(roots: list[Path], max_entries: int) -> tuple[int, int]:
    """(allocated bytes, entries) under ``roots``, stopping once past ``max_entries`` (a walk that
    follows no link and reaches any depth: :func:`sdcs_bench.core.safefs.walk`)."""
    used = entries = 0
    for root in roots:
        if not root.is_dir():
            continue
        for _rel, st in safefs.walk(root):
            used += st.st_blocks * 512
            entries += 1
            if entries > max_entries:
                return used, entries
    return used, entries


def _tree(pid: int) -> list[int]:
    """``pid`` and every process descending from it (from /proc)."""
    from sdcs_bench.sandbox.reaper import descendants

    return [pid, *descendants(pid)]


def _rss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    return total


class Monitor:
    """Watches one live session until :meth:`stop`; calls ``stopper`` at the first limit hit."""

    def __init__(self, backend: Backend, workdir: Path, home: Path, pid: int, stopper: Stopper,
                 extra: Callable[[], dict[str, str] | None] = lambda: None) -> None:
        self.backend, self.workdir, self.home, self.pid = backend, workdir, home, pid
        self.limits: Limits = backend.limits
        self.stopper = stopper
        self.extra = extra  # another watcher's limit (the cut's watcher: inotify watches)
        self.enforced = backend.enforced(workdir)
        self.peak = {"memory": 0, "disk": 0, "entries": 0}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="specsnap-limits", daemon=True)

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching, after one last look at what the kernel stopped (an OOM kill at the end)."""
        self._done.set()
        self._thread.join(timeout=30)
        self._kernel()

    def _kernel(self) -> None:
        events = self.backend.limit_events(self.workdir)
        if events.get("oom_kills"):
            self.stopper("memory", f"{events['oom_kills']} process(es) killed at the memory limit ({self.limits.memory} bytes)")
        elif events.get("fork_refusals"):
            self.stopper("processes", f"{events['fork_refusals']} fork(s) refused at {self.limits.processes} tasks")
        other = self.extra()
        if other:
            self.stopper(other["reason"], other["detail"])

    def _run(self) -> None:
        next_disk = 0.0
        while not self._done.wait(POLL_S):
            try:
                self._kernel()
                now = self.backend.memory_now(self.workdir)
                if "memory" not in self.enforced or "processes" not in self.enforced:
                    pids = _tree(self.pid)
                    if "processes" not in self.enforced and len(pids) > self.limits.processes:
                        self.stopper("processes", f"more than {self.limits.processes} processes")
                    if "memory" not in self.enforced:
                        now = _rss(pids)
                        if now > self.limits.memory:
                            self.stopper("memory", f"{now} bytes resident, past {self.limits.memory}")
                if now:
                    self.peak["memory"] = max(self.peak["memory"], now)
                if time.monotonic() >= next_disk:
                    used, entries = tree_usage([self.workdir, self.home], self.limits.files)
                    self.peak["disk"] = max(self.peak["disk"], used)
                    self.peak["entries"] = max(self.peak["entries"], entries)
                    if entries > self.limits.files:
                        self.stopper("files", f"more than {self.limits.files} entries in the work tree and HOME")
                    elif used > self.limits.disk:
                        self.stopper("disk", f"{used} bytes in the work tree and HOME, past {self.limits.disk}")
                    next_disk = time.monotonic() + DISK_POLL_S
            except Exception as exc:  # noqa: BLE001 - a monitor that dies would leave the session unwatched
                self.stopper("memory" if isinstance(exc, MemoryError) else "disk",
                             f"the limit monitor could not measure the session: {type(exc).__name__}: {exc}")
            if self.stopper.limit is not None:
                return

    def record(self) -> dict[str, Any]:
        return {"set": self.limits.to_dict(), "enforced_by_kernel": self.enforced, "peak": dict(self.peak)}
