"""``specsnap leaderboard``: the study's recorded tables (published data, labelled as such) beside
the leaderboard this checkout produced locally, in four formats.

The view a researcher reads at a glance is a *pivot* per (workload, variant): one row per agent,
one column per arm (a workload run under one arm: one pivot, a column per variant), each cell
``net/of`` (the mean net score over the row's valid trials, of the
workload's requirements). Every row names its source: ``published`` (the original study's
numbers, which this checkout did not produce), ``reference policy``, ``replay`` or a real agent
with its model and harness. The published rows of the same tier sit in the same pivot, so a local
cell is read beside the number the study recorded for it.

A run's ``table``, ``markdown`` and ``csv`` carry only the published tables of the workload
families the run has (:data:`TABLE_FAMILIES`: a real-repository run, the real-repository tables),
and every one when asked (``all_published``, the CLI's ``--published``); ``--format json`` is
the whole document, every published table included, checked against
``data/leaderboard.schema.json`` before it is printed. The (workload, arm) cells the plan skipped
(an arm that lacks its workload file, ``not_applicable`` in ``leaderboard.json``) are said in every
format but csv.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sdcs_bench.pipeline.labels import PUBLISHED_SOURCE, arm_order, source_label

PUBLISHED_LABEL = "PUBLISHED (recorded by the source studies, not reproduced by this run)"
LOCAL_LABEL = "LOCAL (produced by this checkout)"
SCHEMA = "specsnap.leaderboard/1"
FORMATS = ("table", "markdown", "json", "csv")
# The published table whose rows are (tier, arm, model, net, of): the one that joins the local pivots.
TIERS_TABLE = "Synthetic tiers: net requirements retained"
ENUMERATION_TABLE = "Estimator enumeration (coherence-debt study): the published figures beside this checkout's"
# The workload family (a workload.yaml's ``family``) each published table compares with: a run's
# leaderboard shows the tables of the families it has. None: no run's (shown with --published only).
# A table of data/published.yaml is listed here or names its own ``family`` (the tests check).
TABLE_FAMILIES: dict[str, str | None] = {
    TIERS_TABLE: "synthetic",
    "Poison pill on tier_2 (net of 8)": "synthetic",
    "Real repositories: bugs resolved, predicted before the run against actual (one run per arm)": "real_repo",
    "Real repositories: tokens of the unhinted memory arms against Vanilla": "real_repo",
    "Standards workload (coherence-debt study): decisions written the better way, by standard condition (models)":
        "standards",
    "Standards workload (coherence-debt study): contested decisions that followed the written standard (models)":
        "standards",
    "Coherence debt: direct withholding of k of 8 motif secrets (median tests passed of 32, six trials per cell)":
        "motifs",
    ENUMERATION_TABLE: None,  # (a property of the estimators, computed on the spot: no run's rows compare with it)
}
DEFAULT_FAMILY = "synthetic"  # a row aggregated before rows named their family (board.make_board's default)
LEGEND = ("cell: mean net/of over the row's n valid trials, its 95% t-interval in brackets (from n=5, where its "
          "coverage is checked; below, 'too few for a CI'; a deterministic reference policy: its closed form, zero "
          "width from n=2; withholding: hidden tests passed, 24/32t; standards: and the share of decisions written the "
          "better way, 33%b); * differs from the reference policy's closed form; ! some trials invalid or "
          "tampered (see the full table)")
TOO_FEW = "too few for a CI"
MIN_INTERVAL_N = 5  # stats.MIN_INTERVAL_N, not imported: the leaderboard loads no numpy (tests check they agree)


def _data(name: str) -> str:
    return resources.files("sdcs_bench").joinpath(f"data/{name}").read_text()


@functools.lru_cache(maxsize=1)
def published() -> dict[str, Any]:
    """The recorded tables, and the published figures this checkout can recompute on the spot (the
    estimator enumeration), each beside its local value in a column that says so. Computed once
    per process; callers read it and never change it."""
    data = yaml.safe_load(_data("published.yaml"))
    return {**data, "tables": [*data["tables"], _enumeration_table()]}


def _enumeration_table() -> dict[str, Any]:
    from sdcs_bench.coherence import enumeration

    pub = enumeration.published()
    mine = enumeration.summarise(enumeration.enumerate_runs(*pub["k"]), *pub["k"])
    return {"title": ENUMERATION_TABLE,
            "source": pub["source"], "columns": ["figure", "published", "local (computed now by this checkout)"],
            "rows": [[name, value, mine.get(name)] for name, value in pub["figures"].items()]}


def local(run_dir: Path) -> dict[str, Any] | None:
    """The run's ``leaderboard.json``; rows aggregated before rows named their source get it from
    their kind (model and harness "unknown" where the row does not say)."""
    path = run_dir / "leaderboard.json"
    if not path.is_file():
        return None
    board = json.loads(path.read_text())
    for row in board.get("rows", []):
        row.setdefault("model", "unknown")
        row.setdefault("harness", "unknown" if row["agent_kind"] != "reference policy" else "reference")
        row.setdefault("source", source_label(row["agent_kind"], row["model"], row["harness"]))
    return board


def table_family(table: dict[str, Any]) -> str | None:
    """The workload family a published table compares with (None: none)."""
    return table["family"] if "family" in table else TABLE_FAMILIES.get(table["title"])


def run_families(board: dict[str, Any] | None) -> set[str]:
    """The workload families a run's leaderboard has rows of (none without local results)."""
    return {row.get("family") or DEFAULT_FAMILY for row in (board or {}).get("rows", [])}


