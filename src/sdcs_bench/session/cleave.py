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
the watcher or is refused. The watcher fails closed too: any error in it (a path it cannot read,
a control directory the agent replaced, lost inotify events) fires the cleave with the reason.
:func:`~sdcs_bench.session.integrity.session_integrity` then checks, from the repository and the files
alone, that no commit made during the session carries what the session's rule forbids, and that no
qualifying file changed without the watcher seeing it. ``docs/cleave.md`` gives the whole argument.

The controller by job: the watcher and the content check (this module), the questions answered
through the control directory (:mod:`sdcs_bench.session.control`), the count of model calls a token
or turn rule cuts at (:mod:`sdcs_bench.session.meter`), and the integrity check after the session
(:mod:`sdcs_bench.session.integrity`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

try:  # (watchdog >= 7: one inotify instance per observer, whose watches can be capped as they are added)
    from watchdog.observers.inotify import InotifyObserver as _InotifyObserver
    from watchdog.observers.inotify_c import InotifyFD as _InotifyFD
except ImportError:  # (not Linux, or an older watchdog: the watches are counted and the cap polled)
    _InotifyObserver = _InotifyFD = None

from sdcs_bench.coherence.resume import READ_LIMIT, WrittenFile
from sdcs_bench.core import safefs
from sdcs_bench.core.gitutil import GitError, RepoView, refs
from sdcs_bench.sandbox.base import kill_group
from sdcs_bench.sandbox.guard import qualifies
from sdcs_bench.sandbox.guard_install import set_guard, write_cleave_spec
from sdcs_bench.session.control import CONTROL, ControlChannel
from sdcs_bench.session.integrity import Watched, _read_content, known_commits
from sdcs_bench.session.meter import CallMeter
from sdcs_bench.trial.workload_model import CleaveRule

OPEN_WRITE_GRACE_S = 0.5  # a .py file held open this long after its first write counts as edited
JUDGE_TIMEOUT_S = 30.0  # how long a model call may wait for the watcher before it is refused
FLUSH_TIMEOUT_S = 10.0  # how long the end of a session waits for the watcher to see its last events
MTIME_SLACK_S = 0.010  # a coarse file-system clock keeps an mtime up to a tick (1-10 ms) early
MTIME_TRUST_S = 2.0  # an mtime further before the watcher saw the write is not believed (an agent can set it)
# The watcher's own resource use, per session. Each directory of the tree costs one inotify watch, taken
# from the host user's budget (fs.inotify.max_user_watches), which every session and every other program
# of that user share; past the cap a directory would go unwatched (an edit in it unseen), so the session
# ends as a limit instead (``controller.limit``; the config's ``sandbox.limits.watches`` is meant to set it).
MAX_WATCHES = 4096
MAX_TRACKED_PATHS = 200_000  # distinct .py paths the watcher keeps state for (path, content id): past it, a limit
MAX_QUEUED_EVENTS = 200_000  # events waiting for the watcher's handler (each held in memory): past it, a limit
CHECK_BYTES = 256 << 20  # the qualifying files' bytes one content check may read (past it the call is refused)
EDIT_KINDS = ("first_py_edit", "nth_py_edit", "first_py_edit_after_commit")  # the rules that cut at an edit


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def branch_refs(repo: Path) -> dict[str, str]:
    """name -> commit of every branch, read from the ref files by hand (loose and packed)."""
    return refs(repo, "refs/heads/")


class _Write:
    """One write of one file the watcher is waiting on: ``open`` (its grace timer runs), ``done``
    (completed by a close or move before the timer), ``graced`` (counted when the timer ran out
    while the writer still held it open: its close is the same edit, not another), ``checked``
    (a change no event named, counted by the content check at a model call: a close that leaves the
    content it counted is the same edit)."""

    __slots__ = ("state", "counts", "began", "content")

    def __init__(self, counts: bool) -> None:
        self.state = "open"
        self.counts = counts  # whether it counts toward the cut rule (else it is only recorded)
        self.began = time.time()  # when the watcher saw its first event (SpecSnap's clock: the write's time)
        self.content: str | None = None  # (``checked``) the content the check counted


class _CappedObserver(_InotifyObserver or object):  # type: ignore[misc]
    """watchdog's inotify observer whose inotify instance refuses a watch past ``cap``: the count
    never passes it, and the first refusal calls ``on_limit`` (once, in a thread of its own)."""

    def __init__(self, cap: int, on_limit: Callable[[str], None]) -> None:
        super().__init__(generate_full_events=True)
        self._cap = cap
        self._on_limit = on_limit

    def schedule(self, event_handler, path, **kwargs):  # noqa: ANN001, ANN201 - watchdog's signature
        with self._lock:
            if self._inotify_fd is None:
                fd = _CappedInotifyFD(self._cap, self._on_limit)
                fd.start()
                self._inotify_fd = fd
                self._emitter_kwargs["inotify_fd"] = fd
        return super().schedule(event_handler, path, **kwargs)


class _CappedInotifyFD(_InotifyFD or object):  # type: ignore[misc]
    def __init__(self, cap: int, on_limit: Callable[[str], None]) -> None:
        self._cap = cap
        self._on_limit = on_limit
        self._refused = False
        super().__init__()

    def _get_or_create_watch(self, path: bytes, mask: int):  # noqa: ANN201
        # (called with the instance's lock held: the count cannot change under it). The error is
        # one watchdog passes over for a directory below the root: it goes unwatched, and the
        # session ends on the limit.
        if len(self._watch_for_wd) >= self._cap:
            if not self._refused:
                self._refused = True
                threading.Thread(target=self._on_limit, args=(os.fsdecode(path),), daemon=True).start()
            raise OSError(errno.EDQUOT, f"the watcher's cap of {self._cap} inotify watches")
        return super()._get_or_create_watch(path, mask)


def _capped_observer_works() -> bool:
    """Whether the installed watchdog has the internals ``_CappedObserver`` relies on."""
    if _InotifyObserver is None or _InotifyFD is None or not hasattr(_InotifyFD, "_get_or_create_watch"):
        return False
    try:
        probe = _InotifyObserver(generate_full_events=True)
    except Exception:  # noqa: BLE001 - (no inotify here: the plain observer fails its own way)
        return False
    return all(hasattr(probe, a) for a in ("_inotify_fd", "_emitter_kwargs", "_lock"))


_CAPPED = _capped_observer_works()


class _Handler(FileSystemEventHandler):
    def __init__(self, controller: CleaveController) -> None:
        self.controller = controller

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            self.controller.dispatch(event)
        except BaseException as exc:  # noqa: BLE001 - whatever it is, the watcher fails closed
            self.controller.fail(f"the watcher's handler failed on {event.event_type} "
                                 f"{os.fsdecode(event.src_path)!r}: {type(exc).__name__}: {exc}")


class CleaveController(ControlChannel, CallMeter):
    """Watches one sandbox during one session and enforces its cleave rule.

    Two questions are answered through the watcher's own event stream, which delivers events in
    the order they happened: the model proxy's "may this model call be answered?" (a numbered
    barrier file the controller writes) and the git hook's "may this commit land?" under an
    ``nth_py_edit`` rule (an ``ask.*`` file the hook writes). Once the watcher has seen the marker it
    has judged every write completed before it; a question it cannot answer in time is refused.

    The controller keeps its own state: it never reads back the guard's state file (which the
    agent can write). It records every qualifying path it saw an event for (``seen``), so the end
    of the session can tell an edit it never saw (a hard link, lost events) from one it did.

    Under a rule that cuts at an edit, every model call (and every question of the hook) also
    compares the qualifying files' content with what the watcher last judged: a change no event
    named (a write through ``mmap``, through a hard link) counts as a qualifying write then
    (``edit_completed_by: "content check"``). Every counted write is timed on SpecSnap's clock
    (``edit_times``; the cut's ``cut_write_at``), never by a time the agent can set. Its own
    resource use is bounded (``max_watches`` inotify watches, ``MAX_TRACKED_PATHS``,
    ``MAX_QUEUED_EVENTS``): past a bound the cleave fires as a limit (``by: "watcher limit"``),
    and ``limit`` says which (``{"reason": ..., "detail": ...}``; None otherwise)."""

    def __init__(self, workdir: Path, rule: CleaveRule, exempt: Iterable[str], kill_grace_s: float = 0.0,
                 judge_timeout_s: float = JUDGE_TIMEOUT_S, meter_files: bool = False,
                 record_writes: dict[str, bytes | None] | None = None, max_watches: int | None = None) -> None:
        if rule.needs_baseline:
            raise ValueError(f"the cut {rule} must be resolved against its control's tokens before the session")
        self.workdir = workdir.resolve()
        self.rule = rule
        # Model calls counted so far (answered calls, and their tokens): the proxy's count, or for a
        # reference policy (``meter_files``) the meter it asks through the control directory.
        self.meter_files = meter_files
        self.call_tokens: list[int] = []  # each counted call's tokens, in order
        # when each was asked (its request reached the proxy; a meter step: the policy asked before it)
        self.call_times: list[float | None] = []
        # A continuation session's writes, for the cost of resuming (coherence/resume.py): every
        # completed write to a qualifying file, with what it added, from each file's content at the
        # session's start (``record_writes``: path -> bytes). None: not recorded.
        self.written: WrittenFile | None = WrittenFile(record_writes) if record_writes is not None else None
        self._record_lock = threading.Lock()
        self._stale_meters: set[str] = set()
        self.unreadable_meters: list[str] = []
        self._record_taken = False
        self.known_at_fire: set[str] | None = None
        self.exempt = list(exempt)
        # A harness with an exact stop (post-tool hook) gets this long to end itself cleanly once
        # the cleave fired; commits and model calls are refused from the first instant either way.
        self.kill_grace_s = kill_grace_s
        self.judge_timeout_s = judge_timeout_s
        self.killed = False
        self._kill_timer: threading.Timer | None = None
        self._root = str(self.workdir) + os.sep
        self.control_dir = str(self.workdir / CONTROL) + os.sep
        self._barrier = threading.Condition()
        self._barrier_sent = 0
        self._barrier_seen = 0
        self._answered: set[str] = set()
        self.unjudged: list[dict] = []  # questions refused because the watcher did not answer in time
        self.errors: list[str] = []  # what made the watcher fail closed
        self.fired = threading.Event()
        self.record: dict = {"fired": False}
        self._lock = threading.Lock()
        self._pgid: int | None = None
        self._reap: Callable[[], object] | None = None
        self._edits: list[tuple[str, str | None]] = []  # (path, blob) of each counted edit, in order
        self.seen: set[str] = set()  # qualifying paths any event named (written, moved, deleted)
        self.seen_dirs: set[str] = set()  # directories moved or deleted as a whole
        self.last_seen: dict[str, str | None] = {}  # qualifying path -> its content when last named
        self.linked: set[str] = set()  # qualifying files seen with another hard link to them
        self.known_at_arming: set[str] | None = None  # (tier 1) commits reachable when it armed
        self._pending: dict[str, _Write] = {}  # files whose write is under way
        self._via_directory: set[str] = set()  # files counted with their directory's move
        self._armed_by_commit = rule.kind != "first_py_edit_after_commit"
        self._start_branches: dict[str, str] = {}
        self._stopping = False
        self._t0 = time.monotonic()
        self.edit_times: list[float] = []  # when the watcher saw each counted edit's write (time.time())
        self.cut_write_at: float | None = None  # that time for the edit the cut fired at (write_to_exit_s)
        # The content check (rules that cut at an edit): each qualifying path's content as the watcher
        # last judged it (at the start, at its last event, at a check), and the order of events.
        self._checks_content = rule.active and not rule.metered and rule.kind in EDIT_KINDS
        self._judged: dict[str, str | None] = {}
        self._check_problem: str | None = None
        self._saw_seq = 0
        self._saw_at: dict[str, int] = {}  # path -> the number of the last event that named it
        self._check_lock = threading.Lock()
        # Bounds on the watcher's own resource use.
        self.max_watches = MAX_WATCHES if max_watches is None else max_watches
        self.limit: dict[str, str] | None = None
        self._limited = False
        self._recording_off = False  # (a session with no rule, past a bound: it records nothing more)
        self._capped = _CAPPED
        self._observer = (_CappedObserver(self.max_watches, self._watch_cap_reached) if self._capped
                          else Observer(generate_full_events=True))

    def start(self) -> None:
        # Meter files already there were left by an earlier session (or planted): never this one's.
        self._stale_meters = self._meter_names()
        write_cleave_spec(self.workdir, str(self.rule), self.exempt)
        set_guard(self.workdir, self._initial_guard_state())
        if self.rule.kind == "first_py_edit_after_commit":
            self._start_branches = branch_refs(self.workdir)
        if self._checks_content:
            # What the content check compares with until the watcher names a file: the tree as it is
            # before the agent starts. (Unreadable: every model call is refused with the reason.)
            self._judged, self._check_problem = _fingerprints(self.workdir, self.exempt)
        if self.rule.active or self.written is not None:
            self._observer.schedule(_Handler(self), str(self.workdir), recursive=True)
            self._observer.start()
            threading.Thread(target=self._monitor, daemon=True).start()
        self._t0 = time.monotonic()

    def _initial_guard_state(self) -> str:
        if not self.rule.active or self.rule.metered:
            return "off"  # (a token or turn rule forbids nothing until it fires: then ``cleaved``)
        if self.rule.kind == "first_py_edit_after_commit":
            return "await_commit"
        return "armed" if self.rule.kind == "first_py_edit" or (self.rule.kind == "nth_py_edit" and self.rule.n == 1) else "watch"

    def _monitor(self) -> None:
        """A watcher thread that ends while the session runs (an error inside watchdog itself)
        fires the cleave: without it, nothing would see the next edit."""
        while self._observer.is_alive():
            # (an older watchdog, whose watches cannot be capped as they are added: counted here)
            self._observer.join(None if self._capped else 0.05)
            if not self._capped and not self._stopping:
                count = self.watch_count()
                if count is not None and count > self.max_watches:
                    self._watch_cap_reached(f"with {count} held")
        if not self._stopping:
            self.fail("the watcher stopped while the session was running")

    def watch_count(self) -> int | None:
        """The inotify watches this session's watcher holds now (None: not known to this watchdog)."""
        fd = getattr(self._observer, "_inotify_fd", None)
        held = getattr(fd, "_watch_for_wd", None)
        if held is not None:
            return len(held)
        counts = [getattr(getattr(getattr(e, "_inotify", None), "_inotify", None), "_wd_for_path", None)
                  for e in list(getattr(self._observer, "emitters", ()))]  # (watchdog 4-6: one per emitter)
        counts = [len(c) for c in counts if c is not None]
        return sum(counts) if counts else None

    # -- bounds on the watcher's own resource use ------------------------------------------------
    def _watch_cap_reached(self, where: str) -> None:
        """(``where``: the directory refused a watch, or how many were held when the cap was seen.)"""
        rel = self._rel(where) if where.startswith(os.sep) else None
        at = f"at {rel!r}" if rel is not None else where
        self._limit("watches", f"the watcher reached its cap of {self.max_watches} inotify watches (one per "
                               f"directory) {at}: a directory past it would go unwatched")

    def _limit(self, reason: str, detail: str) -> None:
        """Past a bound on its own resources the watcher cannot keep the guarantee (an unwatched
        directory, an untracked path could hide an edit), so it fails closed as a limit: the cleave
        fires (``by: "watcher limit"``), the agent is killed, and ``limit`` says why. A session with
        no rule only records: its record is marked incomplete and the watcher records nothing more."""
        with self._lock:
            if self._limited:
                return
            self._limited = True
            if self.written is not None:
                self.written.failed = self.written.failed or f"a limit of the watcher ({reason}): {detail}"
            if not self.rule.active:
                self._recording_off = True
                return
            if self.fired.is_set():
                return  # (the cut came first: the session is what it was at the cut)
            self.limit = {"reason": reason, "detail": detail}
            self.record = {"fired": True, "by": "watcher limit", "rule": str(self.rule), "path": None,
                           "reason": detail, "limit": dict(self.limit), "at_s": round(time.monotonic() - self._t0, 4),
                           "wall_time": time.time()}
            self._fire(grace=False)

    # -- events ------------------------------------------------------------------------------------
    def _rel(self, path: str | bytes) -> str | None:
        """The path relative to the sandbox, by its text alone (no link is followed), or None."""
        path = os.path.normpath(os.fsdecode(path)) if path else ""
        return path[len(self._root):] if path.startswith(self._root) else None

    def dispatch(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind == "lost":
            raise RuntimeError("inotify's queue overflowed: events were lost")
        src = os.fsdecode(event.src_path) if event.src_path else ""
        dest = os.fsdecode(event.dest_path) if getattr(event, "dest_path", "") else ""
        where = dest if kind == "moved" and dest else src
        if where.startswith(self.control_dir):
            self.control_event(where[len(self.control_dir):])
            return
        if self._recording_off:
            return
        if self._observer.event_queue.qsize() > MAX_QUEUED_EVENTS:
            self._limit("watches", f"more than {MAX_QUEUED_EVENTS:,} file events waited for the watcher")
        if event.is_directory:
            self._directory_event(kind, self._rel(src), self._rel(dest))
            return
        if kind == "moved":
            old, new = self._rel(src), self._rel(dest)
            self._saw(old)
            if new is not None:
                self._saw(new)
                if not self._counted_with_directory(new):
                    self.observe(new, "moved")
            return
        if kind in ("created", "modified", "closed", "deleted"):
            rel = self._rel(src)
            self._saw(rel)
            if rel is not None and kind != "deleted" and not (kind == "created" and self._counted_with_directory(rel)):
                self.observe(rel, kind)

    def _counted_with_directory(self, rel: str) -> bool:
        """Whether this file's move was already counted with its directory's (watchdog follows a
        directory's move with one event per file in it)."""
        with self._lock:
            if rel in self._via_directory:
                self._via_directory.discard(rel)
                return True
            return False

    def _saw(self, rel: str | None) -> None:
        """Note a qualifying path an event named, with its content now and whether another hard
        link reaches it: a write through that link names no path of the tree, so the end of the
        session compares each file with what the watcher last saw of it."""
        if rel is None or not rel.endswith(".py"):
            return
        with self._lock:
            tracked = rel in self.last_seen or len(self.last_seen) < MAX_TRACKED_PATHS
        if not tracked:
            self._limit("files", f"the watcher tracks at most {MAX_TRACKED_PATHS:,} distinct .py paths")
            return
        content = _content(self.workdir, rel)
        # (the content check's view: the same id, or for a file too large for it, a digest read in blocks)
        judged = content if content is not None or not self._checks_content else _fingerprint(self.workdir, rel)
        try:
            linked = os.lstat(self.workdir / rel).st_nlink > 1
        except OSError:
            linked = False
        with self._lock:
            self.seen.add(rel)
            self.last_seen[rel] = content
            if self._checks_content:
                # (numbered with the update: a check that copied the judged state before it sees it named)
                self._saw_seq += 1
                self._saw_at[rel] = self._saw_seq
                self._judged[rel] = judged
            if linked:
                self.linked.add(rel)

    def _directory_event(self, kind: str, src: str | None, dest: str | None) -> None:
        if kind in ("moved", "deleted"):
            with self._lock:
                self.seen_dirs.update(d for d in (src, dest) if d)
        if kind == "moved" and dest:
            # A directory renamed or moved in: each qualifying file in it is an edit, complete at
            # once (in path order, so the record names the same file every time).
            for rel in sorted(r for r, _ in safefs.walk(self.workdir, rel=dest)):
                with self._lock:
                    self._via_directory.add(f"{dest}/{rel}")
                self._saw(f"{dest}/{rel}")
                self.observe(f"{dest}/{rel}", "moved")

    def observe(self, rel: str, kind: str) -> None:
        if not qualifies(rel, self.exempt):
            return
        # (tier 1: writes before the agent's first commit are the baseline, not the sprint)
        counts = self.rule.active and not self.rule.metered and self._armed()
        if not counts and self.written is None:
            return
        if kind == "closed" and _empty(self.workdir / rel):
            kind = "created"  # created empty (a touch before the content, as Aider does): wait for the content
        if kind in ("created", "modified"):
            # The write is under way: wait for it to complete (close or move), so the edit left on
            # disk is whole; a writer that keeps the file open is stopped after a short grace
            # (one timer per write, however many chunks it arrives in).
            with self._lock:
                write = self._pending.get(rel)
                if write is not None and write.state in ("open", "graced"):
                    return
                write = self._pending[rel] = _Write(counts)
            timer = threading.Timer(OPEN_WRITE_GRACE_S, self._guarded, (self._grace_ran_out, rel, write))
            timer.daemon = True
            timer.start()
            return
        checked = self._pending.get(rel)
        same = (kind == "closed" and checked is not None and checked.state == "checked"
                and _content(self.workdir, rel) == checked.content)
        with self._lock:
            write = self._pending.pop(rel, None)
            if write is not None and write.state == "graced":
                return  # the close of a write already counted when its grace ran out
            if write is not None and write is checked and same:
                return  # the close of a write the content check counted, leaving what it counted
            if write is not None:
                write.state = "done"  # its timer, when it runs, finds it done
        self._edit_completed(rel, kind, write.counts if write is not None else counts,
                             write.began if write is not None else None)

    def _grace_ran_out(self, rel: str, write: _Write) -> None:
        with self._lock:
            if self._pending.get(rel) is not write or write.state != "open":
                return
            write.state = "graced"
        self._edit_completed(rel, "grace", write.counts, write.began)

    def _armed(self) -> bool:
        """Whether writes count: always, except under tier 1's rule before the agent's first commit
        (a branch that moved since the session began, read from the ref files)."""
        if not self._armed_by_commit and branch_refs(self.workdir) != self._start_branches:
            # What the agent committed before the rule armed is the baseline it may keep; the
            # integrity check allows no later commit (nor one that holds the cleaved edit).
            self.known_at_arming = known_commits(self.workdir)
            self._armed_by_commit = True
        return self._armed_by_commit

    def _guarded(self, fn: Callable, *args) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - a timer thread fails closed too
            self.fail(f"the watcher failed judging {args[0]!r}: {type(exc).__name__}: {exc}")

    def _edit_completed(self, rel: str, how: str, counts: bool = True, began: float | None = None) -> None:
        """A write completed: judge it under the cut rule first (the cut must not wait), then, in a
        continuation session, record it."""
        # (a write that began before tier 1's arming commit and completed after it counts, as it did
        # before writes were recorded: arming only ever goes one way)
        seen_at = began if began is not None else time.time()
        counts = counts or (self.rule.active and not self.rule.metered and self._armed())
        if counts:
            self._judge(rel, how, seen_at)
        if self.written is not None:
            self._record_write(rel, seen_at)

    def _judge(self, rel: str, how: str, seen_at: float) -> None:
        """Count one completed qualifying write; fire the cleave when it is the rule's. ``seen_at``: when
        SpecSnap saw the write (its first event, or the content check that found it), on its own clock."""
        content = _content(self.workdir, rel)
        if self.rule.kind == "first_py_edit_after_commit" and content is not None and content == _in_head(self.workdir, rel):
            return  # a late event of a write the arming commit already holds: not an edit after it
        with self._lock:
            if self.fired.is_set():
                return
            self._edits.append((rel, content))
            self.edit_times.append(seen_at)
            needed = self.rule.n if self.rule.kind == "nth_py_edit" else 1
            if len(self._edits) < needed:
                return
            self.cut_write_at = seen_at
            self.record = {
                "fired": True,
                "by": "watcher",
                "rule": str(self.rule),
                "path": rel,
                "edit_completed_by": how,
                "edit_blob": content,
                "at_s": round(time.monotonic() - self._t0, 4),
                "wall_time": time.time(),
            }
            self._fire()

    def _record_write(self, rel: str, seen: float) -> None:
        """Record one completed write of a continuation session: the lines it added, and when it was
        made. ``seen`` (the watcher's first event of it) is never before the write but can be late
        when the watcher is behind; the file's modification time is on time but kept coarsely by
        some file systems and set at will by the agent. So: the earlier of ``seen`` and the mtime
        plus ``MTIME_SLACK_S``, where the mtime is at most ``MTIME_TRUST_S`` before ``seen``; else
        ``seen``. Under its own lock, never the controller's (judging a cut never waits for it);
        whatever goes wrong here makes the record incomplete, never the session invalid."""
        try:
            with self._record_lock:
                if self._record_taken:
                    return  # (a late timer or event adds nothing to a record already taken)
                try:
                    data = safefs.read_file(self.workdir, rel, limit=READ_LIMIT)
                except OSError:
                    data = None  # (too large, or a link: it adds nothing the record can follow; never followed)
                mtime = _mtime(self.workdir, rel)
                trusted = mtime is not None and 0 <= seen - mtime <= MTIME_TRUST_S
                self.written.wrote(rel, data, min(seen, mtime + MTIME_SLACK_S) if trusted else seen)
        except Exception as exc:  # noqa: BLE001 - (MemoryError included: the record says it is incomplete)
            self.written.failed = self.written.failed or f"recording {rel!r} failed: {type(exc).__name__}: {exc}"

    def fail(self, reason: str) -> None:
        """Fail closed: whatever went wrong in the watcher fires the cleave (if it has not fired
        yet), with the reason; the session's integrity check then reports it. A session with no cut
        rule has nothing to cleave: its watcher only records writes, and a failure there makes the
        record incomplete (said in it), not the session invalid."""
        with self._lock:
            self.errors.append(reason)
            if self.written is not None:
                self.written.failed = reason
            if self.fired.is_set() or not self.rule.active:
                return
            self.record = {"fired": True, "by": "watcher error", "rule": str(self.rule), "path": None,
                           "reason": reason, "at_s": round(time.monotonic() - self._t0, 4), "wall_time": time.time()}
            self._fire(grace=False)

    def _fire(self, grace: bool = True) -> None:
        """(With the lock held.) Refuse commits and model calls from here on, then stop the agent."""
        try:
            set_guard(self.workdir, "cleaved")
        except OSError as exc:  # the hook then fails closed on the state it finds; the check stands
            self.errors.append(f"could not set the guard to cleaved: {exc}")
        self.fired.set()
        with self._barrier:
            self._barrier.notify_all()
        if self._pgid is not None:
            if grace and self.kill_grace_s > 0:
                self._kill_timer = threading.Timer(self.kill_grace_s, self._kill)
                self._kill_timer.daemon = True
                self._kill_timer.start()
            else:
                self._kill()
        if self.rule.metered:
            # Everything committed before the cut is the session's work; a commit that lands after
            # it (past the guard, by plumbing, in the instant before the kill) is not.
            self.known_at_fire = known_commits(self.workdir)

    # -- what a question waits for (the control channel, session/control.py, asks) ------------
    def _settle(self) -> None:
        """Wait until no completed-but-open write is in its grace timer (or the cleave fired)."""
        deadline = time.monotonic() + OPEN_WRITE_GRACE_S + 0.5
        while not self.fired.is_set() and time.monotonic() < deadline:
            with self._lock:
                if not any(w.state == "open" for w in self._pending.values()):
                    return
            self.fired.wait(0.01)

    def _content_check(self) -> str | None:
        """(Rules that cut at an edit; after the barrier.) Compare every qualifying file's content with
        what the watcher last judged of it: a change no event named (a write through ``mmap`` by a
        writer that still holds the file, a write through a hard link) is a qualifying write now,
        judged as the watcher judges one (``edit_completed_by: "content check"``). A change an event
        named since the comparison began is the watcher's (it is judged before this returns).
        Returns why the check could not be made (the question is then refused), else None."""
        if not self._checks_content or self.fired.is_set():
            return None
        with self._check_lock:
            if self._check_problem:
                return f"the content check could not read the tree at the start: {self._check_problem}"
            with self._lock:
                mark = self._saw_seq
                judged = dict(self._judged)
            now, problem = _fingerprints(self.workdir, self.exempt)
            if problem:
                return f"the content check could not read the tree: {problem}"
            changed = sorted(rel for rel, fp in now.items() if fp is not None and fp != judged.get(rel))
            if not changed:
                return None
            # A change an event names is the watcher's: have it judge every event up to now first.
            problem = self._wait_for_watcher()
            if problem:
                return problem
            self._settle()
            at = time.time()
            for rel in changed:
                if self.fired.is_set():
                    break
                with self._lock:
                    if self._saw_at.get(rel, 0) > mark:
                        continue  # an event named it since the comparison began: the watcher judged it
                    write = self._pending.get(rel)
                    held = write is not None and write.state in ("graced", "checked")  # one writer's one edit
                self._saw(rel)  # (seen now: its content, its links)
                if held or not self._armed():
                    continue  # (tier 1 before the arming commit: the baseline, as the watcher counts it)
                with self._lock:
                    write = self._pending[rel] = _Write(True)
                    write.state, write.content = "checked", self.last_seen.get(rel)
                self._judge(rel, "content check", at)
            return None

    def attach(self, pgid: int, reap: Callable[[], object] | None = None) -> None:
        """The agent's process group (and, for a backend whose processes live outside it, how to
        end those: a container, a cgroup), killed the moment the cleave fires."""
        with self._lock:
            self._pgid = pgid
            self._reap = reap
            if self.fired.is_set():
                self._kill()

    def _kill(self) -> None:
        if self._pgid is not None and _group_alive(self._pgid):
            self.killed = True
            kill_group(self._pgid)
        if self._pgid is not None and self._reap is not None:
            self._reap()

    def stop(self) -> None:
        """End the watch (the agent's processes are gone). Events still queued are judged first: a
        barrier the watcher must see; if it cannot, that is an error of the watcher (fail closed)."""
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        if self._observer.is_alive():
            problem = None if self.fired.is_set() else self._wait_for_watcher()
            self._settle()
            if problem:
                self.fail(f"at the end of the session: {problem}")
            self._stopping = True
            self._observer.stop()
            self._observer.join(timeout=10)
        self._stopping = True
        if self.meter_files:
            self._count_left_meters()
        try:
            with safefs.open_dir(self.workdir, CONTROL) as fd:
                for name in os.listdir(fd):
                    if name.startswith(("barrier.", "ask.", "ack.", "meter.", "guard.", ".guard.")):
                        try:
                            os.unlink(name, dir_fd=fd)
                        except OSError:
                            pass
        except OSError:
            pass

    def written_record(self) -> dict[str, Any] | None:
        """The continuation's record of its writes (a copy, taken once the agent is gone; later events
        add nothing to it), or None when the session records none."""
        if self.written is None:
            return None
        with self._record_lock:
            self._record_taken = True
            return json.loads(json.dumps(self.written.record()))

    def watched(self) -> Watched:
        """What the watcher saw, for :func:`session_integrity` (call once the session ended)."""
        with self._lock:
            return Watched(seen=set(self.seen), seen_dirs=set(self.seen_dirs), edits=list(self._edits),
                           errors=list(self.errors), last_seen=dict(self.last_seen), linked=set(self.linked),
                           known_at_arming=None if self.known_at_arming is None else set(self.known_at_arming),
                           known_at_fire=None if self.known_at_fire is None else set(self.known_at_fire))


def _fingerprint(repo: Path, rel: str) -> str | None:
    """The content check's id of a file: its blob id (a link: of its target's text), or for a file
    too large to read whole a digest of its bytes read in blocks, ``unreadable`` for one that is
    there but cannot be read; None when it is gone. Nothing is followed."""
    content = _content(repo, rel)
    if content is not None:
        return content
    with safefs.open_regular(repo, rel) as fh:
        if fh is None:
            return "unreadable" if _mtime(repo, rel) is not None else None
        digest, size = hashlib.sha256(), 0
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return f"large:{size}:{digest.hexdigest()}"


def _fingerprints(repo: Path, exempt: list[str]) -> tuple[dict[str, str | None], str | None]:
    """path -> :func:`_fingerprint` of every qualifying file in the tree, and why the view is not
    whole (a directory that cannot be read, more than ``CHECK_BYTES`` to read), else None."""
    errors: list[str] = []
    state: dict[str, str | None] = {}
    total = 0
    for rel, st in safefs.walk(repo, skip_dirs={"__pycache__"}, top_skip={".git"}, errors=errors):
        if not qualifies(rel, exempt):
            continue
        total += st.st_size if stat.S_ISREG(st.st_mode) else 0
        if total > CHECK_BYTES:
            return state, f"its qualifying files hold more than {CHECK_BYTES:,} bytes"
        if len(state) >= MAX_TRACKED_PATHS:
            return state, f"it holds more than {MAX_TRACKED_PATHS:,} qualifying files"
        state[rel] = _fingerprint(repo, rel)
    errors = [e for e in errors if not e.endswith(os.strerror(errno.ENOENT))]  # (gone mid-walk: nothing to hide)
    if errors:
        return state, f"directories it cannot read: {'; '.join(errors[:3])}"
    return state, None


def _mtime(repo: Path, rel: str) -> float | None:
    """A file's modification time, no link followed (its directories included); None if unreadable."""
    parent, name = os.path.split(rel)
    try:
        with safefs.open_dir(repo, parent) as fd:
            return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime
    except OSError:
        return None


def _empty(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_size == 0


def _content(repo: Path, rel: str) -> str | None:
    """The git blob id of a file's bytes as they are now (a link: its target's text, as git
    stores it), without following anything; None when it is gone or unreadable."""
    return _read_content(repo, rel)[0]


def _in_head(repo: Path, rel: str) -> str | None:
    """The blob ``rel`` has in HEAD (read through a view: nothing the agent configured runs)."""
    try:
        with RepoView(repo, index=False) as view:
            if view.head is None:
                return None
            out = view.run("rev-parse", "--verify", "-q", f"{view.head}:{rel}", check=False)
            return out.stdout.decode().strip() or None
    except (GitError, OSError):
        return None
