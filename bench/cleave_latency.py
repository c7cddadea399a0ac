"""Cleave latency per harness: from the session's first qualifying .py write (the file's mtime)
to the agent's process group being gone, measured side by side for every replay agent in one run.

    python bench/cleave_latency.py [--repeat 10] [--agents replay_claude_code,replay_codex]

Each repetition scaffolds a fresh tier_2 sandbox and runs session 1 of the agent's replay script
(the real harness binary, the replay proxy on 127.0.0.1, bwrap). Exact-stop harnesses (hooks)
end themselves; the others are killed by the watcher. Prints p50/p95/max per harness and how the
session stopped. Needs `specsnap install-harnesses`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path


def replay_agents() -> list[str]:
    from sdcs_bench.trial import config

    return [a for a in config.options("agent") if config.entity("agent", a).get("proxy") == "replay"]


def pct(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--agents", default=None, help="comma-separated replay agents (default: all)")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    from sdcs_bench.trial import config
    from sdcs_bench.trial.arms import Arm
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.scaffold import scaffold
    from sdcs_bench.trial.schedule import effective_schedule
    from sdcs_bench.session.runner import run_session
    from sdcs_bench.trial.workload import load_workload

    agents = args.agents.split(",") if args.agents else replay_agents()
    workload = load_workload("tier_2")
    arm = Arm.from_config(config.entity("arm", "AGENTS_MD_Only"))
    session = effective_schedule(workload, config.entity("variant", "none"))[0]
    backend = make_backend("bwrap")
    table = Table(title=f"cleave latency: write -> process group gone ({args.repeat} runs each, tier_2 S1)")
    for col in ("agent", "harness", "stopped by", "p50 s", "p95 s", "max s", "fired"):
        table.add_column(col)
    with tempfile.TemporaryDirectory(prefix="specsnap-bench-") as tmp:
        os.environ.setdefault("SPECSNAP_WORK_ROOT", str(Path(tmp) / "work"))
        for agent in agents:
            cfg = config.entity("agent", agent)
            latencies, stopped, fired = [], set(), 0
            for i in range(args.repeat):
                work = Path(tmp) / f"{agent}-{i}"
                scaffold(workload, arm, work / "sandbox")
                rec = run_session(trial_id=f"bench-{agent}-{i}", index=1, session=session, workload=workload, arm=arm,
                                  agent_cfg=cfg, workdir=work / "sandbox", stage_dir=work / "stage",
                                  backend=backend, timeout_s=300)
                if rec["cleave"].get("fired"):
                    fired += 1
                    latencies.append(rec["cleave"]["write_to_exit_s"])
                    stopped.add(rec["cleave"]["stopped_by"])
            row = [f"{pct(latencies, 50):.3f}", f"{pct(latencies, 95):.3f}", f"{max(latencies):.3f}"] if latencies \
                else ["-", "-", "-"]
            table.add_row(agent, cfg["harness"], ", ".join(sorted(stopped)) or "-", *row, f"{fired}/{args.repeat}")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