def shown_tables(board: dict[str, Any] | None, tables: list[dict[str, Any]],
                 every: bool = False) -> list[dict[str, Any]]:
    """The published tables a run's leaderboard shows: those of the families it has; ``every``: all."""
    families = run_families(board)
    return list(tables) if every else [t for t in tables if table_family(t) in families]


def _left_out(shown: int, tables: list[dict[str, Any]]) -> str:
    """The line saying how many published tables are not shown, and how to show them ("" when none)."""
    n = len(tables) - shown
    if not n:
        return ""
    which = "of other workload families than this run's " if shown else ""
    return (f"{n} published table{'s' if n != 1 else ''} {which}left out: `specsnap leaderboard --published` "
            f"prints {'them' if n != 1 else 'it'}.")


def not_applicable_lines(board: dict[str, Any] | None) -> list[str]:
    """The (workload, arm) cells the run's plan skipped (an arm that lacks its workload file), a line each."""
    from sdcs_bench.core.errors import skipped_line

    return [skipped_line(r) for r in (board or {}).get("not_applicable") or []]


# --- the pivot -------------------------------------------------------------------------------------


@dataclass
class PivotRow:
    agent: str
    source: str
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Pivot:
    """One table: a row per agent, a column per arm (``axis="arm"``, for one variant) or, for a
    workload run under a single arm, a column per variant (``axis="variant"``)."""

    workload: str
    axis: str
    fixed: str  # the variant (axis "arm") or the arm (axis "variant") every cell shares
    columns: list[str]
    rows: list[PivotRow]

    @property
    def title(self) -> str:
        return f"{self.workload} · {'variant' if self.axis == 'arm' else 'arm'} {self.fixed}"

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "axis": self.axis, "fixed": self.fixed, "columns": self.columns,
                "rows": [{"agent": r.agent, "source": r.source, "cells": r.cells} for r in self.rows]}


