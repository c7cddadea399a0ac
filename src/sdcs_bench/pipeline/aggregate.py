"""Aggregate a study's scorecards into scorecards.csv, ledger.csv, calls.csv and the leaderboard."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.prices import PriceTable, Spend, add, ledger_spend, replayed, row_cost, row_spend
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.pipeline.freshness import INPUTS_KEY, input_record
from sdcs_bench.pipeline.layout import SCORECARD, StudyLayout, TrialLayout
from sdcs_bench.pipeline.plan import read_cells
from sdcs_bench.pipeline.labels import REFERENCE_NOTICE, REPLAY_NOTICE, handoff_label, source_label
from sdcs_bench.pipeline import stats
from sdcs_bench.pipeline.checks import TruthCheck, truth_checks
from sdcs_bench.proxy import read_ledger
from sdcs_bench.trial.spec import REFERENCE_KIND, REPLAY_KIND, TrialSpec
from sdcs_bench.trial.standards import COMPARED as STANDARDS_COMPARED

GROUP = ["workload", "arm", "agent", "agent_kind", "variant", "continuation"]


def _scorecard_row(card: dict[str, Any]) -> dict[str, Any]:
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
        "matches_expected": _matches(card, expected) if expected else None,
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
        **_standards_columns(card.get("standards"), expected.get("standards")),
        "cut_rule": _cut_rule(diag["sessions"]),
        "successor_source": source_label(succ["agent_kind"], succ.get("model"), succ.get("harness"))
        if (succ := card.get("successor")) else "",
        **_resume_columns(card.get("resume"), expected),
        # a continuation's handoffs (docs/protocol.md#continuation-modes): what the summaries cost, and
        # the tokens of what the handoffs put into the next prompts
        "handoff_calls": (card.get("handoff") or {}).get("calls"),
        "handoff_tokens": (card.get("handoff") or {}).get("tokens"),
        "context_tokens": sum(int(h.get("context_tokens") or 0) for h in (card.get("handoff") or {}).get("handoffs", []))
        if card.get("handoff") else None,
    }


# The cost of resuming (coherence/resume.py): a trial's figures, each a mean over its continuation
# sessions that reached a useful edit (``resume_reached``: the share that did).
# (Its wall time is per session in ledger.csv and on the scorecard, not here: every column of
# scorecards.csv and the leaderboard is the same on a rerun of a reference study.)
RESUME_MEANS = ("resume_reached", "resume_calls", "resume_tokens", "resume_tool_events", "resume_reread_share")
# A continuation mode's handoffs (docs/protocol.md#continuation-modes): what the summaries cost (model
# calls and tokens; a reference policy's summariser: its meter) and the tokens they put into the prompts.
HANDOFF_MEANS = ("handoff_calls", "handoff_tokens", "context_tokens")


def _resume_columns(resume: dict[str, Any] | None, expected: dict[str, Any]) -> dict[str, Any]:
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


def _standards_columns(report: dict[str, Any] | None, expected: dict[str, Any] | None) -> dict[str, Any]:
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


def _matches(card: dict[str, Any], expected: dict[str, Any]) -> bool:
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


def _sessions(cell: dict[str, str]) -> list[str]:
    return [s for s in cell["stages"].split(",") if s.startswith("session_")]


def _metered(cell: dict[str, str]) -> list[str]:
    """The stages with a model-call ledger: the sessions and the handoffs (a summary's call)."""
    return [s for s in cell["stages"].split(",") if s.startswith(("session_", "handoff_"))]


def _ledger_rows(layout: TrialLayout, sessions: list[str], card: dict[str, Any],
                 costs: dict[str, Spend]) -> list[dict[str, Any]]:
    rows = []
    resumed = {r["session"]: r for r in (card.get("resume") or {}).get("sessions") or []}
    for session in sessions:
        rec = json.loads(Path(layout.stage_json(session)).read_text())["session"]
        spend = costs[session]
        rows.append(
            {
                "trial": card["trial"],
                "agent": card["agent"],
                "agent_kind": card["agent_kind"],
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
                **_spend_columns([spend]),
            }
        )
    return rows


def _call_rows(calls_by_stage: dict[str, list[dict[str, Any]]], card: dict[str, Any],
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


def aggregate(study_dir: Path) -> pd.DataFrame:
    """Write the study's tables, each atomically, and ``aggregate.json`` last: the SHA-256 of every
    input the rule was given (the cells table, every scorecard and session ledger), by which a copy
    of the results that lost its modification times is still seen to be up to date (:mod:`.freshness`)."""
    study = StudyLayout(str(study_dir))
    planned = Path(study.cells).is_file()
    by_hand = by_hand_cards(Path(study_dir))
    if not planned and not by_hand:
        raise SpecSnapError(f"{study_dir} holds no planned study ({study.cells}) and no trial scored into it by hand "
                            "(evaluate-sandbox --run)")
    cells = read_cells(Path(study.cells)) if planned else []
    cards, ledger, calls, inputs = [], [], [], [study.cells] if planned else []
    prices = read_prices(study)
    for cell in cells:
        layout, sessions = study.trial(cell["trial"]), _sessions(cell)
        card = json.loads(Path(layout.file("score", SCORECARD)).read_text())
        by_stage = {s: read_ledger(Path(layout.outputs(s)["ledger"])) for s in _metered(cell)}
        costs = {s: ledger_spend(prices, rows) for s, rows in by_stage.items()}
        cards.append({**_scorecard_row(card), **_spend_columns(list(costs.values()))})
        ledger += _ledger_rows(layout, sessions, card, costs)
        calls += _call_rows(by_stage, card, prices)
        inputs += [layout.file("score", SCORECARD), *(layout.outputs(s)["ledger"] for s in by_stage)]
    for path, card in by_hand:  # a person's own runs, labelled as such (no stage records, no ledger: no cost)
        cards.append({**_scorecard_row(card), "cost_usd": None, "cost_unpriced_tokens": card["tokens"]["total"],
                      "hypothetical_list_usd": None})
        inputs.append(str(path))
    settings = read_settings(study)
    inputs += [p for p in (study.statistics_file, study.prices_file) if Path(p).is_file()]
    scorecards = pd.DataFrame(cards)
    _write(study.scorecards, scorecards.to_csv(index=False))
    _write(study.ledger, pd.DataFrame(ledger).to_csv(index=False))
    _write(study.calls, pd.DataFrame(calls).to_csv(index=False))
    board = with_list_prices(leaderboard(scorecards, settings), scorecards)
    paired = paired_differences(scorecards, settings)
    truth = truth_checks(paired, stochastic_truths(study, cells), settings)
    _write(study.paired, paired.to_csv(index=False))
    _write(study.leaderboard("csv"), board.to_csv(index=False))
    name = cards[0]["study"] if cards else Path(study_dir).name
    _write(study.leaderboard("md"), to_markdown(board, name, paired, settings, truth))
    rows = json.loads(board.to_json(orient="records"))
    # DVC reads metrics from nested mappings, not lists: one entry per leaderboard row as well.
    metrics = {
        # (a reset row keeps the key it had before continuation modes: workload/arm/agent/variant)
        "/".join(str(row[k]) for k in GROUP if k != "agent_kind" and not (k == "continuation" and row[k] == "reset")):
            {k: row[k] for k in ("raw", "net", "tes", "tokens")}
        for row in rows
    }
    payload = {"study": name, "run": Path(study_dir).name, "notice": REFERENCE_NOTICE, "replay_notice": REPLAY_NOTICE,
               "statistics": settings.to_dict(), "cost_line": _cost_line(board).replace("**", ""),
               "cost": {"total_usd": None if board["cost_usd_total"].isna().any() else round(float(board["cost_usd_total"].sum()), 6),
                        "unpriced_tokens": int(board["cost_unpriced_tokens"].fillna(0).sum()),
                        "prices": {p.model: p.describe() for p in prices.prices}},
               "rows": rows,
               "paired": json.loads(paired.to_json(orient="records")),
               "truth_checks": [c.to_dict() | {"line": c.line()} for c in truth], "metrics": metrics}
    _write(study.leaderboard("json"), json.dumps(payload, indent=2))
    from sdcs_bench.pipeline.plots import write_plots

    write_plots(Path(study.plots_dir), scorecards, board, name)
    _write(study.aggregate_record, json.dumps({INPUTS_KEY: input_record(Path(study_dir), inputs)}, indent=2))
    return board


def stochastic_truths(study: StudyLayout, cells: list[dict[str, str]]
                      ) -> dict[tuple[str, str], tuple[dict[str, Any], list[str]]]:
    """For each (agent, workload) of the study whose agent is a stochastic reference policy: its
    policy and the workload's requirement ids, as planned (one trial file read per pair), for
    :func:`checks.truth_checks`."""
    truths: dict[tuple[str, str], tuple[dict[str, Any], list[str]]] = {}
    for cell in cells:
        key = (cell["agent"], cell["workload"])
        if key in truths or cell.get("reference") != "true":
            continue
        spec = TrialSpec.load(Path(study.trial_file(cell["trial"])))
        policy = spec.agent.get("policy") or {}
        if policy.get("keep") and spec.successor is None:
            truths[key] = (policy, [r.id for r in spec.workload.requirements])
    return truths


def read_prices(study: StudyLayout) -> PriceTable:
    """The run's price table as planned (none for a run planned without one: every cost unknown)."""
    path = Path(study.prices_file)
    return PriceTable.parse(json.loads(path.read_text())) if path.is_file() else PriceTable()


def read_settings(study: StudyLayout) -> stats.Settings:
    """The run's ``statistics`` settings as planned (the defaults for a run planned without them)."""
    path = Path(study.statistics_file)
    return stats.Settings.from_config(json.loads(path.read_text())) if path.is_file() else stats.Settings()


def by_hand_cards(study_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The scorecards a person recorded into this run by hand, by trial id."""
    root = Path(StudyLayout(str(study_dir)).by_hand_dir)
    return [(p, json.loads(p.read_text())) for p in sorted(root.glob("*/scorecard.json"))] if root.is_dir() else []


def _write(path: str, text: str) -> None:
    atomic_write(Path(path), text)


def leaderboard(scorecards: pd.DataFrame, settings: stats.Settings = stats.Settings()) -> pd.DataFrame:
    """One row per (workload, arm, agent, variant). Scores are means over the group's *valid*
    trials: a trial whose integrity check failed (a cleaved edit committed, an edit the watcher
    never saw) measured something other than the protocol, so it is counted in ``invalid`` and
    kept out of every mean. A *tampered* trial (the code under test forged its verdicts) is the
    agent's doing: it scores zero, counts in every mean, and is counted in ``tampered``."""
    # Columns later versions added: a scorecards table written before them still aggregates.
    missing = {"tampered": False, "family": "synthetic", "model": "none", "harness": "reference", "predicted_resolved": float("nan"),
               "turns": float("nan"), "baseline_ok": float("nan"), **dict.fromkeys(STANDARDS_MEANS, float("nan")),
               "std_expected_better_share": float("nan"), "tests_passed": float("nan"),
               "tests_total": float("nan"), "expected_tests": float("nan"), "expected_abstention": None, "abstention": None,
               "withheld_k": float("nan"), "withhold_mode": None, "withhold_when": None, "cut_rule": None,
               "successor_source": "", **dict.fromkeys(RESUME_MEANS, float("nan")), "continuation": "reset",
               "expected_mean": float("nan"), "cost_usd": float("nan"), "cost_unpriced_tokens": 0,
               "budget_exhausted": False, "limit_exceeded": "",
               **dict.fromkeys(HANDOFF_MEANS, float("nan"))}
    scorecards = scorecards.assign(**{col: value for col, value in missing.items() if col not in scorecards})
    counted = scorecards[stats.counted(scorecards)]  # (valid and not stopped by the budget)
    stopped = scorecards["budget_exhausted"].fillna(False).astype(bool)
    # A trial the budget stopped (docs/cost.md) is neither a result nor invalid: counted apart, in no mean.
    # So is a trial a limit ended (docs/sandboxes.md): the agent hit its box's walls; counted apart.
    limited = scorecards["limit_exceeded"].fillna("").astype(str) != ""
    scorecards = scorecards.assign(valid=scorecards["valid"].astype(bool) | stopped | limited, budget_exhausted=stopped,
                                   limited=limited, tampered=scorecards["tampered"].astype(bool))
    counts = scorecards.groupby(GROUP, sort=True).agg(
        trials=("trial", "count"), invalid=("valid", lambda v: int((~v).sum())),
        budget_exhausted=("budget_exhausted", "sum"), limit_exceeded=("limited", "sum"),
        tampered=("tampered", lambda v: int(v.sum())),
        tamper_evidence=("tamper_evidence", lambda s: " | ".join(sorted({e.split(" | ")[0] for e in s.fillna("") if e}))),
        n_requirements=("n_requirements", "first"),
        # (the mean of the trials' closed forms: one value for a deterministic policy, the mean of its
        # seeds' draws for a stochastic one, whose distribution's mean is ``expected_mean``)
        expected_net=("expected_net", "mean"), expected_mean=("expected_mean", "first"),
        family=("family", "first"), model=("model", "first"), harness=("harness", "first"),
        predicted_resolved=("predicted_resolved", "first"),
        matches_expected=("matches_expected", lambda s: bool(s.all()) if s.notna().all() else None),
        defects_survived=("poison_survived", lambda s: " | ".join(sorted({v or "none" for v in s.fillna("")}))),
        std_expected_better_share=("std_expected_better_share", "first"),
        tests_total=("tests_total", "first"), expected_tests=("expected_tests", "first"),
        expected_abstention=("expected_abstention", "first"), withheld_k=("withheld_k", "first"),
        abstention=("abstention", lambda s: " | ".join(sorted({v for v in s.dropna()})) or None),
        withhold_mode=("withhold_mode", "first"), withhold_when=("withhold_when", "first"),
        cut_rule=("cut_rule", "first"), successor_source=("successor_source", "first"),
        # what the row's trials cost in all (valid or not: the money is spent), unknown when one's is
        cost_usd_total=("cost_usd", lambda v: v.sum() if v.notna().all() else float("nan")),
        cost_unpriced_tokens=("cost_unpriced_tokens", "sum"),
    )
    scores = counted.groupby(GROUP, sort=True).agg(
        raw=("raw", "mean"), net=("net", "mean"), tes=("tes", "mean"), tokens=("tokens", "mean"),
        turns=("turns", "mean"), baseline_kept=("baseline_ok", "mean"),
        s1_edit_survived=("s1_edit_survived", _known_mean),
        **{col: (col, _known_mean) for col in STANDARDS_MEANS},
        tests_passed=("tests_passed", "mean"),
        cost_usd=("cost_usd", lambda v: v.mean() if v.notna().all() else float("nan")),
        **{col: (col, _known_mean) for col in RESUME_MEANS},
        **{col: (col, _known_mean) for col in HANDOFF_MEANS},
    )
    board = counts.join(scores, how="left").join(_intervals(counted, settings),
                                                  how="left").reset_index()
    board["n"] = board["n"].fillna(0).astype(int)
    board["net_interval"] = interval_texts(board, "n", "net", "net_lo", "net_hi")
    board = _versus_vanilla(board).astype({"predicted_resolved": "Int64"})  # a count, empty for the tiers
    # A handoff names both agents: "<first>, then <successor>" (one label when both are the same kind).
    board["source"] = [handoff_label(source_label(kind, model, harness), then)
                       for kind, model, harness, then in board[["agent_kind", "model", "harness", "successor_source"]]
                       .fillna("").itertuples(index=False)]
    cols = [*GROUP, "source", "model", "harness", "family", "trials", "invalid", "tampered", "budget_exhausted",
            "limit_exceeded", "n",
            "n_requirements", "raw", "net",
            "net_interval", "full_marks", *(f"{m}_{end}" for m in INTERVAL_METRICS for end in ("lo", "hi")), "tes", "tokens",
            "cost_usd", "cost_usd_total", "cost_unpriced_tokens", "turns",
            "baseline_kept", "predicted_resolved", "tokens_vs_vanilla", "resolved_vs_vanilla",
            "s1_edit_survived", "expected_net", "expected_mean", "matches_expected", "defects_survived", *STANDARDS_MEANS,
            "std_expected_better_share", "tamper_evidence", "tests_passed", "tests_total", "expected_tests",
            "withheld_k", "withhold_mode", "withhold_when", "abstention", "expected_abstention", "cut_rule",
            *RESUME_MEANS, *HANDOFF_MEANS]
    board = board.astype({"withheld_k": "Int64", "tests_total": "Int64", "expected_tests": "Int64"})
    return board[cols].round({"raw": 2, "net": 2, "tes": 2, "tokens": 0, "turns": 1, "baseline_kept": 2,
                              "expected_net": 2, "expected_mean": 2, "full_marks": 2, "cost_usd": 4, "cost_usd_total": 4,
                              **{f"{m}_{end}": INTERVAL_METRICS[m] for m in INTERVAL_METRICS for end in ("lo", "hi")},
                              "tokens_vs_vanilla": 2, "resolved_vs_vanilla": 2, "s1_edit_survived": 2,
                              "std_decisions": 1, "std_better_share": 4, "std_followed_standard_share": 4,
                              "tests_passed": 2, "resume_reached": 2, "resume_calls": 1, "resume_tokens": 0,
                              "resume_tool_events": 1, "resume_reread_share": 2, "handoff_calls": 1,
                              "handoff_tokens": 0, "context_tokens": 0})


# Paired differences (docs/statistics.md): each axis's rows against its baseline, over trials that
# match on everything else (the seed included). The axis, its baseline, and what a pair shares.
PAIRED_AXES = (("arm", "Vanilla"), ("continuation", "reset"))
PAIRED_METRICS = ("net", "tokens")
PAIRED_COLUMNS = ["axis", "baseline", "compared", "metric", "workload", "variant", "continuation", "arm", "agent",
                  "agent_kind", "pairs", "baseline_mean", "compared_mean", "difference", "sd", "effect_size", "lo", "hi",
                  "excludes_zero", "test", "p", "p_adjusted", "adjust", "marked"]


def matched_pairs(cards: pd.DataFrame, metrics: tuple[str, ...]
                  ) -> Iterator[tuple[str, str, str, dict[str, Any], pd.DataFrame]]:
    """Each comparison of :data:`PAIRED_AXES` in ``cards`` (the trials to pair: see :func:`stats.counted`):
    ``(axis, baseline, compared, what the pairs share, pairs)``, the pairs matched on everything but
    the axis, the seed included, with each metric beside its ``<metric>_base``."""
    cards = cards.assign(continuation=cards.get("continuation", "reset"))
    for axis, base in PAIRED_AXES:
        if base not in set(cards[axis]) or cards[axis].nunique() < 2:
            continue
        fixed = [c for c in ("workload", "variant", "continuation", "arm", "agent", "agent_kind") if c != axis and c in cards]
        key = [*fixed, "seed"]
        left = cards[cards[axis] == base].drop_duplicates(key)[[*key, *metrics]]
        for compared, part in cards[cards[axis] != base].groupby(axis, sort=True):
            joined = part.drop_duplicates(key).merge(left, on=key, how="inner", suffixes=("", "_base"))
            for group, pairs in joined.groupby(fixed, sort=True):
                yield axis, base, compared, dict(zip(fixed, group)), pairs


def paired_differences(scorecards: pd.DataFrame, settings: stats.Settings = stats.Settings()) -> pd.DataFrame:
    """For each arm against Vanilla (and each continuation mode against reset), within every
    workload, variant (a cut point is a variant), the other axis and agent: the mean of the paired
    differences ``compared - baseline`` over the seeds both have a valid trial for, their SD and
    effect size, the t-interval (``lo``, ``hi``; ``excludes_zero``) and the two-sided sign-flip test
    (:func:`stats.paired_test`): ``p``, and ``p_adjusted`` across the table's tests (one table per
    axis and metric; ``statistics.adjust``: holm by default). ``marked``: the adjusted p is at most
    1 - level. A comparison of too few pairs, or of a deterministic reference policy (its closed
    form), has no test: ``test`` says which."""
    if scorecards.empty:
        return pd.DataFrame(columns=PAIRED_COLUMNS)
    rows = []
    counted = scorecards[stats.counted(scorecards)]
    if "expected_mean" not in counted:
        counted = counted.assign(expected_mean=float("nan"))
    for axis, base, compared, where, pairs in matched_pairs(counted, (*PAIRED_METRICS, "expected_mean")):
        fixed = where.get("agent_kind") == REFERENCE_KIND and bool(
            pairs["expected_mean"].isna().all() and pairs["expected_mean_base"].isna().all())
        for metric in PAIRED_METRICS:
            got = pairs[[f"{metric}_base", metric]].dropna()
            label = "/".join(map(str, (axis, compared, *where.values(), metric)))
            res = stats.paired_test(got[f"{metric}_base"].tolist(), got[metric].tolist(), label, settings, fixed)
            rows.append({"axis": axis, "baseline": base, "compared": compared, "metric": metric, **where,
                         axis: compared, "pairs": res.n, "baseline_mean": got[f"{metric}_base"].mean(),
                         "compared_mean": got[metric].mean(), "difference": res.mean, "sd": res.sd,
                         "effect_size": res.effect_size, "lo": res.lo, "hi": res.hi,
                         "excludes_zero": res.excludes_zero, "test": res.test, "p": res.p})
    out = pd.DataFrame(rows, columns=PAIRED_COLUMNS)
    out["adjust"] = settings.adjust
    out["p_adjusted"] = None
    for _, table in out.groupby(["axis", "metric"], sort=False):
        out.loc[table.index, "p_adjusted"] = pd.Series(stats.adjust(table["p"].tolist(), settings.adjust),
                                                       index=table.index, dtype=object)
    out["p_adjusted"] = out["p_adjusted"].astype(float)
    out["marked"] = out["p_adjusted"].le(settings.alpha + 1e-12)
    return out.round({"baseline_mean": 2, "compared_mean": 2, "difference": 2, "sd": 2, "effect_size": 2, "lo": 2,
                      "hi": 2, "p": 4, "p_adjusted": 4})


def interval_texts(frame: pd.DataFrame, n: str, mean: str, lo: str, hi: str) -> list[str]:
    """Each row's interval in words (:meth:`stats.Interval.text`), from its columns (empty: None)."""
    cols = frame[[n, mean, lo, hi]]
    return [stats.Interval(int(k), m, a, b).text() for k, m, a, b in
            cols.astype(object).where(cols.notna(), None).itertuples(index=False)]


# The scores each leaderboard row gives an interval for, and the digits they are rounded to: a
# t-interval for the means of counts and scores, Wilson for the shares (docs/statistics.md).
INTERVAL_METRICS = {"raw": 2, "net": 2, "tes": 2, "tokens": 0, "tests_passed": 2, "cost_usd": 4, "full_marks": 2,
                    "s1_edit_survived": 2}
SHARE_METRICS = ("full_marks", "s1_edit_survived")  # a 0/1 outcome per trial


def _deterministic(kind: str, part: pd.DataFrame) -> bool:
    """A row of a deterministic reference policy: its trials land on closed forms (no distribution)."""
    return kind == REFERENCE_KIND and ("expected_mean" not in part or bool(part["expected_mean"].isna().all()))


def _intervals(valid: pd.DataFrame, settings: stats.Settings) -> pd.DataFrame:
    """Per row (over its valid trials): n, the share with full marks, and each metric's interval
    bounds (:func:`stats.interval`; none below its n, but a deterministic reference policy's exact
    zero-width one)."""
    cols = ["n", "full_marks", *(f"{m}_{end}" for m in INTERVAL_METRICS for end in ("lo", "hi"))]
    keys, out = [], []
    valid = valid.assign(full_marks=(valid["net"] == valid["n_requirements"]).astype(float))
    for key, part in valid.groupby(GROUP, sort=True):
        row: dict[str, Any] = {"n": len(part), "full_marks": float(part["full_marks"].mean())}
        fixed = _deterministic(key[GROUP.index("agent_kind")], part)
        for metric in INTERVAL_METRICS:
            values = part[metric].tolist() if metric in part else []
            if metric == "cost_usd" and part[metric].isna().any():
                values = []  # a cost unknown for one trial is unknown for the row: no interval either
            kind = "share" if metric in SHARE_METRICS else "mean"
            iv = stats.interval(values, "/".join(map(str, key)) + f"/{metric}", settings, kind, fixed)
            row[f"{metric}_lo"], row[f"{metric}_hi"] = iv.lo, iv.hi
        keys.append(key)
        out.append(row)
    index = pd.MultiIndex.from_tuples(keys, names=GROUP)
    return pd.DataFrame(out, index=index, columns=cols).astype(float)


def _known_mean(values: pd.Series) -> float | None:
    """The mean of the values a row's trials have (None where none has one)."""
    return values.dropna().mean() if values.notna().any() else None


# A standards trial's decision measures, averaged over a leaderboard row's valid trials.
STANDARDS_MEANS = ("std_decisions", "std_better_share", "std_followed_standard_share")


def _versus_vanilla(board: pd.DataFrame) -> pd.DataFrame:
    """Each row's mean tokens and mean requirements passed (bugs resolved, on a real repository) as
    a ratio to the same agent's Vanilla row on the same workload and variant in this study, as the
    original study reported its repository runs; empty where there is no Vanilla row or its value
    is 0 (a reference policy spends no tokens)."""
    keys = ["workload", "agent", "agent_kind", "variant", "continuation"]
    vanilla = board.loc[board["arm"] == "Vanilla", [*keys, "tokens", "raw"]]
    joined = board.merge(vanilla.rename(columns={"tokens": "tokens_vanilla", "raw": "raw_vanilla"}), on=keys,
                         how="left")

    def ratio(num: str, den: str) -> pd.Series:
        den_values = joined[den].where(joined[den] > 0)
        return (joined[num] / den_values).astype(float)

    return board.assign(tokens_vs_vanilla=ratio("tokens", "tokens_vanilla"), resolved_vs_vanilla=ratio("raw", "raw_vanilla"))


def _family_sections(board: pd.DataFrame) -> list[tuple[pd.DataFrame, str, str, dict[str, str], list[str]]]:
    """The tables ``leaderboard.md`` adds after the main one, each for the rows it concerns: (rows,
    title, what the columns mean, the columns renamed, the columns shown)."""
    key = ["workload", "arm", "agent", "agent_kind"]
    return [
        (board[board["family"] == "standards"], "Standards workload: decisions",
         "Each surface of each handler is one decision where exactly one form is written. `better_share` is "
         "the share written the objectively better way; `followed_standard` is, on the surfaces where "
         "STYLE.md and the existing code disagree, the share that followed STYLE.md (empty where none "
         "disagree). Means over the row's trials; `expected` is the reference policy's closed form.",
         {"std_decisions": "decisions", "std_better_share": "better_share",
          "std_followed_standard_share": "followed_standard", "std_expected_better_share": "expected"},
         [*key, "variant", "trials", "decisions", "better_share", "followed_standard", "expected", "matches_expected"]),
        (board[board["family"] == "real_repo"], "Real repositories: bugs resolved",
         "`resolved` counts bugs whose hidden tests pass (the mean over trials); `predicted` is what was "
         "predicted for the arm before the run (the workload's `predicted_resolved`); the `vs_vanilla` "
         "columns divide by the same agent's Vanilla row (empty where that is 0).",
         {"n_requirements": "bugs", "raw": "resolved", "predicted_resolved": "predicted"},
         [*key, "variant", "trials", "bugs", "predicted", "resolved", "baseline_kept", "net", "turns", "tokens",
          "tokens_vs_vanilla", "resolved_vs_vanilla", "expected_net", "matches_expected"]),
        (board[board["withheld_k"].notna()], "Withholding authored facts: tests passed",
         "Coherence workloads (docs/coherence.md) score in hidden tests, four per motif. `k` motifs had "
         "their secret withheld (`mode`: deleted or replaced by a same-length stub), before session 1 or "
         "after its cleave; `tests_passed` is the mean over trials, `expected_tests` the reference "
         "policy's closed form; `abstention` is what the classifier made of the trials' records "
         "(fabricated in any session, else the last session's class), `expected_abstention` what the "
         "policy's closed form says it should be.",
         {"withheld_k": "k", "withhold_mode": "mode", "withhold_when": "when"},
         [*key, "k", "mode", "when", "trials", "tests_passed", "tests_total", "expected_tests", "abstention",
          "expected_abstention", "matches_expected"]),
        (board[board["resume_reached"].notna()], "The cost of resuming",
         "Over each row's continuation sessions (every session after the first): `reached`, the share that "
         "made a useful edit (a write to a source file whose added lines are all still there at the end); "
         "before it, as means over those that did, the answered model `calls`, their `tokens`, the `tool "
         "events` and the share of the earlier sessions' files read again (docs/scoring.md; the wall time "
         "is per session in `ledger.csv`). "
         "A reference policy's calls and tokens are its meter, not a model's.",
         {"resume_reached": "reached", "resume_calls": "calls", "resume_tokens": "tokens",
          "resume_tool_events": "tool_events", "resume_reread_share": "reread_share"},
         [*key, "variant", "continuation", "trials", "net", "reached", "calls", "tokens", "tool_events",
          "reread_share", "matches_expected"]),
        (board if (board["continuation"] != "reset").any() else board.iloc[0:0], "Continuation modes",
         "How each session after the first continued (docs/protocol.md#continuation-modes): `reset` (no "
         "history), `trace:<budget>` (the earlier sessions' events, cut to the budget), `summary` (the "
         "previous session summarised by the agent's model), `resume` (the harness's own conversation) and "
         "`compact` (that conversation compacted). `context_tokens`: what the handoffs put into the prompts; "
         "`handoff_calls`/`handoff_tokens`: what the summaries cost (a reference policy's summariser: its "
         "meter), separate from the sessions' own tokens; `reached`, `tool_events`, `tokens`: the cost of "
         "resuming, as in the table above.",
         {"resume_reached": "reached", "resume_tokens": "tokens", "resume_tool_events": "tool_events"},
         [*key, "variant", "continuation", "trials", "net", "reached", "tool_events", "tokens", "context_tokens",
          "handoff_calls", "handoff_tokens", "matches_expected"]),
    ]


# The warnings at the top of leaderboard.md: (column counting the trials, head, what it means).
WARNINGS = (
    ("invalid", "INVALID", "failed the integrity check** (a cleaved edit was committed, or an edit went unseen by the "
     "watcher). They are counted in `invalid` and left out of every score; `scorecards.csv` gives the reasons."),
    ("budget_exhausted", "BUDGET", "stopped by the run's budget** (the proxy refused a model call once the budget was "
     "reached). They are neither results nor the agent's failures: counted in `budget_exhausted`, left out of every "
     "score. A rerun with a larger budget (`--config budget_max_usd=...`) continues them (docs/cost.md)."),
    ("limit_exceeded", "LIMIT", "ended by a limit of the sandbox** (memory, processes, disk, files, output or the "
     "watcher's watches: `sandbox.limits`). They are counted in `limit_exceeded` and left out of every score; "
     "`scorecards.csv` says which limit (docs/sandboxes.md)."),
    ("tampered", "TAMPERED", "forged test verdicts** (a sentinel test got the wrong verdict, the report or exit status "
     "was changed, the test tree or the runner was modified). They score zero and count in every mean; "
     "`scorecards.csv` gives the evidence."),
)


def to_markdown(board: pd.DataFrame, study: str, paired: pd.DataFrame | None = None,
                settings: stats.Settings = stats.Settings(), truth: list[TruthCheck] = ()) -> str:
    lines = [f"# SpecSnap leaderboard: study `{study}`", ""]
    if (board["agent_kind"] == REFERENCE_KIND).any():
        lines += [f"> {REFERENCE_NOTICE}", ""]
    if (board["agent_kind"] == REPLAY_KIND).any():
        lines += [f"> {REPLAY_NOTICE}", ""]
    for column, head, text in WARNINGS:
        count = int(board[column].sum())
        if count:
            lines += [f"> **{head}: {count} trial{'s' if count != 1 else ''} {text}", ""]
    tampered, stopped = int(board["tampered"].sum()), int(board["budget_exhausted"].sum())
    level = f"{settings.level:.0%}"
    lines += [f"`net` is the mean over the row's `n` valid trials; `net {level} CI` its {level} t-interval (full marks "
              f"and S1-edit survival: Wilson, in leaderboard.csv), printed from n = {stats.MIN_INTERVAL_N}, where its "
              "simulated coverage is at least 93%; below, the cell says too few. A deterministic reference policy's is "
              "its closed form, zero width from two trials. `expected_mean`: a stochastic reference policy's true "
              "mean (docs/statistics.md).", ""]
    cols = ["workload", "arm", "agent", "agent_kind", "variant", "trials", "invalid", "tampered", "n", "raw", "net",
            f"net {level} CI", "n_requirements",
            "tes", "tokens", "s1_edit_survived", "expected_net", "matches_expected"]
    board = board.rename(columns={"net_interval": f"net {level} CI"})
    if board["expected_mean"].notna().any():
        cols.insert(cols.index("matches_expected"), "expected_mean")
    if (board["continuation"] != "reset").any():
        cols.insert(cols.index("trials"), "continuation")
    if board["variant"].str.startswith("poison").any():
        cols.insert(cols.index("s1_edit_survived"), "defects_survived")
    if tampered:
        cols.append("tamper_evidence")  # the first piece of evidence of each tampered trial
    if stopped:
        cols.insert(cols.index("n"), "budget_exhausted")
    if int(board["limit_exceeded"].sum()):
        cols.insert(cols.index("n"), "limit_exceeded")
    if (board["agent_kind"] != REFERENCE_KIND).any():  # what a model's trials cost (docs/cost.md)
        cost_cols = ["cost_usd", "cost_usd_total", *([LIST_PRICE_COLUMN] if (board["agent_kind"] == REPLAY_KIND).any()
                                                     else [])]
        cols[cols.index("tokens") + 1:cols.index("tokens") + 1] = cost_cols
    lines += [_cost_line(board), ""]
    lines += _table(cost_cells(board), cols)
    for rows, title, text, renames, cols in _family_sections(board):
        if len(rows):
            # (a column renamed onto another's name replaces it: the trial's tokens give way to the
            # tokens before the first useful edit in the cost-of-resuming table)
            shown = rows.drop(columns=[c for c in renames.values() if c in rows and c not in renames])
            lines += ["", f"## {title}", "", text, "", *_table(shown.rename(columns=renames), cols)]
    if paired is not None and len(paired):
        lines += ["", *_paired_markdown(paired, settings)]
    if truth:
        lines += ["", "## Checked against truth", "",
                  "The stochastic reference policies' rows have a known truth (docs/statistics.md): where no difference "
                  "is real, and where one was planted, with the power the test has for it.", "",
                  *(f"- {c.line()}" for c in truth)]
    return "\n".join(lines) + "\n"


def _cost_line(board: pd.DataFrame) -> str:
    """The study's cost in one line (docs/cost.md): what its model calls cost at the price table's
    prices, or that it is unknown, with the tokens no price covers. Reference policies and replays
    paid nothing: $0, said so; a replay's calls at list prices follow, labelled hypothetical."""
    trials = int(board["trials"].sum())
    kinds = board["agent_kind"]
    replay, reference = kinds == REPLAY_KIND, kinds == REFERENCE_KIND
    paid = board[~replay & ~reference]
    unpriced = int(paid["cost_unpriced_tokens"].fillna(0).sum())
    known = paid["cost_usd_total"].dropna()
    free = [what for what, present in (("reference policies call no model", reference.any()),
                                        ("replays answer from a script, calling no model", replay.any())) if present]
    free_text = f"{' and '.join(free)}: $0, nothing paid" if free else ""
    if not len(paid):
        text = f"**Cost of the study**: $0 over {trials} trials: no trial called a paid model ({free_text})."
    elif len(known) == len(paid):
        text = (f"**Cost of the study**: ${known.sum():.4f} over {trials} trials (model calls at conf/prices.yaml's "
                f"prices{'; ' + free_text if free else ''}).")
    else:
        text = (f"**Cost of the study**: unknown: {unpriced:,} tokens were spent by models conf/prices.yaml has no price "
                f"for (counted, not priced); the rows with a price cost ${known.sum():.4f}"
                f"{' (' + free_text + ')' if free else ''}.")
    if replay.any():
        listed = board.loc[replay, LIST_PRICE_COLUMN] if LIST_PRICE_COLUMN in board else pd.Series(dtype=float)
        if len(listed) and listed.notna().all():
            text += (f" Hypothetical, never paid: at the list prices of the models the harnesses were told they talk "
                     f"to, the replayed calls would have cost ${listed.sum():.4f}.")
        else:
            text += (" Hypothetical, never paid: at list prices the replayed calls' cost is unknown (a replayed model "
                     f"has no price; the replay rows with one come to ${listed.dropna().sum():.4f}).")
    return text


# A replay's calls at list prices: what they would have cost had a model answered them (nothing was paid).
LIST_PRICE_COLUMN = "hypothetical_list_usd"


def _spend_columns(spends: list[Spend]) -> dict[str, Any]:
    """A session's or a trial's cost columns from its ledgers' :class:`Spend` (docs/cost.md): what it
    paid (a replayed call pays $0), the tokens no price covers, and, where it replayed calls, their
    list-price equivalent (hypothetical; empty where nothing was replayed or a replayed model has no
    price)."""
    return {"cost_usd": add(*(s.usd for s in spends)),
            "cost_unpriced_tokens": sum(s.unpriced_tokens for s in spends),
            LIST_PRICE_COLUMN: add(*(s.hypothetical_list_usd for s in spends))
            if any(s.replayed_calls for s in spends) else None}


def with_list_prices(board: pd.DataFrame, scorecards: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with each replay row's ``hypothetical_list_usd``: its trials' replayed calls at
    list prices, summed (unknown where one's is); empty on every other row (they paid what they cost)."""
    if board.empty or scorecards.empty or LIST_PRICE_COLUMN not in scorecards:
        return board.assign(**{LIST_PRICE_COLUMN: float("nan")})
    cards = scorecards[scorecards["agent_kind"] == REPLAY_KIND]
    if "continuation" not in cards:  # (scorecards written before continuation modes: all reset)
        cards = cards.assign(continuation="reset")
    if cards.empty:
        return board.assign(**{LIST_PRICE_COLUMN: float("nan")})
    listed = cards.groupby(GROUP, sort=True)[LIST_PRICE_COLUMN].agg(
        lambda v: round(float(v.sum()), 4) if v.notna().all() else float("nan")).rename(LIST_PRICE_COLUMN)
    out = board.drop(columns=[LIST_PRICE_COLUMN], errors="ignore").merge(listed.reset_index(), on=GROUP, how="left")
    return out.set_axis(board.index)


def cost_cells(board: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard's cost columns as its markdown table shows them: "unknown" where a model has
    no price; on a reference policy's and a replay's rows, $0 and why (nothing was paid); a replay's
    list-price equivalent labelled hypothetical."""
    kinds = board["agent_kind"]
    why = pd.Series("", index=board.index).mask(kinds == REFERENCE_KIND, "0 (no model called)") \
        .mask(kinds == REPLAY_KIND, "0 (replay: nothing paid)")

    def shown(column: str) -> pd.Series:
        values = board[column].astype(object).where(board[column].notna(), "unknown")
        return values.mask(why != "", why)

    out = board.assign(cost_usd=shown("cost_usd"), cost_usd_total=shown("cost_usd_total"))
    if LIST_PRICE_COLUMN in board:
        listed = board[LIST_PRICE_COLUMN].map(lambda v: "unknown" if pd.isna(v) else f"{v:.4f}")
        out[LIST_PRICE_COLUMN] = listed.where(kinds == REPLAY_KIND, "").map(
            lambda v: f"{v} (hypothetical, not paid)" if v else v)
    else:
        out[LIST_PRICE_COLUMN] = ""
    return out


ADJUST_NAMES = {"holm": "Holm-adjusted", "bh": "Benjamini-Hochberg-adjusted", "none": "unadjusted"}


def paired_summary(rows: pd.DataFrame, settings: stats.Settings) -> str:
    """One table's comparisons in words: how many, how many tested and marked, how many had too few
    pairs or are closed forms, and what marking means (the adjustment; what chance alone would mark)."""
    made = len(rows)
    tested = int(rows["p"].notna().sum())
    marked = int(rows["marked"].sum())
    few = int(rows["test"].str.startswith("too few").sum())
    closed = int((rows["test"] == stats.CLOSED_FORM).sum())
    alpha = settings.alpha
    text = (f"**{made} comparison{'s' if made != 1 else ''}**, {tested} tested, {marked} marked `*` (two-sided sign-flip "
            f"test, {ADJUST_NAMES[settings.adjust]} p <= {alpha:g} across the table's {tested} test"
            f"{'s' if tested != 1 else ''})")
    extra = []
    if few:
        extra.append(f"{few} with too few pairs to test ({stats.min_pairs(alpha)} needed at this level)")
    if closed:
        extra.append(f"{closed} of deterministic reference policies (a closed form: no test)")
    text += ("; " + "; ".join(extra) if extra else "") + ". "
    if settings.adjust == "none":
        text += (f"Not adjusted for the number of tests: with no true difference anywhere, up to about "
                 f"{tested * alpha:.1f} of {tested} would be marked by chance.")
    elif settings.adjust == "holm":
        text += f"With no true difference anywhere, the chance of any mark in this table is at most {alpha:g}."
    else:
        text += f"Of the marked comparisons, at most a share {alpha:g} are expected to be false discoveries."
    return text


def _paired_markdown(paired: pd.DataFrame, settings: stats.Settings) -> list[str]:
    """The paired differences: one table per axis, the net rows (tokens: paired.csv)."""
    lines = ["## Paired differences", ""]
    level = f"{settings.level:.0%}"
    for axis, rows in paired[paired["metric"] == "net"].groupby("axis", sort=False):
        base = rows["baseline"].iloc[0]
        lines += [f"### Each {axis} against {base} (net)", "",
                  f"Over trials that share workload, variant, {'continuation' if axis == 'arm' else 'arm'}, agent and "
                  f"seed: the mean of `{axis} - {base}` over the `pairs`, the effect size (mean / SD of the "
                  f"differences), its {level} t-interval (from {stats.MIN_INTERVAL_N} pairs), the sign-flip test's p "
                  f"and the adjusted p ({settings.adjust}). " + paired_summary(rows, settings), ""]
        shown = rows.assign(interval=interval_texts(rows, "pairs", "difference", "lo", "hi"),
                            mark=[_mark(r) for r in rows.itertuples(index=False)])
        other = "continuation" if axis == "arm" else "arm"
        lines += _table(shown.rename(columns={"baseline_mean": base, "compared_mean": "mean", "effect_size": "effect",
                                              "p_adjusted": f"p ({settings.adjust})"}),
                        ["workload", "variant", other, "agent", axis, "pairs", base, "mean", "difference", "effect",
                         "interval", "p", f"p ({settings.adjust})", "mark"])
        lines.append("")
    return lines


def _mark(row: Any) -> str:
    """A paired row's mark: ``*`` where the adjusted p reaches the level; else why there is no test."""
    if row.marked:
        return "*"
    return "" if row.test.startswith("sign-flip") else row.test


def _table(board: pd.DataFrame, cols: list[str]) -> list[str]:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in board[cols].itertuples(index=False):
        lines.append("| " + " | ".join("" if pd.isna(v) else str(v).replace("|", "\\|") for v in row) + " |")
    return lines
