"""The cleave controller (SPEC §2): stop a session at its first qualifying ``.py`` write.

Three layers, so that the edit can never be committed:
1. a filesystem watcher (watchdog/inotify) that, on the qualifying write, arms the git guard and
   kills the session's whole process group;
2. a git guard: a ``reference-transaction`` hook in the sandbox repository, which no
   ``--no-verify`` skips, refusing every ref update once the cleave fired and, while a
   first-edit rule is armed, any commit that carries a qualifying ``.py`` change (this closes
   the race of ``edit && git commit`` in one shell command);
3. harness-specific hooks where a harness offers them (added by adapters).
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .sandbox.base import kill_group
from .workload import CleaveRule

GUARD_STATES = ("off", "await_commit", "armed", "watch", "cleaved")
OPEN_WRITE_GRACE_S = 0.5  # a .py file held open this long after its first write counts as edited
ZERO = "0" * 40


def exempt_patterns(protected: Iterable[str], memory_files: Iterable[str]) -> list[str]:
    """Paths whose writes never count as a source edit: visible tests and the arm's memory files.
    ``*`` matches across ``/`` (as in a shell ``case``), so ``tests/**`` and ``tests/*`` agree."""
    return sorted({p.replace("**", "*") for p in protected} | set(memory_files))


def qualifies(relpath: str, exempt: Iterable[str]) -> bool:
    if not relpath.endswith(".py") or relpath.startswith(".git/"):
        return False
    return not any(fnmatch.fnmatchcase(relpath, pat) for pat in exempt)


def _sh_quote_pattern(pattern: str) -> str:
    # Quote everything but the wildcards, so a pattern matches exactly as fnmatch does.
    out = []
    for ch in pattern:
        out.append(ch if ch in "*?" else "'" + ch.replace("'", "'\\''") + "'")
    return "".join(out)


def guard_hook(exempt: Iterable[str]) -> str:
    patterns = "|".join(_sh_quote_pattern(p) for p in exempt) or "''"
    return f"""#!/bin/sh
# SpecSnap git guard (reference-transaction hook; --no-verify does not skip it).
state_file="$(git rev-parse --git-dir)/specsnap/guard"
state="$(cat "$state_file" 2>/dev/null)"
if [ "$1" = committed ] && [ "$state" = await_commit ]; then
  # The agent's first commit of the session (tier 1: the baseline) arms the first-edit rule.
  if grep -q " refs/heads/"; then echo armed > "$state_file"; fi
  exit 0
fi
[ "$1" = prepared ] || exit 0
refuse() {{ echo "specsnap: $1; this commit is refused" >&2; exit 1; }}
qualifies() {{
  case "$1" in
    .git/*|{patterns}) return 1 ;;
    *.py) return 0 ;;
  esac
  return 1
}}
case "$state" in
  cleaved) refuse "this session was cleaved" ;;
  armed)
    while read -r old new ref; do
      case "$ref" in refs/heads/*) ;; *) continue ;; esac
      [ "$new" = {ZERO} ] && continue
      if [ "$old" = {ZERO} ]; then
        files="$(git diff-tree --no-commit-id --name-only -r --root "$new")"
      else
        files="$(git diff --name-only "$old" "$new")"
      fi
      echo "$files" | while IFS= read -r f; do
        if qualifies "$f"; then exit 3; fi
      done
      if [ $? -eq 3 ]; then
        echo cleaved > "$state_file"
        refuse "the session's first .py edit may not be committed (cleave)"
      fi
    done
    ;;
esac
exit 0
"""


def install_guard(repo: Path, exempt: Iterable[str]) -> None:
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    hook = hooks / "reference-transaction"
    hook.write_text(guard_hook(exempt))
    hook.chmod(0o755)
    set_guard(repo, "off")


def set_guard(repo: Path, state: str) -> None:
    assert state in GUARD_STATES, state
    path = repo / ".git" / "specsnap" / "guard"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(state + "\n")


def guard_state(repo: Path) -> str:
    try:
        return (repo / ".git" / "specsnap" / "guard").read_text().strip()
    except FileNotFoundError:
        return "off"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _uncommitted(repo: Path, rel: str) -> bool:
    proc = subprocess.run(["git", "status", "--porcelain", "--", rel], cwd=repo, capture_output=True, text=True)
    return bool(proc.stdout.strip())


def _empty(path: str) -> bool:
    try:
        return os.path.getsize(path) == 0
    except OSError:
        return False


class _Handler(FileSystemEventHandler):
    def __init__(self, controller: CleaveController) -> None:
        self.controller = controller

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("created", "modified", "moved", "closed"):
            return
        path = os.fsdecode(event.dest_path if event.event_type == "moved" else event.src_path)
        if path == self.controller.barrier_path:
            self.controller.barrier_seen.set()
            return
        self.controller.observe(path, event.event_type)


class CleaveController:
    """Watches one sandbox during one session and enforces its cleave rule."""

    def __init__(self, workdir: Path, rule: CleaveRule, exempt: Iterable[str], kill_grace_s: float = 0.0) -> None:
        self.workdir = workdir.resolve()
        self.rule = rule
        self.exempt = list(exempt)
        # A harness with an exact stop (post-tool hook) gets this long to end itself cleanly once
        # the cleave fired; commits and model calls are refused from the first instant either way.
        self.kill_grace_s = kill_grace_s
        self.killed = False
        self._kill_timer: threading.Timer | None = None
        self.barrier_path = str(self.workdir / ".git" / "specsnap" / "barrier")
        self.barrier_seen = threading.Event()
        self._barrier_lock = threading.Lock()
        self.fired = threading.Event()
        self.record: dict = {"fired": False}
        self._lock = threading.Lock()
        self._pgid: int | None = None
        self._edits: list[str] = []
        self._pending: set[str] = set()  # files with a grace timer running
        self._t0 = time.monotonic()
        self._observer = Observer()

    def start(self) -> None:
        (self.workdir / ".git" / "specsnap").mkdir(parents=True, exist_ok=True)
        (self.workdir / ".git" / "specsnap" / "cleave.json").write_text(
            json.dumps({"rule": str(self.rule), "exempt": self.exempt}) + "\n"
        )
        set_guard(self.workdir, self._initial_guard_state())
        if self.rule.active:
            self._observer.schedule(_Handler(self), str(self.workdir), recursive=True)
            self._observer.start()
        self._t0 = time.monotonic()

    def _initial_guard_state(self) -> str:
        if not self.rule.active:
            return "off"
        if self.rule.kind == "first_py_edit_after_commit":
            return "await_commit"
        return "armed" if self.rule.kind == "first_py_edit" or (self.rule.kind == "nth_py_edit" and self.rule.n == 1) else "watch"

    def cleaved_now(self, timeout_s: float = 2.0) -> bool:
        """Has the cleave fired, counting every write completed before this call? The watcher sees
        events in order, so once it has seen a marker written now, it has also judged every earlier
        write (the model proxy asks this before each model call: a call sent right after the
        cleaving write is refused, however fast the agent was)."""
        if self.fired.is_set() or not self.rule.active or not self._observer.is_alive():
            return self.fired.is_set()
        with self._barrier_lock:
            self.barrier_seen.clear()
            with open(self.barrier_path, "w") as fh:
                fh.write(f"{time.monotonic()}\n")
            self.barrier_seen.wait(timeout_s)
        if not self.fired.is_set():
            with self._lock:  # an edit completed just now may be in its grace timer: wait for it
                pending = bool(self._pending)
            if pending:
                self.fired.wait(OPEN_WRITE_GRACE_S + 0.2)
        return self.fired.is_set()

    def attach(self, pgid: int) -> None:
        with self._lock:
            self._pgid = pgid
            if self.fired.is_set():
                self._kill()

    def observe(self, abspath: str, kind: str) -> None:
        try:
            rel = Path(abspath).resolve().relative_to(self.workdir).as_posix()
        except ValueError:
            return
        if not qualifies(rel, self.exempt) or guard_state(self.workdir) == "await_commit":
            return  # (tier 1: writes before the agent's first commit are the baseline, not the sprint)
        if kind == "closed" and _empty(abspath):
            kind = "created"  # created empty (a touch before the content, as Aider does): wait for the content
        if kind in ("created", "modified"):
            # The write is under way: wait for it to complete (close or move), so the edit left on
            # disk is whole; a writer that keeps the file open is stopped after a short grace
            # (one timer per file, however many chunks the write arrives in).
            with self._lock:
                if rel in self._pending:
                    return
                self._pending.add(rel)
            timer = threading.Timer(OPEN_WRITE_GRACE_S, self._edit_completed, (rel, "grace"))
            timer.daemon = True
            timer.start()
            return
        self._edit_completed(rel, kind)

    def _edit_completed(self, rel: str, how: str) -> None:
        with self._lock:
            if self.fired.is_set():
                return
            if how == "grace":
                self._pending.discard(rel)
                if self._edits and self._edits[-1] == rel:
                    return  # this write already completed and was counted
            self._edits.append(rel)
            needed = self.rule.n if self.rule.kind == "nth_py_edit" else 1
            if len(self._edits) < needed:
                return
            if self.rule.kind == "first_py_edit_after_commit" and not _uncommitted(self.workdir, rel):
                self._edits.pop()  # a late event of a write the arming commit already holds
                return
            set_guard(self.workdir, "cleaved")  # commits (and model calls) are refused from here on
            self.fired.set()
            if self._pgid is not None:
                if self.kill_grace_s > 0:
                    self._kill_timer = threading.Timer(self.kill_grace_s, self._kill)
                    self._kill_timer.daemon = True
                    self._kill_timer.start()
                else:
                    self._kill()
            self.record = {
                "fired": True,
                "by": "watcher",
                "rule": str(self.rule),
                "path": rel,
                "edit_completed_by": how,
                "at_s": round(time.monotonic() - self._t0, 4),
                "wall_time": time.time(),
            }

    def _kill(self) -> None:
        if self._pgid is not None and _group_alive(self._pgid):
            self.killed = True
            kill_group(self._pgid)

    def stop(self) -> None:
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        if self._observer.is_alive():
            self._observer.stop()
            self._observer.join(timeout=10)