def _number(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.1f}".rstrip("0").rstrip(".") if not value.is_integer() else str(int(value))
    return str(value)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _local_cell(row: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard row as a cell: ``net/of``; on a withholding workload the hidden tests passed
    (``tests/total``); on the standards workload the share of decisions written the better way
    beside it."""
    net = row.get("net")
    cell = {"net": net, "of": row["n_requirements"], "trials": row["trials"], "invalid": row["invalid"],
            "tampered": row["tampered"], "matches_expected": row.get("matches_expected")}
    if "n" in row:  # (a leaderboard aggregated before intervals has none)
        cell["n"] = row["n"]
    if _present(row.get("withheld_k")) and _present(row.get("tests_passed")):
        text = f"{_number(float(row['tests_passed']))}/{row['tests_total']}t"
        cell.update(tests_passed=row["tests_passed"], tests_total=row["tests_total"])
        metric = "tests_passed"
    else:
        text = f"{'-' if net is None else _number(float(net))}/{row['n_requirements']}"
        metric = "net"
    if _present(row.get("std_better_share")):
        text += f" {float(row['std_better_share']):.0%}b"
        cell["better_share"] = row["std_better_share"]
    if row.get("matches_expected") is False:
        text += "*"
    if row.get("invalid") or row.get("tampered"):
        text += "!"
    lo, hi = row.get(f"{metric}_lo"), row.get(f"{metric}_hi")
    if _present(lo) and _present(hi):
        cell.update(lo=lo, hi=hi)
        text += f" [{_number(float(lo))},{_number(float(hi))}]"
    if "n" in row:
        text += f" n={row['n']}"
        # (a deterministic reference policy needs none: its closed form is exact)
        closed_form = row.get("agent_kind") == "reference policy" and not _present(row.get("expected_mean"))
        if not (_present(lo) and _present(hi)) and 0 < row["n"] < MIN_INTERVAL_N and not closed_form:
            text += f" ({TOO_FEW})"
    return {**cell, "text": text}


def pivots(board: dict[str, Any] | None, tables: list[dict[str, Any]]) -> list[Pivot]:
    """The local leaderboard as tables: per workload, one per variant with a column per arm, or,
    when the workload ran under one arm only, one with a column per variant. The published tier
    rows of the same workload (variant ``none``, the protocol the study ran) are rows of their own."""
    rows = (board or {}).get("rows", [])
    by_workload: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_workload.setdefault(row["workload"], []).append(row)
    out = []
    for workload, members in by_workload.items():
        arms = arm_order(row["arm"] for row in members)
        variants = list(dict.fromkeys(row["variant"] for row in members))
        axis = "variant" if len(arms) == 1 and len(variants) > 1 else "arm"
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in members:  # (a continuation mode other than reset: a table of its own)
            mode = row.get("continuation") or "reset"
            groups.setdefault(row["variant" if axis == "arm" else "arm"] + ("" if mode == "reset" else f" · {mode}"),
                              []).append(row)
        for fixed, group in groups.items():
            by_agent: dict[tuple[str, str], PivotRow] = {}
            for row in group:
                key = (row["agent"], row["source"])
                by_agent.setdefault(key, PivotRow(*key)).cells[row[axis]] = _local_cell(row)
            pub = _published_rows(tables, workload) if axis == "arm" and fixed == "none" else []
            out.append(Pivot(workload, axis, fixed, arms if axis == "arm" else variants, [*pub, *by_agent.values()]))
    return out


def _published_rows(tables: list[dict[str, Any]], workload: str) -> list[PivotRow]:
    (tiers,) = [t for t in tables if t["title"] == TIERS_TABLE]
    by_model: dict[str, PivotRow] = {}
    for rec in (dict(zip(tiers["columns"], row)) for row in tiers["rows"]):
        if rec["tier"] == workload:
            row = by_model.setdefault(rec["model"], PivotRow(rec["model"], PUBLISHED_SOURCE))
            row.cells[rec["arm"]] = {"net": rec["net"], "of": rec["of"], "text": f"{rec['net']}/{rec['of']}".replace(" ", ""),
                                     "note": rec["note"]}
    return list(by_model.values())


# --- the four formats ------------------------------------------------------------------------------


def _published_tables() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pub = published()
    return pub, pub["tables"]


def document(run_dir: Path) -> dict[str, Any]:
    """Everything every format shows, as data: the JSON format, checked against the schema."""
    pub, tables = _published_tables()
    board = local(run_dir)
    published_tables = [
        {"title": t["title"], "source": " ".join(str(t.get("source") or pub["source"]).split()), "columns": t["columns"],
         "rows": [{"source": PUBLISHED_SOURCE, "values": dict(zip(t["columns"], row))} for row in t["rows"]]}
        for t in tables]
    local_part: dict[str, Any] = {"label": LOCAL_LABEL, "study": None, "run": run_dir.name, "notices": [],
                                  "rows": [], "pivots": []}
    if board is not None:
        local_part.update(study=board["study"], run=board["run"],
                          notices=[*(n for n in (board.get("notice"), board.get("replay_notice")) if n),
                                   *not_applicable_lines(board)],
                          rows=board["rows"], pivots=[p.as_dict() for p in pivots(board, tables)],
                          **{k: board[k] for k in ("statistics", "paired", "cost", "truth_checks") if k in board})
    doc = {"schema": SCHEMA, "published": {"label": PUBLISHED_LABEL, "source": pub["source"], "tables": published_tables},
           "local": local_part}
    validate(doc)
    return doc


def validate(doc: dict[str, Any]) -> None:
    import jsonschema

    jsonschema.validate(doc, json.loads(_data("leaderboard.schema.json")))


def as_json(run_dir: Path) -> str:
    return json.dumps(document(run_dir), indent=2)


def as_csv(run_dir: Path, all_published: bool = False) -> str:
    """One line per (source, workload, variant, agent, arm): the local rows, and the published tier
    rows beside them where the run has tiers, or ``all_published`` (the other published tables have
    other shapes: see ``--format json``)."""
    doc = document(run_dir)
    shown = shown_tables(local(run_dir), _published_tables()[1], all_published)
    tier_rows = any(t["title"] == TIERS_TABLE for t in shown)
    out = io.StringIO()
    cols = ["source", "workload", "variant", "continuation", "agent", "arm", "n", "net", "net_lo", "net_hi", "of",
            "trials", "invalid", "tampered", "matches_expected", "note"]
    writer = csv.DictWriter(out, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    tiers = next(t for t in doc["published"]["tables"] if t["title"] == TIERS_TABLE)
    for row in tiers["rows"] if tier_rows else []:
        v = row["values"]
        writer.writerow({"source": PUBLISHED_SOURCE, "workload": v["tier"], "variant": "none", "agent": v["model"],
                         "arm": v["arm"], "net": v["net"], "of": v["of"], "note": v["note"]})
    for row in doc["local"]["rows"]:
        writer.writerow({**row, "of": row["n_requirements"]})
    return out.getvalue()


def _pivot_markdown(pivot: Pivot) -> list[str]:
    head = ["agent", "source", *pivot.columns]
    lines = [f"### {pivot.title}", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for row in pivot.rows:
        cells = [row.cells.get(col, {}).get("text", "") for col in pivot.columns]
        lines.append("| " + " | ".join([row.agent, row.source, *cells]) + " |")
    return [*lines, ""]


def as_markdown(run_dir: Path, all_published: bool = False) -> str:
    """The published tables of the run's families (every one with ``all_published``), the run's
    pivots and its ``leaderboard.md`` (which lists the arms not applicable where)."""
    pub, tables = _published_tables()
    board = local(run_dir)
    shown = shown_tables(board, tables, all_published)
    out = [f"# {PUBLISHED_LABEL}", "", f"Source: {pub['source']}", ""] if shown else []
    for table in shown:
        out += [f"## {table['title']}", ""]
        if table.get("source"):  # a table from another source than the study's own overview
            out += [f"Source: {' '.join(str(table['source']).split())}", ""]
        out += ["| " + " | ".join(table["columns"]) + " |",
                "|" + "---|" * len(table["columns"])]
        out += ["| " + " | ".join(str(v) for v in row) + " |" for row in table["rows"]]
        out.append("")
    if _left_out(len(shown), tables):
        out += [f"_{_left_out(len(shown), tables)}_", ""]
    out += [f"# {LOCAL_LABEL}", ""]
    if board is None:
        out.append(f"No local results in {run_dir} yet: run `snakemake --cores 2`.")
        return "\n".join(out) + "\n"
    run = board.get("run") or board["study"]
    named = f"Run `{run}`" + (f" (study `{board['study']}`)" if run != board["study"] else "")
    out += [f"## {named} at a glance: net/of by agent and arm", "", LEGEND + ".", ""]
    for pivot in pivots(board, tables):
        out += _pivot_markdown(pivot)
    out.append((run_dir / "leaderboard.md").read_text())
    return "\n".join(out) + "\n"


def print_table(run_dir: Path, console: Any = None, all_published: bool = False) -> None:
    """The pivots and the published tables of the run's families (every one with ``all_published``),
    readable in an 80-column terminal: no cell is cut (columns wrap, and a pivot with more arms than
    fit is split into several tables)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    pub, tables = _published_tables()
    board = local(run_dir)
    if board is None:
        console.print(f"[bold]{LOCAL_LABEL}[/]: no results in {run_dir} yet; run `snakemake --cores 2`.")
    else:
        console.print(f"[bold]study {board['study']}[/] (run {board['run']}) — {LOCAL_LABEL}", highlight=False)
        for notice in (board.get("notice"), board.get("replay_notice")):
            if notice and _notice_applies(notice, board):
                console.print(notice, style="italic", highlight=False)
        console.print(LEGEND, style="dim", highlight=False)
        for pivot in pivots(board, tables):
            for arms in _column_chunks(pivot, console.width):
                table = Table(title=pivot.title, title_justify="left",
                              show_lines=False, highlight=False)
                table.add_column("agent / source", overflow="fold", width=_label_width(pivot))
                for arm in arms:
                    table.add_column(arm, overflow="fold", justify="right", width=_column_width(pivot, arm))
                for row in pivot.rows:
                    style = "dim" if row.source == PUBLISHED_SOURCE else None
                    table.add_row(Text(f"{row.agent}\n({row.source})"), *(row.cells.get(a, {}).get("text", "") for a in arms),
                                  style=style)
                console.print(table)
        _print_totals(console, board)
        skipped = not_applicable_lines(board)
        if skipped:
            console.print("Not applicable (skipped at planning: the arm lacks its workload file):", highlight=False)
            for line in skipped:
                console.print(f"  {line}", highlight=False)
    shown = shown_tables(board, tables, all_published)
    for spec in shown:
        table = Table(title=f"{spec['title']} — {PUBLISHED_LABEL}", title_justify="left", highlight=False,
                      caption=" ".join(str(spec.get("source") or pub["source"]).split()))
        for col in spec["columns"]:
            table.add_column(col, overflow="fold")
        for row in spec["rows"]:
            table.add_row(*(Text(str(v)) for v in row))
        console.print(table)
    if _left_out(len(shown), tables):
        console.print(_left_out(len(shown), tables).replace("`", ""), style="dim", highlight=False)


def _notice_applies(notice: str, board: dict[str, Any]) -> bool:
    from sdcs_bench.pipeline.labels import REPLAY_NOTICE
    from sdcs_bench.trial.components import REFERENCE_KIND, REPLAY_KIND

    kind = REPLAY_KIND if notice == REPLAY_NOTICE else REFERENCE_KIND
    return any(row["agent_kind"] == kind for row in board["rows"])


def _label_width(pivot: Pivot) -> int:
    """The agent column: its longest agent name whole (18 to 26 characters; a source folds)."""
    return min(26, max([18, *(len(r.agent) + 1 for r in pivot.rows)]))


def _column_width(pivot: Pivot, column: str) -> int:
    """A column's width: its widest cell, or its name (a name of more than 16 characters, a
    variant's, folds into four lines)."""
    head = len(column) if len(column) <= 16 else -(-len(column) // 4)
    return max([head, 6, *(len(r.cells.get(column, {}).get("text", "")) for r in pivot.rows)])


def _column_chunks(pivot: Pivot, width: int) -> list[list[str]]:
    """The pivot's columns split so each table fits ``width`` (every column given its width, plus
    a border and a space either side)."""
    budget = width - _label_width(pivot) - 4
    chunks: list[list[str]] = [[]]
    used = 0
    for column in pivot.columns:
        need = _column_width(pivot, column) + 3
        if chunks[-1] and used + need > budget:
            chunks.append([])
            used = 0
        chunks[-1].append(column)
        used += need
    return chunks


def _print_totals(console: Any, board: dict[str, Any]) -> None:
    rows = board["rows"]
    trials = sum(r["trials"] for r in rows)
    invalid = sum(r["invalid"] for r in rows)
    tampered = sum(r["tampered"] for r in rows)
    checked = [r["matches_expected"] for r in rows if r.get("matches_expected") is not None]
    line = f"{trials} trials in {len(rows)} rows; {invalid} invalid; {tampered} tampered"
    paired = [p for p in board.get("paired") or [] if p.get("metric") == "net"]
    if paired:  # (a leaderboard aggregated before the sign-flip test: its interval's verdict)
        marked = sum(bool(p["marked"] if "marked" in p else p["excludes_zero"]) for p in paired)
        line += f"; {len(paired)} paired comparisons, {marked} marked (--format markdown)"
    if checked:
        line += f"; {sum(checked)} of {len(checked)} reference rows on their closed form"
    console.print(line, highlight=False)
    for check in board.get("truth_checks") or []:
        console.print(check["line"], highlight=False, style=None if check["passed"] else "bold red")
    if board.get("cost_line"):
        console.print(board["cost_line"], highlight=False)
    console.print("Per-family tables (standards, real repositories, withholding): "
                  "--format markdown; every column: leaderboard.csv", style="dim", highlight=False)
