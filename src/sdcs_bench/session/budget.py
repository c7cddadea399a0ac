"""A run's budget in dollars, kept at the model proxy (docs/cost.md#during-a-run-budgets).

The run's effective limits live in ``results/<run>/budget/budget.json`` (written by the run's main
process: the planned ``budget`` with the command line's ``budget_max_usd`` / ``budget_trial_max_usd``
over it, and whether the run prices replay for a test of the budget). Every session of the run
shares one spend ledger, ``results/<run>/budget/spend.jsonl``, read and appended under an exclusive
lock (``flock``), so its check and its reservation are one step for all the run's processes:

- Before the proxy forwards a model call, :meth:`Budget.refusal` prices the call's **worst case**
  (:func:`worst_case`: the request's input counted conservatively, at the dearest input price it
  can be billed at and the model's long-context tier when it reaches it; the request's own output
  limit, or its provider's default when it states none, at the output price) and, under the lock,
  refuses the call when the run's spend plus every reservation still held plus this worst case
  would pass the run's limit (or the trial's, counting the trial's own). Otherwise it appends a
  ``reserve`` row, holding that money for the call.
- When the call ends, the reservation becomes its cost (the proxy tells how it ended:
  :meth:`~sdcs_bench.proxy.server.CallInFlight.when_ended`):
  an answered call costs what its reply's usage says (a ``spend`` row naming the reservation); a
  call that failed before the provider could bill it (an error answer, an upstream never reached)
  releases it (a ``release`` row); a call that may have been billed without saying so (a reply
  without usage, an upstream lost mid-call) costs its whole reservation.
- A reservation carries its process (pid, the process's start time, its host): once that process
  is gone (a killed session), the next check drops the reservation (a ``release`` row); one made on
  another host lapses after :data:`REMOTE_RESERVATION_TTL_S`.

Every row has ``cost_usd`` (0 for reservations and releases), so the run's spend is their sum.

A replay (a scripted model) pays nothing: its calls are neither reserved nor charged, and no budget
stops them, unless the run prices replay for a test of the budget (``price_replay``), which its
records say. Fail closed: a limit it cannot check (an unreadable spend ledger, a call it cannot
price) refuses.
"""

from __future__ import annotations

import fcntl
import functools
import json
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.core.prices import PER, PriceTable, row_cost
from sdcs_bench.proxy import wire
from sdcs_bench.proxy.server import call_in_flight

BUDGET_DIR = "budget"
LIMITS_FILE = "budget.json"
SPEND_FILE = "spend.jsonl"
REASON = "budget_exhausted"
LIMIT_KEYS = ("max_usd", "trial_max_usd")

# What a call may output when its request states no limit: the most its provider lets any of its
# models output in one call (docs/cost.md#the-worst-case-of-a-call).
DEFAULT_OUTPUT_TOKENS = {
    "anthropic": 128_000,  # (the Messages API refuses a request without max_tokens, unbilled)
    "openai": 128_000,  # GPT-5 family (o-series 100,000; GPT-4.1 32,768)
    "gemini": 65_536,  # Gemini 2.5 Pro / Flash
}
# Gemini's thinking, counted beside maxOutputTokens (Google documents the two apart) unless the
# request turns thinking off (thinkingBudget 0): Gemini 2.5 Pro's largest thinking budget.
GEMINI_THINKING_TOKENS = 32_768
# Input a request names but does not carry (a stored conversation, a cached content, a file or a
# video by reference) is bounded by the largest context window of the three providers.
CONTEXT_TOKENS = 1_048_576
# The request's input, counted as o200k_base tokens of its body as sent (JSON and all), times the
# provider's factor (its own tokenizer may need more tokens than o200k_base for the same text),
# plus a fixed allowance for what the provider adds (tool-use system prompts, message framing).
INPUT_FACTOR = {"anthropic": 1.5, "openai": 1.25, "gemini": 1.5}
INPUT_OVERHEAD_TOKENS = 1_000
# A reservation made on another host (a cluster sharing the results directory), whose process
# cannot be checked from here: held until settled, or for this long at most.
REMOTE_RESERVATION_TTL_S = 2 * 3600.0
# A call that would fit but for other calls' reservations waits (up to this long, polling) for them to
# settle, rather than ending its session as if the budget were spent: most settle for far less than
# their worst case.
HOLD_WAIT_S = 120.0
HOLD_POLL_S = 0.5
# httpx errors raised before a request left for the upstream: nothing could be billed.
NEVER_SENT = ("ConnectError", "ConnectTimeout", "PoolTimeout", "UnsupportedProtocol", "InvalidURL",
              "LocalProtocolError")


