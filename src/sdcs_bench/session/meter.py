"""The meter of a cleave controller: the answered model calls a session has made and their tokens,
which a token or turn rule (``after_tokens:T``, ``after_turns:N``) cuts at, as a qualifying edit cuts
under an edit rule (docs/protocol.md#cut-points). The calls are the model proxy's count, or, for a
reference policy, its own meter: before each step it asks through the control directory
(``meter.<k>``: the step and the texts it handles), counted as a model call of those texts' tokens.

:class:`CallMeter` is a part of :class:`sdcs_bench.session.cleave.CleaveController`, which sets up its
state (``meter_files``, ``call_tokens``, ``call_times``, the meter files left by an earlier session and
those it could not read) and fires the cleave (``_fire``) under its lock.
"""

from __future__ import annotations

import json
import math
import os
import time

from sdcs_bench.core import safefs
from sdcs_bench.core.tokens import meter_tokens
from sdcs_bench.session.control import CONTROL


class CallMeter:
    """Counting a session's model calls, and a reference policy's meter questions (a part of the
    cleave controller)."""

    def count_call(self, tokens: int, *, by: str = "proxy", seq: int | None = None, step: str | None = None,
                   at: float | None = None) -> bool:
        """Count one answered model call and its tokens; under ``after_tokens:T`` / ``after_turns:N``
        fire the cleave once the session's total reaches T (or this is the N-th call), exactly as a
        qualifying edit would: the guard refuses every ref update, every later call is refused, the
        agent is killed. The call that reaches it was answered; nothing after it is. Returns
        whether the cleave has fired."""
        with self._lock:
            if self.fired.is_set() and (self.rule.metered or by != "meter"):
                return True  # (a meter read after an edit cut counts the steps taken before it, as a record)
            self.call_tokens.append(max(0, int(tokens)))
            self.call_times.append(at if at is not None or by == "meter" else time.time())
            if not self.rule.reached(self.calls, self.tokens):
                return False
            self.record = {"fired": True, "by": by, "rule": str(self.rule), "path": None, "at_tokens": self.tokens,
                           "at_turns": self.calls, "after_call": self.calls, "at_s": round(time.monotonic() - self._t0, 4),
                           "wall_time": time.time()}
            if seq is not None:
                self.record["ledger_seq"] = seq
            if step is not None:
                self.record["step"] = step
            self._fire()  # (a harness with an exact stop gets its grace, as at an edit)
            return True

    def _meter(self, token: str) -> None:
        """A reference policy's question before one of its steps (``meter.<k>``: the step and the
        texts it handles): count it as a model call of the texts' ``o200k_base`` tokens; answer
        (``ack.meter.<k>``) unless that call reached the cut, in which case the policy is killed
        waiting."""
        data = None
        try:
            data = safefs.read_file(self.workdir, f"{CONTROL}/meter.{token}", limit=1 << 24)
            asked = json.loads(data or b"")
            step, texts = str(asked["step"]), [str(t) for t in asked["texts"]]
            at = asked.get("t")
            at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None
            at = at if at is not None and math.isfinite(at) else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
            raise RuntimeError(f"a meter question the watcher cannot read: {data[:200] if data else data!r}") from None
        tokens = meter_tokens(*texts)
        if not self.count_call(tokens, by="meter", step=step or None, at=at) and self.rule.metered:
            self._touch(f"ack.meter.{token}")  # (under another rule the policy does not wait)

    def _count_left_meters(self) -> None:
        """Count the meter files of steps the watcher did not see (under any rule but a token or turn
        cut the policy writes them without waiting, and they are counted here, when the session
        ends), in the policy's order; never one an earlier session left."""
        def order(name: str) -> tuple[int, ...]:
            return tuple(int(p) if p.isdigit() else -1 for p in name.split(".")[1:])
        for name in sorted(self._meter_names() - self._stale_meters, key=order):
            token = name[len("meter."):]
            if f"meter.{token}" in self._answered:
                continue
            self._answered.add(f"meter.{token}")
            try:
                self._meter(token)
            except RuntimeError as exc:
                if self.rule.metered:  # (a meter no cut reads is a record: an unreadable one leaves it incomplete)
                    self.errors.append(str(exc))
                self.unreadable_meters.append(str(exc)[:300])

    def _meter_names(self) -> set[str]:
        try:
            with safefs.open_dir(self.workdir, CONTROL) as fd:
                return {n for n in os.listdir(fd) if n.startswith("meter.") and not n.endswith(".tmp")}
        except OSError:
            return set()

    @property
    def calls(self) -> int:
        """Answered model calls counted so far (a reference policy: its metered steps)."""
        return len(self.call_tokens)

    @property
    def tokens(self) -> int:
        """Their tokens, in all."""
        return sum(self.call_tokens)
