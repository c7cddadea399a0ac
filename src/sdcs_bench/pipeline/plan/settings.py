"""The run's settings a plan carries beside its trials, each checked before any work: the budget
(``plan/budget.json``), the prices (``plan/prices.json``), the statistics (``plan/statistics.json``),
who writes a summary or notes handoff and from what (``handoff``, carried in the trial files that
use it), and, for a rerun batch, which of a finished run's trials it repeats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import conf_dir
from sdcs_bench.core.prices import PriceTable
from sdcs_bench.pipeline.plan.files import STUDY_FILE, read_cells
from sdcs_bench.pipeline.plan.overrides import override_key
from sdcs_bench.pipeline.stability import Subset, subset_trials

PRICES_CONF = "prices.yaml"
BUDGET_KEYS = ("max_usd", "trial_max_usd")
PRICE_REPLAY = "price_replay"  # replay calls priced at list prices, for a test of the budget itself
# handoff.writer: ``same`` (the model of the session handed over) or an agent of conf/agent/;
# handoff.source: what the writer reads of that session (docs/protocol.md#who-writes-a-handoff).
SAME_WRITER = "same"
HANDOFF_SOURCES = ("trace", "conversation")
HANDOFF_KEYS = ("writer", "source")


def budget_settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """The ``budget`` settings (docs/cost.md): ``max_usd`` for the run, ``trial_max_usd`` for any one
    trial, each a number > 0 or null; ``price_replay``, true or false."""
    budget = dict(cfg.get("budget") or {})
    unknown_keys = sorted(set(budget) - {*BUDGET_KEYS, PRICE_REPLAY})
    if unknown_keys:
        raise SpecSnapError(f"unknown budget setting {unknown_keys[0]!r}", (*BUDGET_KEYS, PRICE_REPLAY))
    price_replay = budget.get(PRICE_REPLAY, False)
    if not isinstance(price_replay, bool):
        raise SpecSnapError(f"budget.{PRICE_REPLAY} is {price_replay!r}: true or false")
    return {**{k: check_limit(f"budget.{k}", budget.get(k)) for k in BUDGET_KEYS}, PRICE_REPLAY: price_replay}


def handoff_settings(cfg: dict[str, Any]) -> tuple[str, str]:
    """The ``handoff`` settings: the writer (``same`` or an agent's name) and the source, checked."""
    from sdcs_bench.trial import config

    handoff = cfg.get("handoff") or {}
    if not isinstance(handoff, dict):
        raise SpecSnapError(f"bad override: handoff is a group of settings (e.g. handoff.source=conversation), "
                            f"not {handoff!r}")
    unknown = sorted(set(handoff) - set(HANDOFF_KEYS))
    if unknown:
        raise SpecSnapError(f"unknown handoff setting {unknown[0]!r}", HANDOFF_KEYS)
    writer, source = str(handoff.get("writer") or SAME_WRITER), str(handoff.get("source") or HANDOFF_SOURCES[0])
    if source not in HANDOFF_SOURCES:
        raise SpecSnapError(f"handoff.source is {source!r}: what a summary or notes writer reads of the session "
                            "handed over", HANDOFF_SOURCES)
    if writer != SAME_WRITER and writer not in config.options("agent"):
        raise SpecSnapError(f"handoff.writer is {writer!r}: {SAME_WRITER} (the model of the session handed over) or "
                            "an agent of conf/agent/ whose model writes every summary and notes of the run",
                            [SAME_WRITER, *config.options("agent")])
    return writer, source


def check_limit(name: str, value: Any) -> float | None:
    """A budget limit: a number of dollars > 0, or None (no limit)."""
    if value is None or value == "null":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not 0 < number < float("inf"):
        raise SpecSnapError(f"{name} is {value!r}: a number of dollars > 0, or null for no limit")
    return number


def conf_prices() -> PriceTable:
    """``conf/prices.yaml`` (docs/cost.md), checked: the plan carries it (``plan/prices.json``) to the
    stages that price calls and to the aggregate. No file: an empty table (every cost unknown)."""
    import yaml

    path = conf_dir() / PRICES_CONF
    return PriceTable.parse(yaml.safe_load(path.read_text()) if path.is_file() else None)


def statistics_settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """The ``statistics`` settings (docs/statistics.md), checked before any work."""
    from sdcs_bench.pipeline.stats import Settings

    try:
        return Settings.from_config(cfg.get("statistics")).to_dict()
    except (ValueError, TypeError) as exc:
        raise SpecSnapError(f"bad statistics settings: {exc}") from None


def rerun_subset(trials: list[dict[str, Any]], subset: Subset, study: str, overrides: list[str],
                 results: Path) -> list[dict[str, Any]]:
    """The trials of a rerun batch (docs/statistics.md#run-to-run-stability): those of the chosen
    cells of the finished run ``subset.of``, which must hold this very study and overrides."""
    finished = results / subset.of / "plan"
    try:
        recorded = json.loads((finished / STUDY_FILE).read_text())
        cells = read_cells(finished / "cells.tsv")
    except (OSError, ValueError) as exc:
        raise SpecSnapError(f"rerun_of={subset.of}: no finished run's plan at {finished} ({exc})") from None
    if (recorded.get("study"), recorded.get("overrides_key")) != (study, override_key(overrides)):
        raise SpecSnapError(f"rerun_of={subset.of} holds study {recorded.get('study')!r} with overrides "
                            f"{recorded.get('overrides')}; a rerun repeats its trials, so it takes the same study and "
                            f"overrides (specsnap rerun --from {subset.of} reads them for you)")
    chosen = subset_trials(cells, subset)
    kept = [t for t in trials if t["trial_id"] in chosen]
    missing = sorted(chosen - {t["trial_id"] for t in kept})
    if missing:
        raise SpecSnapError(f"rerun_of={subset.of}: {len(missing)} of its chosen trials are no longer in the study as "
                            f"planned now (e.g. {missing[0]}): the config changed since it ran")
    return kept
