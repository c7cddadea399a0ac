"""The recording model proxy and replay server (SPEC §7)."""

from .script import ReplayScript, SessionScript
from .server import INFRA_STATUSES, Ledger, ModelProxy, ledger_totals, read_ledger
from .wire import PROTOCOLS

__all__ = ["INFRA_STATUSES", "PROTOCOLS", "Ledger", "ModelProxy", "ReplayScript", "SessionScript", "ledger_totals",
           "read_ledger"]
