"""Aggregate a study's scorecards into scorecards.csv, ledger.csv, calls.csv, paired.csv and the
leaderboard (csv, md, json): the records read (:mod:`.rows`), the leaderboard computed
(:mod:`.board`), the paired differences (:mod:`.paired`) and the checks against truth
(:mod:`.checks`), the Markdown written (:mod:`.markdown`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.core.prices import PriceTable, ledger_spend
from sdcs_bench.pipeline import stats
from sdcs_bench.pipeline.board import GROUP, make_board, with_list_prices
from sdcs_bench.pipeline.checks import truth_checks
from sdcs_bench.pipeline.freshness import INPUTS_KEY, input_record
from sdcs_bench.pipeline.labels import REFERENCE_NOTICE, REPLAY_NOTICE
from sdcs_bench.pipeline.layout import SCORECARD, RunLayout
from sdcs_bench.pipeline.markdown import cost_line, to_markdown
from sdcs_bench.pipeline.paired import paired_differences
from sdcs_bench.pipeline.plan.files import read_cells, read_not_applicable
from sdcs_bench.pipeline.rows import call_rows, ledger_rows, metered, scorecard_row, sessions_of, spend_columns
from sdcs_bench.proxy import read_ledger
from sdcs_bench.trial.spec import TrialSpec


def aggregate(run_dir: Path) -> pd.DataFrame:
    """Write the study's tables, each atomically, and ``aggregate.json`` last: the SHA-256 of every
    input the rule was given (the cells table, every scorecard and session ledger), by which a copy
    of the results that lost its modification times is still seen to be up to date (:mod:`.freshness`)."""
    run = RunLayout(str(run_dir))
    planned = Path(run.cells).is_file()
    by_hand = by_hand_cards(Path(run_dir))
    if not planned and not by_hand:
        raise SpecSnapError(f"{run_dir} holds no planned study ({run.cells}) and no trial scored into it by hand "
                            "(evaluate-sandbox --run)")
    cells = read_cells(Path(run.cells)) if planned else []
    cards, ledger, calls, inputs = [], [], [], [run.cells] if planned else []
    no_cleave: dict[str, bool | None] = {}  # the trials a cut never reached: whether a closed form predicts it
    prices = planned_prices(run)
    for cell in cells:
        layout, sessions = run.trial(cell["trial"]), sessions_of(cell)
        card = json.loads(Path(layout.file("score", SCORECARD)).read_text())
        _note_no_cleave(no_cleave, card)
        by_stage = {s: read_ledger(Path(layout.outputs(s)["ledger"])) for s in metered(cell)}
        costs = {s: ledger_spend(prices, rows) for s, rows in by_stage.items()}
        cards.append({**scorecard_row(card), **spend_columns(list(costs.values()))})
        ledger += ledger_rows(layout, sessions, card, costs)
        calls += call_rows(by_stage, card, prices)
        inputs += [layout.file("score", SCORECARD), *(layout.outputs(s)["ledger"] for s in by_stage)]
    for path, card in by_hand:  # a person's own runs, labelled as such (no stage records, no ledger: no cost)
        _note_no_cleave(no_cleave, card)
        cards.append({**scorecard_row(card), "cost_usd": None, "cost_unpriced_tokens": card["tokens"]["total"],
                      "hypothetical_list_usd": None})
        inputs.append(str(path))
    settings = read_settings(run)
    inputs += [p for p in (run.statistics_file, run.prices_file) if Path(p).is_file()]
    scorecards = pd.DataFrame(cards)
    _write(run.scorecards, scorecards.to_csv(index=False))
    _write(run.ledger, pd.DataFrame(ledger).to_csv(index=False))
    _write(run.calls, pd.DataFrame(calls).to_csv(index=False))
    board = with_list_prices(make_board(scorecards, settings), scorecards)
    paired = paired_differences(scorecards, settings)
    truth = truth_checks(paired, stochastic_truths(run, cells), settings)
    _write(run.paired, paired.to_csv(index=False))
    _write(run.leaderboard("csv"), board.to_csv(index=False))
    name = cards[0]["study"] if cards else Path(run_dir).name
    not_applicable = read_not_applicable(Path(run.plan_dir))  # the (workload, arm) cells the plan skipped
    _write(run.leaderboard("md"), to_markdown(board, name, paired, settings, truth, run=Path(run_dir).name,
                                              no_cleave=no_cleave, not_applicable=not_applicable))
    rows = json.loads(board.to_json(orient="records"))
    # DVC reads metrics from nested mappings, not lists: one entry per leaderboard row as well.
    metrics = {
        # (a reset row keeps the key it had before continuation modes: workload/arm/agent/variant)
        "/".join(str(row[k]) for k in GROUP if k != "agent_kind" and not (k == "continuation" and row[k] == "reset")):
            {k: row[k] for k in ("raw", "net", "tes", "tokens")}
        for row in rows
    }
    payload = {"study": name, "run": Path(run_dir).name, "notice": REFERENCE_NOTICE, "replay_notice": REPLAY_NOTICE,
               "statistics": settings.to_dict(), "cost_line": cost_line(board).replace("**", ""),
               "cost": {"total_usd": None if board["cost_usd_total"].isna().any() else round(float(board["cost_usd_total"].sum()), 6),
                        "unpriced_tokens": int(board["cost_unpriced_tokens"].fillna(0).sum()),
                        "prices": {p.model: p.describe() for p in prices.prices}},
               "rows": rows,
               "paired": json.loads(paired.to_json(orient="records")),
               "truth_checks": [c.to_dict() | {"line": c.line()} for c in truth], "metrics": metrics,
               **({"not_applicable": not_applicable} if not_applicable else {})}
    _write(run.leaderboard("json"), json.dumps(payload, indent=2))
    from sdcs_bench.pipeline.plots import write_plots

    write_plots(Path(run.plots_dir), scorecards, board, name)
    _write(run.aggregate_record, json.dumps({INPUTS_KEY: input_record(Path(run_dir), inputs)}, indent=2))
    return board


def _note_no_cleave(no_cleave: dict[str, bool | None], card: dict[str, Any]) -> None:
    """A trial whose cut never came (``no_cleave``), with whether its closed form says so too."""
    if (card.get("diagnostics") or {}).get("no_cleave"):
        expected = card.get("expected") or {}
        no_cleave[card["trial"]] = bool(expected["no_cleave"]) if "no_cleave" in expected else None


def stochastic_truths(run: RunLayout, cells: list[dict[str, str]]
                      ) -> dict[tuple[str, str], tuple[dict[str, Any], list[str]]]:
    """For each (agent, workload) of the study whose agent is a stochastic reference policy: its
    policy and the workload's requirement ids, as planned (one trial file read per pair), for
    :func:`checks.truth_checks`."""
    truths: dict[tuple[str, str], tuple[dict[str, Any], list[str]]] = {}
    for cell in cells:
        key = (cell["agent"], cell["workload"])
        if key in truths or cell.get("reference") != "true":
            continue
        spec = TrialSpec.load(Path(run.trial_file(cell["trial"])))
        if spec.agent.policy.keep is not None and spec.successor is None:
            truths[key] = (spec.agent.policy, [r.id for r in spec.workload.requirements])
    return truths


def planned_prices(run: RunLayout) -> PriceTable:
    """The run's price table as planned (none for a run planned without one: every cost unknown)."""
    path = Path(run.prices_file)
    return PriceTable.parse(json.loads(path.read_text())) if path.is_file() else PriceTable()


def read_settings(run: RunLayout) -> stats.Settings:
    """The run's ``statistics`` settings as planned (the defaults for a run planned without them)."""
    path = Path(run.statistics_file)
    return stats.Settings.from_config(json.loads(path.read_text())) if path.is_file() else stats.Settings()


def by_hand_cards(run_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The scorecards a person recorded into this run by hand, by trial id."""
    root = Path(RunLayout(str(run_dir)).by_hand_dir)
    return [(p, json.loads(p.read_text())) for p in sorted(root.glob("*/scorecard.json"))] if root.is_dir() else []


def _write(path: str, text: str) -> None:
    atomic_write(Path(path), text)
