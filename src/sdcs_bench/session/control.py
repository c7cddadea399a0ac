"""The control channel of a cleave controller: questions answered through the watcher's own event
stream, which delivers events in the order they happened. The model proxy's "may this model call be
answered?" (a numbered barrier file the controller writes, :meth:`ControlChannel.refusal`) and the git
hook's "may this commit land?" under an ``nth_py_edit`` rule (an ``ask.*`` file the hook writes); a
reference policy's meter questions come the same way (:mod:`sdcs_bench.session.meter`). Once the
watcher has seen the marker it has judged every write completed before it; a question it cannot
answer in time is refused.

:class:`ControlChannel` is a part of :class:`sdcs_bench.session.cleave.CleaveController`, which sets up
its state (the barrier, the questions answered, ``unjudged``) and judges the writes (``_settle``,
``_content_check``).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time

from sdcs_bench.core import safefs

CONTROL = ".git/specsnap"  # the control directory, in the sandbox (sandbox.guard.control_dir)


class ControlChannel:
    """The questions the controller answers through its control directory (a part of the cleave
    controller)."""

    def control_event(self, name: str) -> None:
        if name.startswith("barrier."):
            with self._barrier:
                try:
                    self._barrier_seen = max(self._barrier_seen, int(name.split(".")[1]))
                except ValueError:
                    return
                self._barrier.notify_all()
        elif (name.startswith("meter.") and not name.endswith(".tmp") and self.meter_files and self.rule.metered
              and name not in self._stale_meters):
            # A reference policy's meter, asked before each step under a token or turn rule. (Under
            # any other rule its files are counted when the session ends: tokenizing here would
            # hold up the judging of the writes that follow.)
            token = name[len("meter."):]
            with self._lock:
                if f"meter.{token}" in self._answered:
                    return
                self._answered.add(f"meter.{token}")
            self._meter(token)
        elif name.startswith(("ask.", "go.")) and not name.endswith(".tmp"):
            # ``ask.<k>``: the git hook's "may this commit land?" under an nth_py_edit rule (answered
            # after the cut too: the hook then reads the guard's state and refuses). ``go.<k>``: a
            # reference policy's question before its next action in a session cut at an edit (the
            # cut handshake): never answered after the cut, so the policy is killed waiting.
            with self._lock:
                if name in self._answered:
                    return
                self._answered.add(name)
            # (the hook waits for ack.<k>, the policy for ack.go.<k>)
            threading.Thread(target=self._answer, args=("ack." + name.removeprefix("ask."), name.startswith("go.")),
                             daemon=True).start()

    def _touch(self, name: str, text: str = "") -> None:
        """Create a file in the control directory without following a link planted there (and
        without blocking on a FIFO planted under its name: that raises, and the question fails)."""
        with safefs.open_dir(self.workdir, CONTROL) as fd:
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                          0o644, dir_fd=fd)
            try:
                if not stat.S_ISREG(os.fstat(out).st_mode):
                    raise safefs.Unsafe(errno.EINVAL, f"{CONTROL}/{name} is not a regular file")
                os.write(out, text.encode())
            finally:
                os.close(out)

    def _unlink(self, name: str) -> None:
        try:
            with safefs.open_dir(self.workdir, CONTROL) as fd:
                os.unlink(name, dir_fd=fd)
        except OSError:
            pass

    def _answer(self, ack: str, not_after_cut: bool) -> None:
        # Every write completed before the question has been seen (it came after them in the
        # watcher's one ordered stream); writes still in their grace timer are settled first, and a
        # change no event named is counted, so what is answered next is the verdict. A question
        # ``not_after_cut`` (the policy's) gets no answer once the cut has fired: its asker is killed
        # waiting, before its next action, however late the watcher was.
        self._settle()
        problem = self._content_check()
        if problem:
            self._unjudged(problem)
            return  # the asker gets no answer and refuses (the hook) or stops (the policy): fail closed
        if not_after_cut and self.fired.is_set():
            return
        try:
            self._touch(ack)
        except OSError:
            pass  # the asker gives up: fail closed

    def _wait_for_watcher(self) -> str | None:
        """Write a numbered barrier and wait until the watcher has seen it (so every event before it
        has been judged); the reason when it could not, else None."""
        with self._barrier:
            self._barrier_sent += 1
            n = self._barrier_sent
            try:
                self._touch(f"barrier.{n}", f"{time.monotonic()}\n")
            except OSError as exc:
                return f"cannot write the watcher's barrier ({exc.strerror or exc})"
            seen = self._barrier.wait_for(lambda: self._barrier_seen >= n or self.fired.is_set(),
                                          timeout=self.judge_timeout_s)
        self._unlink(f"barrier.{n}")
        if not seen:
            return f"the cleave watcher did not judge the writes before this call within {self.judge_timeout_s:g} s"
        return None

    def refusal(self) -> str | None:
        """Why a model call must not be answered now, or None. The watcher first judges every write
        completed before this question (so a call sent right after the cleaving write is refused
        however fast the agent was); a question it cannot judge in time is refused too, with the
        reason (the proxy records it): an unanswered question never fails open."""
        if self.fired.is_set():
            return "cleaved"
        if not self.rule.active or self.rule.metered:
            return None  # (a token or turn rule is decided by the calls themselves, not by writes)
        if not self._observer.is_alive():
            return self._unjudged("the cleave watcher is not running")
        problem = self._wait_for_watcher()
        if problem:
            return self._unjudged(problem)
        self._settle()
        problem = self._content_check()
        if problem:
            return self._unjudged(problem)
        return "cleaved" if self.fired.is_set() else None

    def _unjudged(self, reason: str) -> str:
        self.unjudged.append({"at_s": round(time.monotonic() - self._t0, 4), "reason": reason})
        return f"unjudged: {reason}"

    def cleaved_now(self) -> bool:
        """Has the cleave fired, counting every write completed before this call? An unanswerable
        question counts as cleaved (fail closed)."""
        return self.refusal() is not None
