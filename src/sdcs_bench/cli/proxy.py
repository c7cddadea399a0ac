"""``proxy``: the recording model proxy in the foreground, for agents run by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from sdcs_bench.core.errors import SpecSnapError

commands = typer.Typer()


@commands.command("proxy")
def proxy(
    ledger: Annotated[Path, typer.Option("--ledger", help="append every call's usage here (JSON lines)")],
    replay: Annotated[Optional[Path], typer.Option("--replay", help="serve this replay script instead of forwarding")] = None,
    session: Annotated[int, typer.Option("--session", help="which session of the replay script to serve")] = 1,
    upstream: Annotated[Optional[list[str]], typer.Option("--upstream", help="PROVIDER=URL (forward mode; default: the provider's API)")] = None,
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: any free port)")] = 0,
    cut: Annotated[Optional[str], typer.Option("--cut", help="after_tokens:T or after_turns:N: refuse every call "
                                                              "after the one that reaches it, and say so")] = None,
) -> None:
    """Run the recording model proxy in the foreground, for agents run by hand: point the agent's
    base URL at it and every call's usage lands in --ledger (EXTERNAL_AGENT_PROTOCOL.md). With
    --cut, the call that reaches the cut is the last one answered (stop the agent then)."""
    import threading
    import time

    from sdcs_bench.proxy import ModelProxy, ReplayScript
    from sdcs_bench.proxy.server import DEFAULT_UPSTREAMS
    from sdcs_bench.trial.workload_model import METER_KINDS, CleaveRule

    rule = CleaveRule.parse(cut) if cut else None
    if rule is not None and not rule.metered:
        raise SpecSnapError(f"--cut {cut!r}: the proxy counts model calls, so only a token or turn rule", METER_KINDS)
    count = {"calls": 0, "tokens": 0, "reached": False}
    lock = threading.Lock()

    def answered(tokens: int, seq: int, at: float) -> None:
        with lock:
            if rule is None or count["reached"]:
                return
            count["calls"] += 1
            count["tokens"] += tokens
            if rule.reached(count["calls"], count["tokens"]):
                count["reached"] = True
                print(f"specsnap proxy: the cut {rule} was reached at call {count['calls']} (ledger row {seq}, "
                      f"{count['tokens']:,} tokens): stop the agent now; every later call is refused",
                      file=sys.stderr, flush=True)

    hooks = {"on_answered": answered, "refusal": lambda: "cleaved" if count["reached"] else None}

    ups = {}
    for item in upstream or []:
        name, _, url = item.partition("=")
        if name not in DEFAULT_UPSTREAMS or not url:
            raise SpecSnapError(f"--upstream {item!r} must be PROVIDER=URL", DEFAULT_UPSTREAMS)
        ups[name] = url
    if replay is not None:
        server = ModelProxy(ledger=ledger, mode="replay", script=ReplayScript.load(replay).for_session(session, {}),
                            port=port, **hooks)
    else:
        server = ModelProxy(ledger=ledger, mode="forward", upstreams=ups, port=port, **hooks)
    with server:
        print(f"specsnap proxy ({server.mode}) on {server.url}; ledger {ledger}; Ctrl-C to stop", file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    print(json.dumps(server.ledger.totals().to_dict()))