def _usd(amount: float) -> float:
    """Dollars as the ledger keeps them: to 1e-8, rounded up (a sum of them never falls short)."""
    return math.ceil(round(amount * 1e8, 3)) / 1e8


def limits_path(run_dir: Path) -> Path:
    return Path(run_dir) / BUDGET_DIR / LIMITS_FILE


def spend_path(run_dir: Path) -> Path:
    return Path(run_dir) / BUDGET_DIR / SPEND_FILE


def read_limits(run_dir: Path) -> dict[str, Any]:
    """The run's effective limits (both None: no budget) and its ``price_replay`` setting."""
    try:
        data = json.loads(limits_path(run_dir).read_text())
    except (OSError, ValueError):
        return {"max_usd": None, "trial_max_usd": None, "price_replay": False}
    limits: dict[str, Any] = {k: (float(data[k]) if data.get(k) is not None else None) for k in LIMIT_KEYS}
    limits["price_replay"] = data.get("price_replay") is True
    return limits


# --------------------------------------------------------------------------- the worst case of a call


@dataclass(frozen=True)
class WorstCase:
    """The most one model call can cost, priced before it is made."""

    model: str
    input_tokens: int
    output_tokens: int
    output_limit: str  # where the output bound came from (the request's field, or its provider's default)
    input_usd_per_m: float
    output_usd_per_m: float
    long_context: bool
    usd: float

    def describe(self) -> str:
        return (f"{self.input_tokens:,} input tokens at ${self.input_usd_per_m:g}/M and {self.output_tokens:,} "
                f"output ({self.output_limit}) at ${self.output_usd_per_m:g}/M")


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _field(obj: Any, *names: str) -> Any:
    """A field by its JSON name or its proto name (Gemini's API reads both)."""
    if not isinstance(obj, dict):
        return None
    return next((obj[n] for n in names if n in obj), None)


def _walk(obj: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) of a parsed JSON body, at any depth."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                yield key, value
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _output_bound(protocol: str, family: str, payload: dict[str, Any]) -> tuple[int, str]:
    """The most output tokens (reasoning and thinking included) the call can be billed for, and why."""
    default = DEFAULT_OUTPUT_TOKENS[family]
    if protocol == wire.ANTHROPIC:  # max_tokens includes extended thinking's budget
        stated = _positive_int(payload.get("max_tokens"))
        return (stated, "max_tokens") if stated else (default, f"none stated: {family}'s {default:,}")
    if protocol == wire.OPENAI_RESPONSES:  # max_output_tokens includes reasoning tokens
        stated = _positive_int(payload.get("max_output_tokens"))
        return (stated, "max_output_tokens") if stated else (default, f"none stated: {family}'s {default:,}")
    if protocol == wire.OPENAI_CHAT:  # per choice, reasoning included; n choices are n outputs
        limits = [(v, k) for k in ("max_completion_tokens", "max_tokens") if (v := _positive_int(payload.get(k)))]
        n = _positive_int(payload.get("n")) or 1
        tokens, why = max(limits) if limits else (default, f"none stated: {family}'s {default:,}")
        return tokens * n, (f"{why} x n={n}" if n > 1 else why)
    config = _field(payload, "generationConfig", "generation_config") or {}  # Gemini
    stated = _positive_int(_field(config, "maxOutputTokens", "max_output_tokens"))
    tokens, why = (stated, "maxOutputTokens") if stated else (default, f"none stated: {family}'s {default:,}")
    thinking = _field(config, "thinkingConfig", "thinking_config") or {}
    budget = _field(thinking, "thinkingBudget", "thinking_budget")
    if not (isinstance(budget, int) and not isinstance(budget, bool) and budget == 0):
        tokens += max(GEMINI_THINKING_TOKENS, _positive_int(budget) or 0)
        why += f" + {GEMINI_THINKING_TOKENS:,} thinking"
    n = _positive_int(_field(config, "candidateCount", "candidate_count")) or 1
    return tokens * n, (f"{why} x {n} candidates" if n > 1 else why)


