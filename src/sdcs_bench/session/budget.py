"""A run's budget in dollars, kept at the model proxy (docs/cost.md#during-a-run-budgets).

The run's effective limits live in ``results/<run>/budget/budget.json`` (written by the run's main
process: the planned ``budget`` with the command line's ``budget_max_usd`` / ``budget_trial_max_usd``
over it). Every answered call's cost, at the planned prices (``plan/prices.json``), is appended to
``results/<run>/budget/spend.jsonl`` under an exclusive lock; before every model call the proxy asks
:meth:`Budget.refusal`, which reads the spend under the same lock and refuses once the run's or the
trial's spend has reached its limit. Fail closed: a limit it cannot check (an unreadable spend
ledger, a call it cannot price) refuses too.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any

from sdcs_bench.core.prices import PriceTable, row_cost

BUDGET_DIR = "budget"
LIMITS_FILE = "budget.json"
SPEND_FILE = "spend.jsonl"
REASON = "budget_exhausted"


def limits_path(study_dir: Path) -> Path:
    return Path(study_dir) / BUDGET_DIR / LIMITS_FILE


def spend_path(study_dir: Path) -> Path:
    return Path(study_dir) / BUDGET_DIR / SPEND_FILE


def read_limits(study_dir: Path) -> dict[str, float | None]:
    """The run's effective limits (both None: no budget)."""
    try:
        data = json.loads(limits_path(study_dir).read_text())
    except (OSError, ValueError):
        return {"max_usd": None, "trial_max_usd": None}
    return {k: (float(data[k]) if data.get(k) is not None else None) for k in ("max_usd", "trial_max_usd")}


class Budget:
    """One session's view of the run's budget."""

    def __init__(self, study_dir: Path, trial: str, stage: str) -> None:
        self.study_dir = Path(study_dir)
        self.trial, self.stage = trial, stage
        self.limits = read_limits(self.study_dir)
        prices = self.study_dir / "plan" / "prices.json"
        self.prices = PriceTable.parse(json.loads(prices.read_text())) if prices.is_file() else PriceTable()
        self._lock = threading.Lock()
        self.refused: str | None = None  # the reason of the first refusal, if any
        self.refused_by: str | None = None  # which limit: "run", "trial"; or "unpriced", "ledger" (fail closed)

    @property
    def active(self) -> bool:
        return any(v is not None for v in self.limits.values())

    def _locked(self, mode: str):
        path = spend_path(self.study_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, mode)
        fcntl.flock(fh, fcntl.LOCK_EX)
        return fh

    def spent(self) -> tuple[float, float]:
        """What the run and this trial have spent so far (every call ever answered, reruns included)."""
        with self._locked("a+") as fh:
            fh.seek(0)
            run = trial = 0.0
            for line in fh.read().splitlines():
                row = json.loads(line)
                run += float(row["cost_usd"])
                if row["trial"] == self.trial:
                    trial += float(row["cost_usd"])
        return run, trial

    def refusal(self) -> str | None:
        """``budget_exhausted: …`` once a limit is reached (or cannot be checked), else None."""
        if not self.active:
            return None
        with self._lock:
            if self.refused is not None:
                return self.refused
            try:
                run, trial = self.spent()
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self.refused_by = "ledger"
                self.refused = f"{REASON}: the run's spend ledger cannot be read ({exc}); refusing rather than overspend"
                return self.refused
            cap, trial_cap = self.limits["max_usd"], self.limits["trial_max_usd"]
            if cap is not None and run >= cap:
                self.refused_by, self.refused = "run", f"{REASON}: the run has spent ${run:.4f} of its ${cap:g} budget"
            elif trial_cap is not None and trial >= trial_cap:
                self.refused_by = "trial"
                self.refused = f"{REASON}: this trial has spent ${trial:.4f} of its ${trial_cap:g} budget"
            return self.refused

    def charge(self, row: dict[str, Any]) -> None:
        """Record one answered call's cost. A call no price covers (its model has none, or its reply
        carried no usage) makes every later call of the session refused: the budget cannot be kept."""
        if not self.active:
            return
        cost = row_cost(self.prices, row)
        if cost is None:
            with self._lock:
                if self.refused is None:
                    self.refused_by = "unpriced"
                    self.refused = (f"{REASON}: a call to model {row.get('model')!r} cannot be priced (no price in the "
                                    "run's price table, or no usage in its reply), so the budget cannot be kept")
            cost = 0.0
        line = json.dumps({"trial": self.trial, "stage": self.stage, "seq": row.get("seq"), "model": row.get("model"),
                           "cost_usd": round(cost, 8)}, sort_keys=True)
        with self._locked("a") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def record(self) -> dict[str, Any]:
        """What the session's record says of the budget (spent: None when the spend ledger is unreadable)."""
        try:
            run, trial = self.spent() if self.active else (None, None)
        except (OSError, ValueError, KeyError, TypeError):
            run = trial = None
        return {"limits": self.limits, "run_spent_usd": run, "trial_spent_usd": trial, "refused": self.refused,
                "refused_by": self.refused_by}
