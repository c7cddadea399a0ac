"""The recording model proxy and replay server (docs/agents.md)."""

from sdcs_bench.proxy.script import ReplayScript, SessionScript
from sdcs_bench.proxy.server import INFRA_STATUSES, Ledger, ModelProxy, ledger_totals, read_ledger
from sdcs_bench.proxy.wire import PROTOCOLS

__all__ = ["INFRA_STATUSES", "PROTOCOLS", "Ledger", "ModelProxy", "ReplayScript", "SessionScript", "ledger_totals",
           "read_ledger"]