def _unsent_input(protocol: str, payload: dict[str, Any]) -> bool:
    """Does the request name input its body does not carry (billed as input all the same): a stored
    conversation, a cached content, or a file, image or video the provider fetches itself?"""
    if protocol == wire.OPENAI_RESPONSES and (payload.get("previous_response_id") or payload.get("conversation")):
        return True
    if _field(payload, "cachedContent", "cached_content"):
        return True
    content = [payload.get(k) for k in ("messages", "system", "input", "contents", "systemInstruction",
                                        "system_instruction")]
    for key, value in _walk(content):
        if key in ("fileData", "file_data") and value:  # Gemini: a file or a video by URI
            return True
        if key in ("file_id", "file_url") and isinstance(value, str) and value:  # OpenAI: a file by reference
            return True
        if key == "source" and isinstance(value, dict) and value.get("type") in ("url", "file"):
            return True  # Anthropic: an image or a document by URL or by file id
        url = value.get("url") if key == "image_url" and isinstance(value, dict) else value if key == "image_url" else ""
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            return True  # OpenAI: an image the provider fetches
    return False


def _input_rate(protocol: str, rates: Any, payload: dict[str, Any]) -> float:
    """The dearest price an input token of this call can be billed at: a cache write's wherever a
    write can happen (Anthropic: where the request asks for caching; a 1-hour write's where it asks
    for that; OpenAI and Google: their write price, the input price)."""
    one_hour = getattr(rates, "cache_write_1h", None)
    if protocol != wire.ANTHROPIC:
        return max(rates.uncached_input, rates.cache_write)
    asked = [v for k, v in _walk(payload) if k == "cache_control"]
    if not asked:
        return rates.uncached_input
    rate = max(rates.uncached_input, rates.cache_write)
    if any(isinstance(v, dict) and str(v.get("ttl")) == "1h" for v in asked):
        rate = max(rate, one_hour if one_hour is not None else 2 * rates.uncached_input)  # (a 1-hour write: 2x input)
    return rate


def input_bound(protocol: str, payload: dict[str, Any], body: bytes) -> int:
    """The most input tokens the call can be billed for (see :data:`INPUT_FACTOR`)."""
    from sdcs_bench.core.tokens import count_tokens
    family = wire.FAMILY[protocol]
    counted = count_tokens(body.decode("utf-8", errors="replace"))
    tokens = math.ceil(counted * INPUT_FACTOR[family]) + INPUT_OVERHEAD_TOKENS
    if _unsent_input(protocol, payload):
        tokens += CONTEXT_TOKENS
    return tokens


def worst_case(table: PriceTable, protocol: str, model: str | None, payload: dict[str, Any],
               body: bytes) -> WorstCase | None:
    """The most a model call can cost (None: its model has no price)."""
    price = table.find(model)
    if price is None:
        return None
    tokens_in = input_bound(protocol, payload, body)
    tokens_out, why = _output_bound(protocol, wire.FAMILY[protocol], payload)
    long = price.long_rates is not None and price.long_above is not None and tokens_in > price.long_above
    rates = price.long_rates if long else price.rates
    rate_in = _input_rate(protocol, rates, payload)
    usd = (tokens_in * rate_in + tokens_out * rates.output) / PER
    return WorstCase(str(model), tokens_in, tokens_out, why, rate_in, rates.output, long, usd)


# --------------------------------------------------------------------------- reservations' holders


