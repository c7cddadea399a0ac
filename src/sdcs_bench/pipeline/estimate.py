"""``specsnap estimate``: what a planned study will cost before it runs (docs/cost.md#before-a-run).

Per agent: the trials and sessions the plan holds, and an estimate of their tokens and dollars
with a low-high range, per workload with its basis. A basis is what **one trial** spends (all its
sessions: an uninterrupted trial does the same work in one session that a cleaved one does in
two), in this order of preference:

1. **a pilot** (``--pilot RUN``, a finished run): the mean over that agent's trials there (on the
   same workload where it ran one, else on any) of each trial's tokens, component by component,
   priced at the agent's model's prices. The range runs from the pilot's cheapest trial to its
   dearest, each priced by its own split of input, cache and output.
2. **a published per-run figure** for the workload (``data/published.yaml``, ``per_run_tokens``): the
   total of one run, taken as one trial's.
3. **the workload's TES budget** (``budget_tokens``: what the study allows a trial, not a
   measurement).

The figures of 2 and 3 have no split: their estimate prices every token as uncached input, and
their range is what the split could make of them, from every token read from the cache (the
cheapest price) to every token output (the dearest). A pilot that has no usable trial at all is
an error; one without a trial of some agent says so on that agent's line before it falls back.

A reference policy calls no model and a replay answers from a script: both cost $0 (nothing is
paid). A model without a price in ``conf/prices.yaml`` has its tokens estimated and its cost
unknown. A summary continuation's handoff calls are counted, not estimated. A session is many
calls, each well under a long-context threshold as a rule: every trial is priced at the base prices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.prices import KINDS, PER, Price, PriceTable, add
from sdcs_bench.pipeline.leaderboard import published
from sdcs_bench.trial.continuation import WRITTEN_MODES
from sdcs_bench.pipeline.plan.planner import make_plan
from sdcs_bench.pipeline.plan.settings import conf_prices
from sdcs_bench.trial.components import MODEL_KIND, REFERENCE_KIND, REPLAY_KIND, AgentConfig, session_agent
from sdcs_bench.trial.workload import load_workload

COMPONENTS = (*KINDS, "reasoning")
ZERO_COST = {REFERENCE_KIND: "$0 (a reference policy calls no model)",
             REPLAY_KIND: "$0 (a replay answers from its script: no model is called, nothing is paid)"}


@dataclass
class Basis:
    """What one whole trial of an agent on a workload spends, and where that figure comes from."""

    tokens: dict[str, float]  # one trial's tokens by component (a pilot's mean; else all uncached input)
    text: str
    measured: list[dict[str, float]] = field(default_factory=list)  # a pilot's trials, each by component

    def costs(self, price: Price | None) -> tuple[float | None, float | None, float | None]:
        """One trial's cost, low and high (None when the model has no price)."""
        if price is None:
            return None, None, None
        rates = price.rates
        if self.measured:
            each = [rates.cost(t) for t in self.measured]
            return rates.cost(self.tokens), min(each), max(each)
        total = sum(self.tokens.values())
        return total * rates.uncached_input / PER, total * rates.cheapest / PER, total * rates.dearest / PER


@dataclass
class WorkloadEstimate:
    workload: str
    basis: str
    trials: int = 0  # the trials the agent runs sessions of (as the first agent or as a successor)
    share: float = 0.0  # the same, each counted by the share of its sessions the agent runs
    tokens_per_trial: float = 0.0
    cost_per_trial: float | None = None
    low_per_trial: float | None = None
    high_per_trial: float | None = None


@dataclass
class AgentEstimate:
    agent: str
    model: str
    kind: str
    trials: int = 0
    sessions: int = 0
    handoff_calls: int = 0
    tokens: float = 0.0
    cost_usd: float | None = 0.0
    cost_low_usd: float | None = 0.0
    cost_high_usd: float | None = 0.0
    bases: dict[str, str] = field(default_factory=dict)  # workload -> basis
    workloads: dict[str, WorkloadEstimate] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def reference(self) -> bool:
        return self.kind == REFERENCE_KIND

    @property
    def pays(self) -> bool:
        """Whether its sessions call a paid model (neither a reference policy nor a replay)."""
        return self.kind == MODEL_KIND

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in self.__dict__.items() if k != "workloads"}, "reference": self.reference,
                "paid": self.pays, "workloads": {w: dict(e.__dict__) for w, e in self.workloads.items()}}


# -- the pilot ----------------------------------------------------------------------------------------
@dataclass
class Pilot:
    where: Path
    trials: pd.DataFrame  # one row per (trial, agent): workload, share, tokens_<component> of the whole trial
    dropped: str  # what was left out, in words

    def basis(self, agent: str, workload: str) -> Basis | None:
        mine = self.trials[self.trials["agent"] == agent]
        here = mine[mine["workload"] == workload]
        use = here if len(here) else mine
        if not len(use):
            return None
        each = [{k: float(row[f"tokens_{k}"]) for k in COMPONENTS} for _, row in use.iterrows()]
        mean = {k: sum(t[k] for t in each) / len(each) for k in COMPONENTS}
        where = f"on {workload}" if len(here) else "on other workloads (none on this one)"
        return Basis(mean, f"pilot {self.where.name}: mean of {len(each)} trial(s) of {agent} {where}, "
                           f"each trial's sessions summed; range: its cheapest to its dearest trial", each)


