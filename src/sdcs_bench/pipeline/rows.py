"""A study's records as table rows: one per trial (``scorecards.csv``), per session
(``ledger.csv``) and per model call (``calls.csv``), each with its cost (docs/cost.md), and whether a
reference trial landed on its closed form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sdcs_bench.core.prices import PriceTable, Spend, add, replayed, row_cost, row_spend
from sdcs_bench.pipeline.labels import source_label
from sdcs_bench.pipeline.layout import TrialLayout
from sdcs_bench.trial.standards import COMPARED as STANDARDS_COMPARED


# The cost of resuming (coherence/resume.py): a trial's figures, each a mean over its continuation
# sessions that reached a useful edit (``resume_reached``: the share that did).
# (Its wall time is per session in ledger.csv and on the scorecard, not here: every column of
# scorecards.csv and the leaderboard is the same on a rerun of a reference study.)
RESUME_MEANS = ("resume_reached", "resume_calls", "resume_tokens", "resume_tool_events", "resume_reread_share")


# A continuation mode's handoffs (docs/protocol.md#continuation-modes): what the summaries and notes cost
# (model calls and tokens; a reference policy's summariser: its meter), the tokens they put into the
# prompts, and the notes that failed their schema (carried nothing).
HANDOFF_MEANS = ("handoff_calls", "handoff_tokens", "context_tokens", "invalid_notes")


# A standards trial's decision measures, averaged over a leaderboard row's valid trials.
STANDARDS_MEANS = ("std_decisions", "std_better_share", "std_followed_standard_share")


# A replay's calls at list prices: what they would have cost had a model answered them (nothing was paid).
LIST_PRICE_COLUMN = "hypothetical_list_usd"


def scorecard_row(card: dict[str, Any]) -> dict[str, Any]:
    diag = card["diagnostics"]
    notes = diag.get("notes") or {}
    expected = card.get("expected") or {}
    repo = card.get("repository") or {}
    withhold = card.get("withhold") or {}
    return {
        "trial": card["trial"],
        "study": card["study"],
        "workload": card["workload"],
        "family": card.get("family", "synthetic"),
        "arm": card["arm"],
        "agent": card["agent"],
        "agent_kind": card["agent_kind"],
        "harness": card["harness"],
        "model": card["model"],
        "variant": card["variant"],
        "continuation": card.get("continuation") or "reset",
        "seed": card["seed"],
        "n_requirements": card["n_requirements"],
        "raw": card["raw"],
        "baseline_ok": card["baseline_ok"],
        "protected_ok": card["protected_ok"],
        "violations": card["violations"],
        "net": card["net"],
        "tes": card["tes"],
        "valid": card.get("valid", True),
        "budget_exhausted": bool(card.get("budget_exhausted", False)),
        "limit_exceeded": card.get("limit_exceeded") or "",
        "invalid_reasons": " | ".join((card.get("integrity") or {}).get("problems") or []),
        "tampered": bool(card.get("tampered", False)),
        "tamper_evidence": " | ".join(card.get("tamper_evidence") or []),
        "suspicious_source": len(diag.get("suspicious_source") or []),
        "tokens": card["tokens"]["total"],
        "tokens_source": card["tokens"]["source"],
        "turns": sum(s["turns"] for s in diag["sessions"]),
        "turns_by_session": "+".join(str(s["turns"]) for s in diag["sessions"]),
        "predicted_resolved": repo.get("predicted_resolved"),
        "s1_edit_survived": diag["s1_edit_survived"],
        "no_cleave": diag["no_cleave"],
        "cleave_missed": diag["cleave_missed"],
        "notes_tokens": notes.get("tokens"),
        "notes_cap_tokens": notes.get("cap_tokens"),
        "notes_cap_exceeded": notes.get("cap_exceeded"),
        "expected_net": expected.get("net"),
        # a stochastic reference policy: the mean of the distribution its trials are drawn from
        "expected_mean": (expected.get("distribution") or {}).get("mean"),
        "matches_expected": matches(card, expected) if expected else None,
        "tests_passed": card.get("tests_passed"),
        "tests_total": card.get("tests_total"),
        "expected_tests": expected.get("tests_passed"),
        "abstention": (card.get("abstention") or {}).get("trial"),
        "expected_abstention": expected.get("abstention"),
        "withheld_k": withhold.get("k"),
        "withhold_mode": withhold.get("mode"),
        "withhold_when": withhold.get("when"),
        "poison": (card.get("poison") or {}).get("version"),
        "poison_survived": ";".join(d for d, alive in ((card.get("poison") or {}).get("survived") or {}).items()
                                    if alive),
        "requirements": json.dumps(card["requirements"], sort_keys=True),
        **standards_columns(card.get("standards"), expected.get("standards")),
        "cut_rule": _cut_rule(diag["sessions"]),
        "successor_source": source_label(succ["agent_kind"], succ.get("model"), succ.get("harness"))
        if (succ := card.get("successor")) else "",
        # a handoff's other side: who ran every session after the first
        "successor_harness": (card.get("successor") or {}).get("harness") or "",
        "successor_model": (card.get("successor") or {}).get("model") or "",
        **resume_columns(card.get("resume"), expected),
        # a continuation's handoffs (docs/protocol.md#continuation-modes): what the summaries cost, and
        # the tokens of what the handoffs put into the next prompts
        "handoff_calls": (card.get("handoff") or {}).get("calls"),
        "handoff_tokens": (card.get("handoff") or {}).get("tokens"),
        "context_tokens": sum(int(h.get("context_tokens") or 0) for h in (card.get("handoff") or {}).get("handoffs", []))
        if card.get("handoff") else None,
        # a summary's or notes' writer (handoff.writer: the policy or model handed over, or the run's
        # named one) and what it read (handoff.source); notes that failed their schema
        "handoff_writer": ";".join((card.get("handoff") or {}).get("writers") or []),
        "handoff_source": (card.get("handoff") or {}).get("source") or "",
        "invalid_notes": (card.get("handoff") or {}).get("invalid_notes"),
    }


def resume_columns(resume: dict[str, Any] | None, expected: dict[str, Any]) -> dict[str, Any]:
    if not resume or not resume.get("continuations"):
        return {**dict.fromkeys(RESUME_MEANS), "resume_matches_expected": None}
    return {"resume_reached": resume["reached_share"], "resume_calls": resume["calls"], "resume_tokens": resume["tokens"],
            "resume_tool_events": resume["tool_events"], "resume_reread_share": resume["reread_share"],
            "resume_matches_expected": resume_matches({"resume": resume}, expected) if expected else None}


def _cut_rule(sessions: list[dict[str, Any]]) -> str | None:
    """The cut rule of the first session that has one, as the trial asked for it (a share of the
    control's tokens, not the count it resolved to): the x of the survival curve."""
    for s in sessions:
        rule = (s.get("cut_share") or {}).get("rule") or s.get("cleave_rule")
        if rule and rule != "none":
            return rule
    return None


def standards_columns(report: dict[str, Any] | None, expected: dict[str, Any] | None) -> dict[str, Any]:
    """A standards trial's decisions (docs/coherence.md): how many, the share written the better way,
    and on the surfaces where standard and code disagree the share that followed the standard."""
    if not report:
        return {}
    contested = report["contested_follows"]
    sided = contested["standard"] + contested["code"]
    return {
        "std_layout": report["layout_name"],
        "std_decisions": report["decisions"],
        "std_better": report["better"],
        "std_better_share": report["better_share"],
        "std_contested_decisions": sided,
        "std_followed_standard_share": round(contested["standard"] / sided, 4) if sided else None,
        "std_follows": json.dumps(report["follows"], sort_keys=True),
        "std_sources_modified": ";".join(report["sources_modified"]),
        "std_expected_better_share": (expected or {}).get("better_share"),
    }


def matches(card: dict[str, Any], expected: dict[str, Any]) -> bool:
    """A reference trial lands on its closed form: the net score, which planted defects survived, and
    where the closed form counts them the tests passed (coherence workloads), every decision count
    (standards workload) and where a token or turn rule cut S1 (its meter's calls and tokens)."""
    ok = card["net"] == expected["net"]
    if expected.get("tests_passed") is not None:
        ok = ok and card.get("tests_passed") == expected["tests_passed"]
    if expected.get("abstention") is not None:  # the classifier, run on the policy's own record
        ok = ok and (card.get("abstention") or {}).get("trial") == expected["abstention"]
    if expected.get("s1_cut") is not None:  # where a token or turn rule cut S1, on the policy's meter
        s1 = ((card.get("diagnostics") or {}).get("sessions") or [{}])[0]
        ok = ok and {"at_turns": s1.get("cut_at_turns"), "at_tokens": s1.get("cut_at_tokens")} == expected["s1_cut"]
    if expected.get("poison_survived") is not None:
        ok = ok and (card.get("poison") or {}).get("survived") == expected["poison_survived"]
    if expected.get("standards") is not None:
        got = card.get("standards") or {}
        ok = ok and all(got.get(k) == expected["standards"][k] for k in STANDARDS_COMPARED)
    if expected.get("resume") is not None:
        ok = ok and resume_matches(card, expected) is not False
    if expected.get("handoff") is not None:  # a continuation's handoffs: the summariser's meter
        got = card.get("handoff") or {}
        ok = ok and (got.get("calls"), got.get("tokens")) == (expected["handoff"]["calls"], expected["handoff"]["tokens"])
    return ok


RESUME_COMPARED = ("reached", "prior_files", "calls", "tokens", "tool_events", "reread")


def resume_matches(card: dict[str, Any], expected: dict[str, Any]) -> bool | None:
    """Each continuation session's cost of resuming against its closed form (every figure but the
    wall time, which has none); None where the closed form has none (a fact-driven or standards
    policy, a model)."""
    want = expected.get("resume")
    if want is None or "resume" not in card:  # (a card scored outside the pipeline has none)
        return None
    got = {r.get("index"): r for r in (card.get("resume") or {}).get("sessions") or []}
    return len(got) == len(want) and all(
        got.get(w["index"], {}).get("complete") is True
        and all(got[w["index"]].get(k) == w.get(k) for k in RESUME_COMPARED) for w in want)


def sessions_of(cell: dict[str, str]) -> list[str]:
    return [s for s in cell["stages"].split(",") if s.startswith("session_")]


def metered(cell: dict[str, str]) -> list[str]:
    """The stages with a model-call ledger: the sessions and the handoffs (a summary's call)."""
    return [s for s in cell["stages"].split(",") if s.startswith(("session_", "handoff_"))]


def ledger_rows(layout: TrialLayout, sessions: list[str], card: dict[str, Any],
                 costs: dict[str, Spend]) -> list[dict[str, Any]]:
    rows = []
    resumed = {r["session"]: r for r in (card.get("resume") or {}).get("sessions") or []}
    for session in sessions:
        rec = json.loads(Path(layout.stage_json(session)).read_text())["session"]
        spend = costs[session]
        rows.append(
            {
                "trial": card["trial"],
                # who ran this session (a handoff's sessions after the first: its successor)
                "agent": rec.get("agent") or card["agent"],
                "agent_kind": rec.get("agent_kind") or card["agent_kind"],
                "harness": rec.get("harness") or card.get("harness"),
                "model": rec.get("model") if "model" in rec else card.get("model"),
                "session": rec["session"],
                "status": rec["status"],
                "cleave_fired": rec["cleave"]["fired"],
                "wall_s": rec["wall_s"],
                "turns": rec["turns"],
                **{f"tokens_{k}": v for k, v in rec["tokens"].items()},
                "tokens_native_total": (rec.get("tokens_native") or {}).get("total"),
                "tokens_native_minus_proxy": rec.get("tokens_native_minus_proxy"),
                "model_calls": rec.get("model_calls"),
                "model_calls_refused": rec.get("model_calls_refused"),
                "stopped_by": rec["cleave"].get("stopped_by"),
                "infra_retries": len(rec.get("infra_attempts") or []),
                "repo_memory_created": ";".join((rec.get("repo_memory_files") or {}).get("created", [])),
                # a continuation's wall time before its first useful edit (docs/scoring.md)
                "resume_wall_s": (resumed.get(rec["session"]) or {}).get("wall_s"),
                # what its model calls cost (docs/cost.md): empty when a call's model has no price; $0
                # for a replay (nothing paid), its calls at list prices apart (hypothetical)
                **spend_columns([spend]),
            }
        )
    return rows


def call_rows(calls_by_stage: dict[str, list[dict[str, Any]]], card: dict[str, Any],
               prices: PriceTable) -> list[dict[str, Any]]:
    """Every model call of every session and handoff (the proxy's per-call ledgers), one row each, with
    its cost (empty when its model has no price; $0 for a replayed call, whose list-price equivalent is
    ``hypothetical_list_usd``: nothing was paid)."""
    rows = []
    for session, ledger in calls_by_stage.items():
        for call in ledger:
            usage = call.get("usage") or {}
            rows.append({
                "trial": card["trial"], "agent": card["agent"], "agent_kind": card["agent_kind"],
                "session": session, "seq": call["seq"], "protocol": call.get("protocol"),
                "kind": call.get("kind"), "model": call.get("model"), "status": call.get("status"),
                "refused": call.get("refused"), "latency_s": call.get("latency_s"), "source": call.get("source"),
                **{f"tokens_{k}": usage.get(k) for k in ("uncached_input", "cache_read", "cache_write", "output",
                                                          "reasoning", "total")},
                "cost_usd": row_spend(prices, call),
                "hypothetical_list_usd": row_cost(prices, call) if replayed(call) else None,
            })
    return rows


def spend_columns(spends: list[Spend]) -> dict[str, Any]:
    """A session's or a trial's cost columns from its ledgers' :class:`Spend` (docs/cost.md): what it
    paid (a replayed call pays $0), the tokens no price covers, and, where it replayed calls, their
    list-price equivalent (hypothetical; empty where nothing was replayed or a replayed model has no
    price)."""
    return {"cost_usd": add(*(s.usd for s in spends)),
            "cost_unpriced_tokens": sum(s.unpriced_tokens for s in spends),
            LIST_PRICE_COLUMN: add(*(s.hypothetical_list_usd for s in spends))
            if any(s.replayed_calls for s in spends) else None}