@functools.cache
def _host() -> str:
    """This host and its pid namespace: where a pid means this process."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}:{namespace}"


def _proc_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), or None (gone, a zombie, or no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return None if not fields or fields[0] in ("Z", "X") else fields[19]


def _holder_alive(row: dict[str, Any], now: float) -> bool:
    if row.get("host") != _host():
        return now - float(row.get("at") or 0) < REMOTE_RESERVATION_TTL_S
    pid = row.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    start = _proc_start(pid)
    if start is not None:
        return row.get("pid_start") in (None, start)  # (a pid reused by a later process is not its holder)
    if Path("/proc/self/stat").exists():
        return False  # (no /proc entry, or a zombie: gone)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


@dataclass
class _Tally:
    run: float = 0.0  # spent by the run
    trial: float = 0.0  # spent by this trial
    held_run: float = 0.0  # reserved for calls in flight, the run's
    held_trial: float = 0.0  # ... this trial's
    gone: tuple[dict[str, Any], ...] = ()  # reservations whose process is gone


def _tally(text: str, trial: str, now: float) -> _Tally:
    t = _Tally()
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    closed = {row["reservation"] for row in rows if row.get("reservation")}
    gone = []
    for row in rows:
        cost = float(row["cost_usd"])
        t.run += cost
        if row["trial"] == trial:
            t.trial += cost
        if row.get("kind") == "reserve" and row["id"] not in closed:
            if not _holder_alive(row, now):  # (closed now, charged its worst case: counted as spent)
                gone.append(row)
                t.run += float(row["reserved_usd"])
                if row["trial"] == trial:
                    t.trial += float(row["reserved_usd"])
                continue
            t.held_run += float(row["reserved_usd"])
            if row["trial"] == trial:
                t.held_trial += float(row["reserved_usd"])
    t.gone = tuple(gone)
    return t


# --------------------------------------------------------------------------- the budget


class Budget:
    """One session's view of the run's budget."""

    def __init__(self, run_dir: Path, trial: str, stage: str) -> None:
        self.run_dir = Path(run_dir)
        self.trial, self.stage = trial, stage
        self.limits = read_limits(self.run_dir)
        self.price_replay = bool(self.limits.get("price_replay"))
        prices = self.run_dir / "plan" / "prices.json"
        self.prices = PriceTable.parse(json.loads(prices.read_text())) if prices.is_file() else PriceTable()
        self._lock = threading.RLock()
        self.refused: str | None = None  # the reason of the first refusal, if any
        self.refused_by: str | None = None  # which limit: "run", "trial"; or "unpriced", "ledger" (fail closed)
        self.session_spent = 0.0  # what this session's calls cost
        self.replay_calls = 0  # replayed calls this session saw
        self._settled: dict[int, dict[str, Any]] = {}  # rows whose cost the proxy already charged (id -> row)

    @property
    def active(self) -> bool:
        return any(self.limits.get(k) is not None for k in LIMIT_KEYS)

    def _unpaid(self, mode: str | None) -> bool:
        """A replayed call, in a run that does not price replay: nothing paid, nothing to keep."""
        return mode == "replay" and not self.price_replay

    def _locked(self, mode: str):
        path = spend_path(self.run_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, mode)
        fcntl.flock(fh, fcntl.LOCK_EX)
        return fh

    def _append(self, fh, *rows: dict[str, Any]) -> None:
        fh.write("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
        fh.flush()
        os.fsync(fh.fileno())

    def _read(self) -> _Tally:
        with self._locked("a+") as fh:
            fh.seek(0)
            return _tally(fh.read(), self.trial, time.time())

    def spent(self) -> tuple[float, float]:
        """What the run and this trial have spent so far (every call ever settled, reruns included)."""
        t = self._read()
        return t.run, t.trial

    def _refuse(self, by: str, reason: str) -> str:
        self.refused_by, self.refused = by, f"{REASON}: {reason}"
        return self.refused

    def refusal(self) -> str | None:
        """``budget_exhausted: …`` when the call being made (the proxy's, on this thread) cannot be
        afforded at its worst case beside the run's spend and reservations (or a limit cannot be
        checked), else None, with the worst case reserved. Once refused, always refused."""
        if not self.active:
            return None
        call = call_in_flight()
        if call is not None and call.mode == "replay":
            with self._lock:
                self.replay_calls += 1  # (the session's record says what its replay spent, and why)
            if not self.price_replay:
                return None  # (a replay spends nothing: no budget stops it)
        priced = call is not None and call.protocol is not None and self.refused is None
        worst = worst_case(self.prices, call.protocol, call.model, call.payload, call.body) if priced else None
        with self._lock:
            if self.refused is not None:
                return self.refused
            if priced and worst is None:
                return self._refuse("unpriced", f"a call to model {call.model!r} cannot be priced (no price in the "
                                                "run's price table), so the budget cannot be kept")
            deadline = time.monotonic() + HOLD_WAIT_S
            try:
                while True:
                    reason, reservation = self._try_reserve(worst, call)
                    if reason is None or not reason[2] or time.monotonic() >= deadline:
                        break
                    time.sleep(HOLD_POLL_S)  # (others' reservations in the way: they may settle for less)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                return self._refuse("ledger", f"the run's spend ledger cannot be read ({exc}); refusing rather than "
                                              "overspend")
            if reason is not None:
                return self._refuse(*reason[:2])
            if reservation is not None and call is not None:
                call.when_ended(lambda row: self._settle(reservation, call.mode, row))
            return None

    def _try_reserve(self, worst: WorstCase | None, call: Any) -> tuple[tuple[str, str, bool] | None, dict | None]:
        """Under the ledger's lock: which limit the call would pass (:meth:`_over`), else its
        reservation, written. A reservation whose process is gone is closed on the way, charged its
        worst case: the call it held may have been billed."""
        with self._locked("a+") as fh:
            fh.seek(0)
            now = time.time()
            t = _tally(fh.read(), self.trial, now)
            reason = self._over(t, worst)
            rows = [{"kind": "release", "reservation": r["id"], "trial": r["trial"], "stage": r["stage"],
                     "cost_usd": float(r.get("reserved_usd") or 0.0),
                     "why": f"its process (pid {r.get('pid')}) is gone: charged its worst case, as the call "
                            "it held may have been billed", "at": now}
                    for r in t.gone]
            reservation = None
            if reason is None and worst is not None:
                reservation = {
                    "kind": "reserve", "id": f"{os.getpid()}-{uuid.uuid4().hex[:12]}", "trial": self.trial,
                    "stage": self.stage, "model": worst.model, "cost_usd": 0.0,
                    "reserved_usd": _usd(worst.usd), "worst_case": asdict(worst), "pid": os.getpid(),
                    "pid_start": _proc_start(os.getpid()), "host": _host(), "at": now,
                    **self._replay_label(call.mode if call else None)}
                rows.append(reservation)
            if rows:
                self._append(fh, *rows)
            return reason, reservation

    def _over(self, t: _Tally, worst: WorstCase | None) -> tuple[str, str, bool] | None:
        """Which limit this call would pass (and how, and whether only other calls' reservations are
        in the way: then it may fit once they settle), or None."""
        cost = worst.usd if worst is not None else 0.0
        for by, cap, spent, held, whose in (("run", self.limits["max_usd"], t.run, t.held_run, "the run"),
                                            ("trial", self.limits["trial_max_usd"], t.trial, t.held_trial,
                                             "this trial")):
            if cap is None:
                continue
            fits_alone = spent + cost <= cap
            if spent >= cap:
                return by, f"{whose} has spent ${spent:.4f} of its ${cap:g} budget", False
            if held and spent + held >= cap:
                return by, (f"{whose} has spent ${spent:.4f} of its ${cap:g} budget and holds ${held:.4f} for calls "
                            "in flight"), fits_alone
            if worst is not None and spent + held + cost > cap:
                return by, (f"{whose} has spent ${spent:.4f} of its ${cap:g} budget and holds ${held:.4f} for calls "
                            f"in flight; this call could cost up to ${cost:.4f} ({worst.describe()})"), bool(held) and fits_alone
        return None

    def _replay_label(self, mode: str | None) -> dict[str, Any]:
        return {"replay_priced_for_budget_test": True} if mode == "replay" else {}

    def _settle(self, reservation: dict[str, Any], mode: str, row: dict[str, Any] | None) -> None:
        """The end of a call this budget reserved for (``row``: its ledger row, None when the proxy
        failed while answering it): its cost replaces the reservation."""
        held = float(reservation["reserved_usd"])
        answered = row is not None and row.get("kind") == "generate" and row.get("status") == 200 \
            and not row.get("refused")
        error = (row or {}).get("upstream_error")
        if answered:
            cost = row_cost(self.prices, row)
            settled = "usage"
            if cost is None:  # answered, but its reply carried no usage: it may have cost all it could
                cost, settled = held, "worst case: the reply carried no usage"
                with self._lock:
                    if self.refused is None:
                        self._refuse("unpriced", f"a call to model {row.get('model')!r} was answered without usage "
                                                 "in its reply, so the budget cannot be kept")
        elif mode == "forward" and (row is None or (error and error not in NEVER_SENT)):
            cost, settled = held, f"worst case: the call ended without an answer ({error or 'a proxy error'})"
        else:
            cost, settled = None, None
        base = {"reservation": reservation["id"], "trial": self.trial, "stage": self.stage,
                "at": time.time(), **self._replay_label(mode)}
        if cost is None:
            out = {**base, "kind": "release", "cost_usd": 0.0,
                   "why": f"the call was not billed (HTTP {(row or {}).get('status')})"}
        else:
            out = {**base, "kind": "spend", "seq": (row or {}).get("seq"), "model": reservation.get("model"),
                   "cost_usd": _usd(cost), "settled": settled}
        try:
            with self._locked("a") as fh:
                self._append(fh, out)
        except OSError as exc:
            with self._lock:
                if self.refused is None:
                    self._refuse("ledger", f"the run's spend ledger cannot be written ({exc}); refusing rather "
                                           "than overspend")
            return
        with self._lock:
            self.session_spent += out["cost_usd"]
            if row is not None:
                self._settled[id(row)] = row

    def charge(self, row: dict[str, Any]) -> None:
        """Record one answered call's cost (a call the proxy already settled from its reservation is
        not charged again). A call no price covers (its model has none, or its reply carried no
        usage) makes every later call of the session refused: the budget cannot be kept."""
        if not self.active:
            return
        with self._lock:
            if id(row) in self._settled:
                return
            if self._unpaid(row.get("mode")):
                return  # (a replayed call paid nothing)
        cost = row_cost(self.prices, row)
        if cost is None:
            with self._lock:
                if self.refused is None:
                    self._refuse("unpriced", f"a call to model {row.get('model')!r} cannot be priced (no price in the "
                                             "run's price table, or no usage in its reply), so the budget cannot be "
                                             "kept")
            cost = 0.0
        line = {"kind": "spend", "trial": self.trial, "stage": self.stage, "seq": row.get("seq"),
                "model": row.get("model"), "cost_usd": _usd(cost), **self._replay_label(row.get("mode"))}
        with self._locked("a") as fh:
            self._append(fh, line)
        with self._lock:
            self.session_spent += line["cost_usd"]
            self._settled[id(row)] = row

    def record(self) -> dict[str, Any]:
        """What the session's record says of the budget (spent: None when the spend ledger is unreadable)."""
        try:
            t = self._read() if self.active else None
        except (OSError, ValueError, KeyError, TypeError):
            t = None
        out: dict[str, Any] = {
            "limits": self.limits, "run_spent_usd": t.run if t else None, "trial_spent_usd": t.trial if t else None,
            "run_reserved_usd": round(t.held_run, 8) if t else None, "session_spent_usd": round(self.session_spent, 8),
            "refused": self.refused, "refused_by": self.refused_by}
        if self.replay_calls and self.price_replay:
            out["replay_priced_for_budget_test"] = True
            out["replay"] = ("priced at list prices for a test of the budget (price_replay): nothing was paid, but "
                             "these calls count against it")
        elif self.replay_calls:
            out["replay"] = "not paid: a replay spends $0, and no budget stops it"
        return out