def read_pilot(pilot_dir: Path) -> Pilot:
    """A finished run's trials as a basis: per (trial, agent), the agent's tokens by component over
    its sessions there, scaled to a whole trial where it ran only some of them (a handoff). Left out:
    a reference policy's or a replay's sessions (their tokens measure no model) and every trial the
    budget stopped (no measure of what a trial costs). None usable at all is an error."""
    ledger, cards = pilot_dir / "ledger.csv", pilot_dir / "scorecards.csv"
    if not ledger.is_file() or not cards.is_file():
        raise SpecSnapError(f"--pilot {pilot_dir}: no ledger.csv and scorecards.csv there (a finished, aggregated run)")
    rows = pd.read_csv(ledger)
    card_cols = pd.read_csv(cards, nrows=0).columns
    trials = pd.read_csv(cards, usecols=[c for c in ("trial", "workload", "budget_exhausted") if c in card_cols])
    if not len(rows) or "trial" not in rows or "agent" not in rows:
        raise SpecSnapError(f"--pilot {pilot_dir}: its ledger.csv holds no session: nothing to estimate from")
    sessions_in = rows.groupby("trial")["agent"].transform("size")
    stopped = set(rows.loc[rows.get("status", pd.Series("", index=rows.index)) == "budget_exhausted", "trial"])
    if "budget_exhausted" in trials:
        stopped |= set(trials.loc[trials["budget_exhausted"].fillna(False).astype(bool), "trial"])
    kind = rows["agent_kind"] if "agent_kind" in rows else pd.Series(MODEL_KIND, index=rows.index)
    unpaid = kind != MODEL_KIND
    cut = rows["trial"].isin(stopped)
    keep = rows[~unpaid & ~cut].assign(_in_trial=sessions_in[~unpaid & ~cut])
    dropped = ", ".join(f"{count} {text}" for count, text in (
        (int(unpaid.sum()), "of a reference policy or a replay (no model's tokens)"),
        (int((cut & ~unpaid).sum()), "of trials the budget stopped")) if count)
    dropped = f"{len(rows)} session(s)" + (f"; left out: {dropped}" if dropped else "")
    if not len(keep):
        raise SpecSnapError(f"--pilot {pilot_dir}: no usable session there ({dropped}): a pilot is a finished run of "
                            "the agents to estimate, with their models. Without --pilot the estimate uses the "
                            "published figures and the workloads' budgets")
    for k in COMPONENTS:
        col = f"tokens_{k}"
        keep[col] = pd.to_numeric(keep[col], errors="coerce").fillna(0) if col in keep else 0.0
    grouped = keep.groupby(["trial", "agent"], sort=True).agg(
        sessions=("agent", "size"), in_trial=("_in_trial", "first"),
        **{f"tokens_{k}": (f"tokens_{k}", "sum") for k in COMPONENTS}).reset_index()
    share = grouped["sessions"] / grouped["in_trial"]
    for k in COMPONENTS:  # (a handoff's agent ran some of the trial: its tokens as for a whole trial)
        grouped[f"tokens_{k}"] = grouped[f"tokens_{k}"] / share
    grouped = grouped.merge(trials[["trial", "workload"]], on="trial", how="left")
    return Pilot(pilot_dir, grouped, dropped)


# -- the published figures and the budgets ------------------------------------------------------------
def _unmeasured(workload: str, budget: int) -> Basis:
    for figure in published().get("per_run_tokens") or []:
        if figure["workload"] == workload:
            return Basis({"uncached_input": float(figure["tokens"])},
                         f"published: {figure['tokens']:,} tokens, one whole run ({figure['sessions']} sessions) "
                         f"taken as one trial's, whatever its sessions ({' '.join(figure['source'].split())})")
    return Basis({"uncached_input": float(budget)},
                 f"the workload's TES budget ({budget:,} tokens a trial, not a measurement)")


NO_SPLIT = ("no split known: priced as uncached input, the range from all cache reads to all output (a pilot "
            "measures the split)")


