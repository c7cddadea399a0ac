"""The cleave controller: stop a session at its first qualifying ``.py`` write.

Three layers, so that the edit can never be committed:
1. a filesystem watcher (watchdog/inotify) that, on the qualifying write, sets the git guard to
   ``cleaved`` and kills the session's whole process group (this module);
2. the git guard (:mod:`sdcs_bench.sandbox.guard`), refusing every ref update once the cleave
   fired and, while a first-edit rule is armed, any commit that carries a qualifying ``.py``
   change (this closes the race of ``edit && git commit`` in one shell command);
3. harness-specific hooks where a harness offers them (added by adapters).

None of them decides on a deadline: the guard's state changes atomically, the hook fails closed,
and every question (the proxy's before a model call, the hook's under ``nth_py_edit``) waits for
the watcher or is refused. :func:`cleave_integrity` then checks, from the repository alone, that
the cleaved edit was committed nowhere. ``docs/cleave.md`` gives the whole argument.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from sdcs_bench.sandbox.base import kill_group
from sdcs_bench.sandbox.guard import control_dir, guard_state, qualifies, set_guard, write_cleave_spec
from sdcs_bench.trial.workload import CleaveRule

OPEN_WRITE_GRACE_S = 0.5  # a .py file held open this long after its first write counts as edited
JUDGE_TIMEOUT_S = 30.0  # how long a model call may wait for the watcher before it is refused


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _uncommitted(repo: Path, rel: str) -> bool:
    # --no-optional-locks: the watcher must never take the index lock an agent's `git add` needs.
    proc = subprocess.run(["git", "--no-optional-locks", "status", "--porcelain", "--", rel], cwd=repo,
                          capture_output=True, text=True)
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
        if path.startswith(self.controller.control_dir):
            self.controller.control_event(path[len(self.controller.control_dir):])
            return
        self.controller.observe(path, event.event_type)


class CleaveController:
    """Watches one sandbox during one session and enforces its cleave rule.

    Two questions are answered through the watcher's own event stream, which delivers events in
    the order they happened: the model proxy's "may this model call be answered?" (a numbered
    barrier file the controller writes) and the git hook's "may this commit land?" under an
    ``nth_py_edit`` rule (an ``ask.*`` file the hook writes). Once the watcher has seen the marker it
    has judged every write completed before it; a question it cannot answer in time is refused."""

    def __init__(self, workdir: Path, rule: CleaveRule, exempt: Iterable[str], kill_grace_s: float = 0.0,
                 judge_timeout_s: float = JUDGE_TIMEOUT_S) -> None:
        self.workdir = workdir.resolve()
        self.rule = rule
        self.exempt = list(exempt)
        # A harness with an exact stop (post-tool hook) gets this long to end itself cleanly once
        # the cleave fired; commits and model calls are refused from the first instant either way.
        self.kill_grace_s = kill_grace_s
        self.judge_timeout_s = judge_timeout_s
        self.killed = False
        self._kill_timer: threading.Timer | None = None
        self.control_dir = str(control_dir(self.workdir)) + os.sep
        self._barrier = threading.Condition()
        self._barrier_sent = 0
        self._barrier_seen = 0
        self._answered: set[str] = set()
        self.unjudged: list[dict] = []  # questions refused because the watcher did not answer in time
        self.fired = threading.Event()
        self.record: dict = {"fired": False}
        self._lock = threading.Lock()
        self._pgid: int | None = None
        self._reap: Callable[[], object] | None = None
        self._edits: list[str] = []
        self._pending: set[str] = set()  # files with a grace timer running
        self._t0 = time.monotonic()
        self._observer = Observer()

    def start(self) -> None:
        write_cleave_spec(self.workdir, str(self.rule), self.exempt)
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

    # -- questions answered through the event stream ---------------------------------------------
    def control_event(self, name: str) -> None:
        if name.startswith("barrier."):
            with self._barrier:
                try:
                    self._barrier_seen = max(self._barrier_seen, int(name.split(".")[1]))
                except ValueError:
                    return
                self._barrier.notify_all()
        elif name.startswith("ask.") and not name.endswith(".tmp"):
            token = name[len("ask."):]
            with self._lock:
                if token in self._answered:
                    return
                self._answered.add(token)
            threading.Thread(target=self._answer, args=(token,), daemon=True).start()

    def _settle(self) -> None:
        """Wait until no completed-but-open write is in its grace timer (or the cleave fired)."""
        deadline = time.monotonic() + OPEN_WRITE_GRACE_S + 0.5
        while not self.fired.is_set() and time.monotonic() < deadline:
            with self._lock:
                if not self._pending:
                    return
            self.fired.wait(0.01)

    def _answer(self, token: str) -> None:
        # Every write completed before the hook's question has been seen; writes still in their
        # grace timer are settled first, so the state the hook reads next is the verdict.
        self._settle()
        ack = Path(self.control_dir) / f"ack.{token}"
        try:
            ack.touch()
        except OSError:
            pass  # the hook gives up and refuses: fail closed

    def refusal(self) -> str | None:
        """Why a model call must not be answered now, or None. The watcher first judges every write
        completed before this question (so a call sent right after the cleaving write is refused
        however fast the agent was); a question it cannot judge in time is refused too, with the
        reason (the proxy records it): an unanswered question never fails open."""
        if self.fired.is_set():
            return "cleaved"
        if not self.rule.active:
            return None
        if not self._observer.is_alive():
            return self._unjudged("the cleave watcher is not running")
        with self._barrier:
            self._barrier_sent += 1
            n = self._barrier_sent
            marker = Path(self.control_dir) / f"barrier.{n}"
            try:
                marker.write_text(f"{time.monotonic()}\n")
            except OSError as exc:
                return self._unjudged(f"cannot write the watcher's barrier ({exc.strerror})")
            seen = self._barrier.wait_for(lambda: self._barrier_seen >= n or self.fired.is_set(),
                                          timeout=self.judge_timeout_s)
        marker.unlink(missing_ok=True)
        if not seen:
            return self._unjudged(f"the cleave watcher did not judge the writes before this call within "
                                  f"{self.judge_timeout_s:g} s")
        self._settle()
        return "cleaved" if self.fired.is_set() else None

    def _unjudged(self, reason: str) -> str:
        self.unjudged.append({"at_s": round(time.monotonic() - self._t0, 4), "reason": reason})
        return f"unjudged: {reason}"

    def cleaved_now(self) -> bool:
        """Has the cleave fired, counting every write completed before this call? An unanswerable
        question counts as cleaved (fail closed)."""
        return self.refusal() is not None

    def attach(self, pgid: int, reap: Callable[[], object] | None = None) -> None:
        """The agent's process group (and, for a backend whose processes live outside it, how to
        end those: a container), killed the moment the cleave fires."""
        with self._lock:
            self._pgid = pgid
            self._reap = reap
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
            self.record = {
                "fired": True,
                "by": "watcher",
                "rule": str(self.rule),
                "path": rel,
                "edit_completed_by": how,
                "at_s": round(time.monotonic() - self._t0, 4),
                "wall_time": time.time(),
            }
            set_guard(self.workdir, "cleaved")  # commits (and model calls) are refused from here on
            self.fired.set()
            if self._pgid is not None:
                if self.kill_grace_s > 0:
                    self._kill_timer = threading.Timer(self.kill_grace_s, self._kill)
                    self._kill_timer.daemon = True
                    self._kill_timer.start()
                else:
                    self._kill()

    def _kill(self) -> None:
        if self._pgid is not None and _group_alive(self._pgid):
            self.killed = True
            kill_group(self._pgid)
            if self._reap is not None:
                self._reap()

    def stop(self) -> None:
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        if self._observer.is_alive():
            self._observer.stop()
            self._observer.join(timeout=10)
        for leftover in Path(self.control_dir).glob("*.*"):
            if leftover.name.startswith(("barrier.", "ask.", "ack.", "guard.")):
                leftover.unlink(missing_ok=True)


def known_commits(repo: Path) -> set[str]:
    """Every commit reachable from any ref or reflog entry (branches, tags, stash, HEAD's history)."""
    out = subprocess.run(["git", "--no-optional-locks", "rev-list", "--all", "--reflog"], cwd=repo,
                         capture_output=True, text=True)
    return set(out.stdout.split())


def _blobs_at(repo: Path, revs: list[str], rel: str) -> dict[str, str | None]:
    """The blob id of ``rel`` in each of ``revs`` (None where the path is absent), in one git call."""
    if not revs:
        return {}
    query = "".join(f"{rev}:{rel}\n" for rev in revs)
    out = subprocess.run(["git", "--no-optional-locks", "cat-file", "--batch-check=%(objectname) %(objecttype)"],
                         cwd=repo, input=query, capture_output=True, text=True, check=True).stdout.splitlines()
    return {rev: (line.split()[0] if line.endswith(" blob") else None) for rev, line in zip(revs, out)}


def cleave_integrity(repo: Path, rel: str, start_head: str, commits_before: set[str]) -> dict:
    """The integrity check of one cleaved session, made once the agent's processes are gone: the
    cleaved edit (the content of ``rel`` the session left on disk) must be in no commit the session
    made, on any branch, tag, stash or reflog entry. Independent of every layer that should have
    prevented it (watcher, hook, harness hooks), so a bypassed or raced guard is still caught."""
    path = repo / rel
    try:
        edit = subprocess.run(["git", "hash-object", "--", rel], cwd=repo, capture_output=True, text=True,
                              check=True).stdout.strip() if path.is_file() else None
        new = sorted(known_commits(repo) - commits_before)
        blobs = _blobs_at(repo, [start_head, *new], rel)
    except (subprocess.CalledProcessError, OSError) as exc:
        return {"ok": False, "edit_committed": None, "commits": [],
                "problem": f"the repository could not be read after the session: {exc}"}
    committed = [c for c in new if edit is not None and blobs.get(c) == edit and blobs.get(start_head) != edit]
    result = {"ok": not committed, "edit_committed": bool(committed), "commits": committed,
              "new_commits": len(new), "edit_blob": edit}
    if committed:
        result["problem"] = f"the cleaved edit of {rel} was committed ({', '.join(c[:12] for c in committed)})"
    return result
