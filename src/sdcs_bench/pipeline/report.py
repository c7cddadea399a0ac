"""A study's static HTML report: ``results/<run>/report/``, opened from disk, no server.

- ``index.html``: the study at a glance (the pivots, published rows beside local ones), the
  leaderboard and the trials as sortable, filterable tables whose rows open the trial pages, and
  the plots (copied into ``report/plots/`` so the directory stands on its own).
- ``trials/<trial>.html``, one per trial, holding only that trial's data: the session timeline;
  per session the cleave (path, time, the diff at the cutoff), the notes files and every file as
  they were at the cutoff (read from the session's snapshot, never unpacked), the token ledger per
  call, the transcript and the agent's stderr; the scorecard with its per-requirement map.
- ``report.json``: the SHA-256 of what the report was made from (written last).

Every byte an agent wrote is treated as hostile: templates escape everything (Jinja2 autoescape),
and each page carries a Content-Security-Policy that lets no script run on a trial page and only
the report's own script, by its hash, on the index. Large records are cut at a stated limit, with
a link to the full file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import tarfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from sdcs_bench.core.forkmap import fork_map
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.pipeline import leaderboard as lb
from sdcs_bench.pipeline.aggregate import by_hand_cards
from sdcs_bench.pipeline.labels import handoff_label, source_label
from sdcs_bench.pipeline.stats import Settings
from sdcs_bench.pipeline.freshness import INPUTS_KEY, input_record
from sdcs_bench.pipeline.layout import RunLayout, TrialLayout

FILE_LIMIT = 64 * 1024          # bytes of one file shown from a snapshot
SNAPSHOT_LIMIT = 1024 * 1024    # bytes of file contents shown per session snapshot
SNAPSHOT_FILES = 500            # files listed per session snapshot
TRANSCRIPT_LIMIT = 512 * 1024   # bytes of a transcript rendered on the page (the rest: the file's link)
STDERR_LIMIT = 32 * 1024
TEXT_PROBE = 8192
SNAPSHOT_MEMBERS = 20_000      # archive members read per snapshot (the rest: counted as not read)
PRETTY_DEPTH = 32


def _templates():
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("sdcs_bench", "data/report"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["pretty"] = _pretty
    env.filters["clip"] = lambda text: _clip(str(text or ""), FILE_LIMIT)
    env.filters["utc"] = lambda t: (datetime.fromtimestamp(float(t), timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
                                    + " UTC") if t else ""
    return env


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… cut at {limit} of {len(text)} characters"


def _depth(value: Any, limit: int = PRETTY_DEPTH) -> int:
    """How deeply ``value`` nests, counted up to ``limit`` (iteratively: a hostile record may
    nest thousands deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > limit:
                return deepest
            stack += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return deepest


def _pretty(value: Any) -> str:
    """A record as indented JSON, cut at ``FILE_LIMIT`` characters. Indenting costs depth x size, so
    a record nested deeper than ``PRETTY_DEPTH`` is shown compact."""
    try:
        deep = _depth(value) > PRETTY_DEPTH
        text = json.dumps(value, indent=None if deep else 2, sort_keys=not deep, default=str)
    except (RecursionError, ValueError, TypeError):
        text = repr(value)[:FILE_LIMIT]
    return _clip(text, FILE_LIMIT)


def _write(path: Path, text: str) -> None:
    """Write a page; a name or text that is not valid UTF-8 (an agent's file name) is written as
    its escape sequence rather than failing the report."""
    atomic_write(path, text.encode("utf-8", "backslashreplace").decode("utf-8"))


def _asset(name: str) -> str:
    return resources.files("sdcs_bench").joinpath(f"data/report/{name}").read_text()


def _csp(script: str | None) -> str:
    """No script runs on a page except, on the index, the report's own (by its SHA-256)."""
    scripts = f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'" if script else "'none'"
    return (f"default-src 'none'; script-src {scripts}; style-src 'unsafe-inline'; img-src 'self' file: data:; "
            "base-uri 'none'; form-action 'none'")


@dataclass
class Clipped:
    text: str
    clipped: bool
    size: int


def _read_clipped(path: Path, limit: int) -> Clipped | None:
    if not path.is_file():
        return None
    size = path.stat().st_size
    with path.open("rb") as fh:
        data = fh.read(limit)
    return Clipped(data.decode("utf-8", "replace"), size > limit, size)


def _jsonl(path: Path, limit: int) -> tuple[list[Any], bool]:
    """The records of a JSON-lines file up to ``limit`` bytes (a line that is not JSON is kept as text)."""
    clip = _read_clipped(path, limit)
    if clip is None:
        return [], False
    lines = clip.text.split("\n")  # not splitlines(): U+2028 may sit raw inside a JSON string
    if clip.clipped and lines:
        lines = lines[:-1]  # the last line may be cut in the middle
    out = []
    for line in lines:
        if line.strip():
            try:
                out.append(json.loads(line))
            except (ValueError, RecursionError):
                out.append(_clip(line, FILE_LIMIT))
    return out, clip.clipped


def _member_path(name: str) -> str:
    """An archive member's path relative to the tree (``./a/b`` and ``/a/b`` -> ``a/b``; ``.git``
    keeps its dot)."""
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def _json_or_none(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _snapshot(path: Path, notes: list[str]) -> dict[str, Any]:
    """The files of a session's snapshot as they were at its end (the cutoff of a cleaved session),
    read from the archive without unpacking it: regular files only, ``.git`` left out."""
    if not path.is_file():
        return {"files": [], "notes": {}, "missing": True, "more": 0}
    try:
        files, notes_files, total, listed = _read_snapshot(path, notes)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        return {"files": [], "notes": {n: None for n in notes}, "missing": False, "more": 0,
                "unreadable": f"{type(exc).__name__}: {exc}"}
    for name in notes:
        notes_files.setdefault(name, None)  # a notes file the session did not leave behind
    return {"files": sorted(files, key=lambda f: f["path"]), "notes": notes_files, "missing": False,
            "more": total - listed}


def _read_snapshot(path: Path, notes: list[str]) -> tuple[list, dict, int, int]:
    """Stream the archive once (members not kept in memory; at most ``SNAPSHOT_MEMBERS`` read)."""
    files, notes_files, shown, listed, total = [], {}, 0, 0, 0
    with tarfile.open(path, "r|*") as tar:
        for seen, member in enumerate(tar):
            tar.members = []
            if seen >= SNAPSHOT_MEMBERS:
                total += 1
                continue
            raw = member.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            name = _member_path(raw)
            if name == ".git" or name.startswith(".git/") or not member.isfile():
                continue
            total += 1
            want_notes = name in notes
            if listed >= SNAPSHOT_FILES and not want_notes:
                continue
            entry: dict[str, Any] = {"path": name, "size": member.size, "text": None, "clipped": False, "binary": False}
            if want_notes or shown < SNAPSHOT_LIMIT:
                fh = tar.extractfile(member)
                data = fh.read(FILE_LIMIT) if fh else b""
                if b"\0" in data[:TEXT_PROBE]:
                    entry["binary"] = True
                else:
                    entry["text"] = data.decode("utf-8", "replace")
                    entry["clipped"] = member.size > FILE_LIMIT
                    shown += len(data)
            if want_notes:
                notes_files[name] = entry
            if listed < SNAPSHOT_FILES:
                files.append(entry)
                listed += 1
    return files, notes_files, total, listed


def _sessions(run_dir: Path, trial: str, stages: list[str], notes: list[str]) -> list[dict[str, Any]]:
    layout = TrialLayout(str(run_dir), trial)
    out = []
    for stage in [s for s in stages if s.startswith("session_")]:
        files = {k: Path(v) for k, v in layout.outputs(stage).items()}
        record = json.loads(files["stage"].read_text())
        session = record.get("session") or {}
        calls, calls_clipped = _jsonl(files["ledger"], TRANSCRIPT_LIMIT)
        events, events_clipped = _jsonl(files["events"], TRANSCRIPT_LIMIT)
        abstention = _json_or_none(files["abstention"])
        transcript, transcript_clipped = _jsonl(files["transcript"], TRANSCRIPT_LIMIT)
        out.append({
            "stage": stage, "record": record, "session": session, "cleave": session.get("cleave") or {},
            "calls": calls, "calls_clipped": calls_clipped,
            "events": [e for e in events if isinstance(e, dict)], "events_clipped": events_clipped,
            "abstention": abstention if isinstance(abstention, dict) else None,
            "native": [f"../../trials/{trial}/{stage}/{rel}" for rel in session.get("harness_records") or []
                       if isinstance(rel, str) and rel.startswith("native/") and ".." not in rel.split("/")],
            "transcript": transcript, "transcript_clipped": transcript_clipped,
            "transcript_size": files["transcript"].stat().st_size if files["transcript"].is_file() else 0,
            "stderr": _read_clipped(files["stderr"], STDERR_LIMIT),
            "snapshot": _snapshot(files["snapshot"], notes),
            "raw": {k: f"../../trials/{trial}/{stage}/{p.name}" for k, p in files.items()},
        })
    return out


def _handoffs(run_dir: Path, trial: str, stages: list[str]) -> list[dict[str, Any]]:
    """Each handoff of a continuation trial: its record and the text it put into the next prompt."""
    layout = TrialLayout(str(run_dir), trial)
    out = []
    for stage in [s for s in stages if s.startswith("handoff_")]:
        files = layout.outputs(stage)
        record = _json_or_none(Path(files["stage"])) or {}
        out.append({"stage": stage, "record": record if isinstance(record, dict) else {},
                    "context": _read_clipped(Path(files["context"]), FILE_LIMIT), "raw": f"../../trials/{trial}/{stage}/"})
    return out


def _timeline(sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each session as a bar whose width is its share of the trial's wall time, the cleave marked."""
    total = sum(float(s["session"].get("wall_s") or 0) for s in sessions) or 1.0
    bars = []
    for s in sessions:
        wall = float(s["session"].get("wall_s") or 0)
        at = s["cleave"].get("at_s") if s["cleave"].get("fired") else None
        bars.append({"label": s["session"].get("session", s["stage"]), "status": s["session"].get("status"),
                     "width": round(100 * wall / total, 2), "wall_s": wall,
                     "cleave_at": round(100 * float(at) / wall, 2) if at is not None and wall else None})
    return bars


def _requirements(card: dict[str, Any]) -> list[tuple[str, Any]]:
    reqs = card.get("requirements")
    return list(reqs.items()) if isinstance(reqs, dict) else []


def card_source(card: dict[str, Any]) -> str:
    """What produced a trial, as its page and the index name it: both sides of a handoff."""
    succ = card.get("successor") or None
    then = source_label(succ["agent_kind"], succ.get("model"), succ.get("harness")) if succ else None
    return handoff_label(source_label(card["agent_kind"], card.get("model"), card.get("harness")), then)


def _trial_page(env, run_dir: Path, cell: dict[str, str], study: str) -> str:
    layout = TrialLayout(str(run_dir), cell["trial"])
    card = json.loads(Path(layout.file("score", "scorecard.json")).read_text())
    plan = json.loads(Path(RunLayout(str(run_dir)).trial_file(cell["trial"])).read_text())
    arm = plan.get("arm") or {}
    notes = list(dict.fromkeys([*(arm.get("memory_files") or []), *([arm["notes_file"]] if arm.get("notes_file") else [])]))
    sessions = _sessions(run_dir, cell["trial"], cell["stages"].split(","), notes)
    inject = Path(layout.stage_json("inject"))
    injection = json.loads(inject.read_text()) if "inject" in cell["stages"].split(",") and inject.is_file() else None
    return env.get_template("trial.html.j2").render(
        injection=injection, handoffs=_handoffs(run_dir, cell["trial"], cell["stages"].split(",")),
        study=study, card=card, cell=cell, arm=arm, notes=notes, sessions=sessions, timeline=_timeline(sessions),
        requirements=_requirements(card), source=card_source(card),
        kinds=sorted({card["agent_kind"], *([card["successor"]["agent_kind"]] if card.get("successor") else [])}),
        csp=_csp(None), css=_asset("report.css"), limits={"file": FILE_LIMIT, "transcript": TRANSCRIPT_LIMIT},
        published_label=lb.PUBLISHED_LABEL)


def _by_hand_page(env, card: dict[str, Any], study: str) -> str:
    """A trial a person ran by hand and scored into the run: its scorecard (no stage records)."""
    cell = {"trial": card["trial"], "stages": ""}
    return env.get_template("trial.html.j2").render(
        injection=None, study=study, card=card, cell=cell, arm={"name": card.get("arm")}, notes=[], sessions=[],
        timeline=[], requirements=_requirements(card), source=card_source(card), kinds=[card["agent_kind"]],
        csp=_csp(None), css=_asset("report.css"), limits={"file": FILE_LIMIT, "transcript": TRANSCRIPT_LIMIT},
        published_label=lb.PUBLISHED_LABEL)


def _index_page(env, run_dir: Path, board: dict[str, Any], cards: pd.DataFrame, plots: list[str]) -> str:
    script = _asset("report.js")
    trials_by_group: dict[tuple, list[str]] = {}
    if "continuation" not in cards:  # (scorecards written before continuation modes: all reset)
        cards = cards.assign(continuation="reset")
    for card in cards.itertuples(index=False):
        trials_by_group.setdefault((card.workload, card.arm, card.agent, card.variant, card.continuation),
                                   []).append(card.trial)
    rows = [{**row, "continuation": row.get("continuation") or "reset",
             "trials_list": trials_by_group.get((row["workload"], row["arm"], row["agent"], row["variant"],
                                                 row.get("continuation") or "reset"), [])}
            for row in board["rows"]]
    then = cards["successor_source"].fillna("") if "successor_source" in cards else pd.Series("", index=cards.index)
    cards = cards.assign(source=[handoff_label(source_label(*r[:3]), r[3]) for r in
                                 cards[["agent_kind", "model", "harness"]].assign(then=then).itertuples(index=False)])
    tables = lb.published()["tables"]
    return env.get_template("index.html.j2").render(
        board=board, rows=rows, cards=cards.to_dict("records"), pivots=lb.pivots(board, tables),
        paired=board.get("paired") or [], statistics=board.get("statistics") or Settings().to_dict(),
        cost_line=board.get("cost_line") or "", truth_checks=board.get("truth_checks") or [],
        published_tables=lb.document(run_dir)["published"]["tables"],
        plots=plots, legend=lb.LEGEND, published_label=lb.PUBLISHED_LABEL, local_label=lb.LOCAL_LABEL,
        csp=_csp(script), css=_asset("report.css"), script=script)


def write_report(run_dir: Path, progress: Any = None) -> Path:
    """Write the report of an aggregated study; returns ``index.html``. ``progress``: a callable
    given each trial's id as its page is written (the CLI's progress bar)."""
    from sdcs_bench.pipeline.plan.files import read_cells

    run = RunLayout(str(run_dir))
    board = lb.local(Path(run_dir))
    if board is None:
        raise FileNotFoundError(f"{run_dir}: no leaderboard.json; run the aggregate first")
    cards = pd.read_csv(run.scorecards, keep_default_na=False, na_values=[""], dtype={
        k: str for k in ("trial", "workload", "arm", "agent", "variant", "continuation")})
    out = Path(run.report_dir)
    (out / "trials").mkdir(parents=True, exist_ok=True)
    for stale in ("plots", "trials"):  # what an earlier report wrote and this one would not
        shutil.rmtree(out / stale, ignore_errors=True)
    (out / "trials").mkdir(parents=True)
    plots = []
    if Path(run.plots_dir).is_dir():
        shutil.copytree(run.plots_dir, out / "plots", dirs_exist_ok=True)
        plots = sorted(p.name for p in (out / "plots").glob("*.svg"))
    env = _templates()
    inputs_by_hand: list[Path] = []
    cells = read_cells(Path(run.cells)) if Path(run.cells).is_file() else []

    def page(cell: dict[str, str]) -> str:
        _write(out / "trials" / f"{cell['trial']}.html", _trial_page(env, Path(run_dir), cell, board["study"]))
        return cell["trial"]

    for trial in fork_map(page, cells):  # (side by side when the job has more than one core)
        if progress:
            progress(trial)
    for path, card in by_hand_cards(Path(run_dir)):  # no stages: the scorecard is all there is
        _write(out / "trials" / f"{card['trial']}.html", _by_hand_page(env, card, board["study"]))
        inputs_by_hand.append(path)
    _write(Path(run.report_index), _index_page(env, Path(run_dir), board, cards, plots))
    inputs = [run.aggregate_record, run.leaderboard("json"), run.scorecards, *map(str, inputs_by_hand),
              *sorted(p for p in Path(run.plots_dir).glob("*") if p.suffix in (".png", ".svg"))]
    atomic_write(Path(run.report_record), json.dumps({INPUTS_KEY: input_record(Path(run_dir), inputs)}, indent=2))
    return Path(run.report_index)