def estimate(study: str, overrides: list[str] | None = None, pilot_dir: Path | None = None,
             results: Path = Path("results")) -> tuple[list[AgentEstimate], PriceTable]:
    plan = make_plan(study, list(overrides or []), results, keys=False)  # (an estimate needs no key)
    prices = conf_prices()
    pilot = read_pilot(pilot_dir) if pilot_dir is not None else None
    by_agent: dict[str, AgentEstimate] = {}
    bases: dict[tuple[str, str], Basis] = {}
    for trial in plan.trials:
        sessions = [s for s in trial["stages"] if s.startswith("session_")]
        wid = trial["workload"]["id"]
        runs: dict[str, tuple[AgentConfig, int]] = {}  # agent -> (its config, its sessions in this trial)
        for index, _stage in enumerate(sessions, start=1):
            agent = AgentConfig.of(session_agent(trial["agent"], trial.get("successor"), index))
            runs[agent.name] = (agent, runs.get(agent.name, (agent, 0))[1] + 1)
        for name, (agent, count) in runs.items():
            est = by_agent.setdefault(name, AgentEstimate(name, str(agent.model), agent.kind))
            est.trials += name == trial["agent"]["name"]  # (a handoff's successor: its sessions, not its trials)
            est.sessions += count
            if not est.pays:
                est.bases.setdefault(wid, ZERO_COST[est.kind])
                continue
            share = count / len(sessions)
            if (name, wid) not in bases:
                bases[(name, wid)] = _basis(pilot, est, wid)
            basis = bases[(name, wid)]
            cost, low, high = basis.costs(prices.find(est.model))
            per = est.workloads.setdefault(wid, WorkloadEstimate(
                wid, basis.text + ("" if basis.measured else f"; {NO_SPLIT}"),
                tokens_per_trial=sum(basis.tokens.values()), cost_per_trial=cost, low_per_trial=low,
                high_per_trial=high))
            est.bases.setdefault(wid, per.basis)
            per.trials += 1
            per.share += share
            est.tokens += share * per.tokens_per_trial
            est.cost_usd = add(est.cost_usd, None if cost is None else share * cost)
            est.cost_low_usd = add(est.cost_low_usd, None if low is None else share * low)
            est.cost_high_usd = add(est.cost_high_usd, None if high is None else share * high)
        block = trial.get("continuation") or {}
        if block.get("mode") in WRITTEN_MODES:  # each handoff's writer: the run's handoff.writer, or the model
            for stage in (s for s in trial["stages"] if s.startswith("handoff_")):  # of the session handed over
                k = int(stage.rpartition("_")[2])
                handed = AgentConfig.of(session_agent(trial["agent"], trial.get("successor"), k - 1))
                writer = AgentConfig.of(block["writer"]) if block.get("writer") and not handed.reference else handed
                by_agent.setdefault(writer.name, AgentEstimate(writer.name, str(writer.model), writer.kind)) \
                    .handoff_calls += 1
    return list(by_agent.values()), prices


def _basis(pilot: Pilot | None, est: AgentEstimate, workload: str) -> Basis:
    if pilot is not None:
        found = pilot.basis(est.agent, workload)
        if found is not None:
            return found
        note = (f"pilot {pilot.where.name} has no usable trial of {est.agent} ({pilot.dropped}): its estimate falls "
                "back to the published figures and the workloads' budgets")
        if note not in est.notes:
            est.notes.append(note)
    return _unmeasured(workload, load_workload(workload).budget_tokens)


def _usd(value: float | None, digits: int = 2) -> str:
    return "unknown" if value is None else f"${value:,.{digits}f}"


def _range(low: float | None, high: float | None, digits: int = 2) -> str:
    return f"range {_usd(low, digits)}-{_usd(high, digits)}"


def lines(estimates: list[AgentEstimate], study: str) -> list[str]:
    out = [f"estimate for study {study} (docs/cost.md): trials, sessions, tokens and dollars per agent, before any "
           "run; each workload's figures are per trial (all its sessions)"]
    total: float | None = 0.0
    low: float | None = 0.0
    high: float | None = 0.0
    for est in estimates:
        handoffs = f"; {est.handoff_calls} summary or notes handoff call(s), not estimated" if est.handoff_calls else ""
        if not est.pays:
            label = "reference policy" if est.kind == REFERENCE_KIND else f"replay of {est.model}, scripted"
            out.append(f"  {est.agent} ({label}): {est.trials} trials, {est.sessions} sessions, "
                       f"{ZERO_COST[est.kind]}{handoffs}")
            continue
        cost = ("unknown (no price for its model in conf/prices.yaml)" if est.cost_usd is None
                else f"{_usd(est.cost_usd)} ({_range(est.cost_low_usd, est.cost_high_usd)})")
        out.append(f"  {est.agent} ({est.model}): {est.trials} trials, {est.sessions} sessions, "
                   f"~{est.tokens:,.0f} tokens, {cost}{handoffs}")
        out += [f"      note: {note}" for note in est.notes]
        for wid, per in sorted(est.workloads.items()):
            money = "cost unknown" if per.cost_per_trial is None else \
                f"{_usd(per.cost_per_trial, 4)} ({_range(per.low_per_trial, per.high_per_trial, 4)})"
            count = f"{per.trials} trials" + ("" if per.share == per.trials else
                                               f", its sessions {per.share:g} trials' worth")
            out.append(f"      {wid} ({count}): {per.tokens_per_trial:,.0f} tokens a trial, {money} a trial; "
                       f"{per.basis}")
        total, low, high = add(total, est.cost_usd), add(low, est.cost_low_usd), add(high, est.cost_high_usd)
    sessions, trials = sum(e.sessions for e in estimates), sum(e.trials for e in estimates)
    paid = any(e.pays for e in estimates)
    out.append(f"  study total: {_usd(total)}" + (f" ({_range(low, high)})" if paid and total is not None else "")
               + f"; {trials} trials, {sessions} sessions"
               + ("" if paid else ": no session calls a paid model"))
    return out
