"""``specsnap estimate``: what a planned study will cost before it runs (docs/cost.md#before-a-run).

Per agent: the trials and sessions the plan holds, and an estimate of their tokens and dollars,
each with its basis, in this order of preference:

1. **a pilot** (``--pilot RUN``, a finished run): the mean tokens of that agent's sessions there
   (on the same workload where it ran one, else on any), component by component, priced at the
   agent's model's prices;
2. **a published per-run figure** for the workload (``data/published.yaml``, ``per_run_tokens``): its
   total over its sessions, priced as uncached input (no split was published);
3. **the workload's TES budget** (``budget_tokens``: what the study allows a trial, not a
   measurement) over its sessions, priced the same way.

A reference policy calls no model: 0 tokens, $0. A model without a price in ``conf/prices.yaml``
has its tokens estimated and its cost unknown. A summary continuation's handoff calls are counted,
not estimated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sdcs_bench.core.prices import KINDS, PriceTable, add
from sdcs_bench.pipeline.leaderboard import published
from sdcs_bench.pipeline.plan import make_plan, read_prices
from sdcs_bench.trial.workload import load_workload

COMPONENTS = (*KINDS, "reasoning")


@dataclass
class AgentEstimate:
    agent: str
    model: str
    reference: bool
    trials: int = 0
    sessions: int = 0
    handoff_calls: int = 0
    tokens: float = 0.0
    cost_usd: float | None = 0.0
    bases: dict[str, str] = field(default_factory=dict)  # workload -> basis

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _per_session(pilot: pd.DataFrame | None, agent: str, workload: str, budget: int, sessions: int
                 ) -> tuple[dict[str, float], str, bool]:
    """One session's tokens by component, its basis, and whether the split is measured (a pilot)."""
    if pilot is not None and len(pilot):
        mine = pilot[pilot["agent"] == agent]
        here = mine[mine["workload"] == workload] if "workload" in mine else mine.iloc[0:0]
        use = here if len(here) else mine
        if len(use):
            means = {k: float(use[f"tokens_{k}"].fillna(0).mean()) for k in COMPONENTS if f"tokens_{k}" in use}
            where = f"on {workload}" if len(here) else "on other workloads"
            return means, f"pilot: mean of {len(use)} session(s) of {agent} {where}", True
    for figure in published().get("per_run_tokens") or []:
        if figure["workload"] == workload:
            per = figure["tokens"] / figure["sessions"]
            return ({"uncached_input": per}, f"published: {figure['tokens']:,} tokens over {figure['sessions']} sessions "
                    f"({' '.join(figure['source'].split())})", False)
    return ({"uncached_input": budget / max(sessions, 1)},
            f"the workload's TES budget ({budget:,} tokens a trial, not a measurement) over its {sessions} session(s)", False)


def _pilot_sessions(pilot_dir: Path) -> pd.DataFrame:
    ledger, cards = pilot_dir / "ledger.csv", pilot_dir / "scorecards.csv"
    if not ledger.is_file() or not cards.is_file():
        from sdcs_bench.core.errors import SpecSnapError

        raise SpecSnapError(f"--pilot {pilot_dir}: no ledger.csv and scorecards.csv there (a finished, aggregated run)")
    rows = pd.read_csv(ledger)
    if "status" in rows:  # a session the budget stopped is no measure of what one costs
        rows = rows[rows["status"] != "budget_exhausted"]
    workloads = pd.read_csv(cards, usecols=["trial", "workload"])
    return rows.merge(workloads, on="trial", how="left")


def estimate(study: str, overrides: list[str] | None = None, pilot_dir: Path | None = None,
             results: Path = Path("results")) -> tuple[list[AgentEstimate], PriceTable]:
    plan = make_plan(study, list(overrides or []), results, keys=False)  # (an estimate needs no key)
    prices = read_prices()
    pilot = _pilot_sessions(pilot_dir) if pilot_dir is not None else None
    by_agent: dict[str, AgentEstimate] = {}
    budgets: dict[str, int] = {}
    for trial in plan.trials:
        sessions = [s for s in trial["stages"] if s.startswith("session_")]
        wid = trial["workload"]["id"]
        for index, stage in enumerate(sessions, start=1):
            agent = trial["successor"] if index > 1 and trial.get("successor") else trial["agent"]
            est = by_agent.setdefault(agent["name"], AgentEstimate(agent["name"], str(agent.get("model")),
                                                                  bool(agent.get("reference"))))
            est.trials += index == 1  # (a handoff's successor: its sessions, not its trials)
            est.sessions += 1
            if est.reference:
                est.bases.setdefault(wid, "a reference policy calls no model")
                continue
            if wid not in budgets:
                budgets[wid] = load_workload(wid).budget_tokens
            tokens, basis, measured = _per_session(pilot, agent["name"], wid, budgets[wid], len(sessions))
            est.bases.setdefault(wid, basis + ("" if measured else "; priced as uncached input (no split known)"))
            est.tokens += sum(tokens.values())
            price = prices.find(est.model)
            # (a session is many calls: its total at the base prices, never one long-context call)
            est.cost_usd = add(est.cost_usd, price.rates.cost(tokens) if price else None)
        summaries = sum(1 for s in trial["stages"] if s.startswith("handoff_")) \
            if (trial.get("continuation") or {}).get("mode") == "summary" else 0
        if summaries:
            by_agent[trial["agent"]["name"]].handoff_calls += summaries
    return list(by_agent.values()), prices


def lines(estimates: list[AgentEstimate], study: str) -> list[str]:
    out = [f"estimate for study {study} (docs/cost.md): sessions, tokens and dollars per agent, before any run"]
    total_cost: float | None = 0.0
    for est in estimates:
        cost = "n/a" if est.reference else ("unknown (no price for its model in conf/prices.yaml)"
                                           if est.cost_usd is None else f"${est.cost_usd:,.2f}")
        label = " (reference policy)" if est.reference else f" ({est.model})"
        out.append(f"  {est.agent}{label}: {est.trials} trials, {est.sessions} sessions, "
                   f"~{est.tokens:,.0f} tokens, {cost}"
                   + (f"; {est.handoff_calls} summary handoff call(s), not estimated" if est.handoff_calls else ""))
        for wid, basis in sorted(est.bases.items()):
            out.append(f"      {wid}: {basis}")
        total_cost = add(total_cost, 0.0 if est.reference else est.cost_usd)
    out.append(f"  study total: {'unknown' if total_cost is None else f'${total_cost:,.2f}'} "
               f"({sum(e.sessions for e in estimates)} sessions)")
    return out
