"""``specsnap leaderboard``: the study's recorded tables (published data, labelled as such)
beside the leaderboard this checkout produced locally."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

PUBLISHED_LABEL = "PUBLISHED (recorded by the source studies, not reproduced by this run)"
LOCAL_LABEL = "LOCAL (produced by this checkout)"


def published() -> dict[str, Any]:
    """The recorded tables, and the published figures this checkout can recompute on the spot (the
    estimator enumeration), each beside its local value in a column that says so."""
    data = yaml.safe_load(resources.files("sdcs_bench").joinpath("data/published.yaml").read_text())
    return {**data, "tables": [*data["tables"], _enumeration_table()]}


def _enumeration_table() -> dict[str, Any]:
    from sdcs_bench.coherence import enumeration

    pub = enumeration.published()
    mine = enumeration.summarise(enumeration.enumerate_runs(*pub["k"]), *pub["k"])
    return {"title": "Estimator enumeration (coherence-debt study): the published figures beside this checkout's",
            "source": pub["source"], "columns": ["figure", "published", "local (computed now by this checkout)"],
            "rows": [[name, value, mine.get(name)] for name, value in pub["figures"].items()]}


def local(study_dir: Path) -> dict[str, Any] | None:
    path = study_dir / "leaderboard.json"
    return json.loads(path.read_text()) if path.is_file() else None


def as_json(study_dir: Path) -> str:
    return json.dumps({"published": {"label": PUBLISHED_LABEL, **published()},
                       "local": {"label": LOCAL_LABEL, **(local(study_dir) or {"rows": []})}}, indent=2)


def as_markdown(study_dir: Path) -> str:
    pub = published()
    out = [f"# {PUBLISHED_LABEL}", "", f"Source: {pub['source']}", ""]
    for table in pub["tables"]:
        out += [f"## {table['title']}", ""]
        if table.get("source"):  # a table from another source than the study's own overview
            out += [f"Source: {' '.join(str(table['source']).split())}", ""]
        out += ["| " + " | ".join(table["columns"]) + " |",
                "|" + "---|" * len(table["columns"])]
        out += ["| " + " | ".join(str(v) for v in row) + " |" for row in table["rows"]]
        out.append("")
    board = study_dir / "leaderboard.md"
    out += [f"# {LOCAL_LABEL}", ""]
    out.append(board.read_text() if board.is_file() else f"No local results in {study_dir} yet: run `snakemake --cores 2`.")
    return "\n".join(out) + "\n"


def print_table(study_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    pub = published()
    for spec in pub["tables"]:
        table = Table(title=f"{spec['title']} — {PUBLISHED_LABEL}", title_justify="left",
                      caption=" ".join(str(spec["source"]).split()) if spec.get("source") else None)
        for col in spec["columns"]:
            table.add_column(col)
        for row in spec["rows"]:
            table.add_row(*(str(v) for v in row))
        console.print(table)
    data = local(study_dir)
    if data is None:
        console.print(f"[bold]{LOCAL_LABEL}[/]: no results in {study_dir} yet; run `snakemake --cores 2`.")
        return
    table = Table(title=f"study {data['study']} — {LOCAL_LABEL}", title_justify="left", caption=data["notice"])
    cols = ["workload", "arm", "agent", "agent_kind", "variant", "trials", "invalid", "tampered", "raw", "net", "tes",
            "tokens", "expected_net", "matches_expected"]
    if any(row.get("family") == "real_repo" for row in data["rows"]):  # bugs predicted before the run, beside raw
        cols[cols.index("raw")] = "raw (resolved)"
        cols.insert(cols.index("raw (resolved)"), "predicted_resolved")
    for col in cols:
        table.add_column(col)
    for row in data["rows"]:
        table.add_row(*("" if row.get(c.split()[0]) is None else str(row.get(c.split()[0])) for c in cols))
    console.print(table)
