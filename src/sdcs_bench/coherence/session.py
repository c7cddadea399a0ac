"""A session's coherence outputs, made once the agent is gone (docs/coherence.md).

The session stage calls :func:`analyse_session` with the stage directory (where the harness's
records are), the workspace as the session found it and as it left it, what the workload authors
(:class:`WorkloadFacts`) and the paths earlier sessions of the trial wrote. It writes, beside the
session's other outputs:

- ``events.jsonl``: the event stream (:mod:`.events`, :mod:`.normalise`);
- ``residency.json``: ρ_w for every scored edit and the per-window means (:mod:`.residency`);
- ``abstention.json``: blocked / fabricated / proceeded with its evidence (:mod:`.abstention`);

and returns a summary for the stage record (``stage.json``), which also carries the cumulative
set of agent-written paths to the trial's next session.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcs_bench.coherence.abstention import classify
from sdcs_bench.coherence.normalise import normalise
from sdcs_bench.coherence.residency import import_graph, residency
from sdcs_bench.coherence.resume import MAX_FILES_SEEN, files_touched, write_costs
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.core.timing import timed

EVENTS = "events.jsonl"
RESIDENCY = "residency.json"
ABSTENTION = "abstention.json"
MAX_SOURCE_BYTES = 2 * 1024 * 1024  # a Python file larger than this stays out of the import graph
MAX_FILES = 50_000
SKIP_DIRS = {".git", "__pycache__"}


def _relative_path(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or value.startswith("/") or "\\" in value:
        raise SpecSnapError(f"coherence data: {what} {value!r} is not a workspace-relative path")
    norm = posixpath.normpath(value)
    if norm.startswith("../") or norm == ".." or norm == ".":
        raise SpecSnapError(f"coherence data: {what} {value!r} leaves the workspace")
    return norm


@dataclass(frozen=True)
class WorkloadFacts:
    """What a workload authors about a trial, as plain data (the ``motifs`` family supplies it):
    ``authored`` maps a file to the files it depends on (None: the workload authors no coupling;
    residency then uses the import graph alone), ``withheld`` lists the paths whose facts the
    trial withholds (deleted or stubbed)."""

    authored: dict[str, tuple[str, ...]] | None = None
    withheld: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> WorkloadFacts:
        """From a trial file's ``coherence`` block: ``{authored: {path: [path, ...]}, withheld: [path]}``."""
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise SpecSnapError(f"coherence data must be a mapping with authored and withheld, not {type(data).__name__}")
        extra = set(data) - {"authored", "withheld"}
        if extra:
            raise SpecSnapError(f"coherence data: unknown key(s) {sorted(extra)}", ["authored", "withheld"])
        authored = data.get("authored")
        if authored is not None:
            if not isinstance(authored, Mapping):
                raise SpecSnapError("coherence data: authored must map a path to the list of paths it depends on")
            parsed = {}
            for path, deps in authored.items():
                if not isinstance(deps, (list, tuple)):
                    raise SpecSnapError(f"coherence data: authored[{path!r}] must be a list of paths")
                parsed[_relative_path(path, "authored file")] = tuple(_relative_path(d, f"dependency of {path!r}")
                                                                      for d in deps)
            authored = parsed
        withheld = data.get("withheld") or []
        if not isinstance(withheld, (list, tuple)):
            raise SpecSnapError("coherence data: withheld must be a list of paths")
        return cls(authored, tuple(_relative_path(p, "withheld path") for p in withheld))


@dataclass
class WorkspaceState:
    """A workspace at one moment: every file's SHA-256 and the Python sources (for the import graph)."""

    digests: dict[str, str] = field(default_factory=dict)
    python: dict[str, str] = field(default_factory=dict)


@timed("session instruments")
def workspace_state(root: Path) -> WorkspaceState:
    """Read a workspace without following links (the agent wrote it): regular files only, ``.git``
    and ``__pycache__`` left out."""
    root = Path(root)
    state = WorkspaceState()
    if not root.is_dir():
        return state
    stack = [root]
    while stack and len(state.digests) < MAX_FILES:
        here = stack.pop()
        try:
            entries = sorted(here.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if entry.name not in SKIP_DIRS:
                    stack.append(entry)
                continue
            if not entry.is_file():
                continue
            rel = entry.relative_to(root).as_posix()
            digest = hashlib.sha256()
            try:
                with entry.open("rb") as fh:
                    head = fh.read(MAX_SOURCE_BYTES + 1)
                    digest.update(head)
                    while chunk := fh.read(1 << 20):
                        digest.update(chunk)
            except OSError:
                continue
            state.digests[rel] = digest.hexdigest()
            if rel.endswith(".py") and len(head) <= MAX_SOURCE_BYTES:
                state.python[rel] = head.decode("utf-8", "replace")
    return state


def changed_paths(before: WorkspaceState, after: WorkspaceState) -> dict[str, str]:
    """Every path the session created, modified or deleted."""
    out = {}
    for path in sorted(set(before.digests) | set(after.digests)):
        old, new = before.digests.get(path), after.digests.get(path)
        if old != new:
            out[path] = "created" if old is None else ("deleted" if new is None else "modified")
    return out


@timed("session instruments")
def analyse_session(*, harness: str, stage_dir: Path, run_id: str, workdir: Path, before: WorkspaceState,
                    after: WorkspaceState, facts: WorkloadFacts, agent_written: Iterable[str] = (),
                    status: str | None = None, import_roots: Iterable[str] = ("",),
                    files_seen: Iterable[str] = (), resume: dict[str, Any] | None = None,
                    since: float | None = None) -> dict[str, Any]:
    """Write the session's ``events.jsonl``, ``residency.json`` and ``abstention.json``; return the
    summary kept in its stage record, with what the trial's next session is handed: the paths the
    agent wrote so far (``agent_written``) and the files its sessions read or wrote so far
    (``files_seen``, for the cost of resuming). For a continuation session, ``resume`` holds what
    the session recorded (``written``, ``calls``, ``started``): the summary then has each write on
    the session's clock (``resume``, :func:`.resume.write_costs`). ``since``: when a session that
    resumed a carried conversation started (its records' earlier entries are not its own)."""
    stage_dir = Path(stage_dir)
    stream = normalise(harness, stage_dir, run_id=run_id, workdir=workdir, agent_written=tuple(agent_written),
                       since=since)
    changed = changed_paths(before, after)
    # Files the session changed that no event names: written by a script the record cannot see through.
    named = {e.payload.get("path") for e in stream.events if e.type in ("edit_intent",)}
    named |= {p for e in stream.events if e.type == "revert" for p in e.payload.get("paths") or []}
    unattributed = sorted(p for p in changed if p not in named)
    # An edit's neighbours are what its file imported as the session found it or as it left it.
    graph = import_graph(after.python, roots=import_roots)
    for path, deps in import_graph(before.python, roots=import_roots).items():
        graph.setdefault(path, set()).update(deps)
    resid = residency(stream.events, graph=graph, authored=facts.authored, run_id=run_id)
    abst = classify(final_message=stream.final_message, events=stream.events, withheld=facts.withheld,
                    changed=changed, closing_turn=status != "cleaved", run_id=run_id)
    atomic_write(stage_dir / EVENTS, stream.jsonl())
    atomic_write(stage_dir / RESIDENCY, json.dumps(resid, indent=2))
    atomic_write(stage_dir / ABSTENTION, json.dumps(abst, indent=2))
    summary = stream.summary()
    summary["unattributed_changes"] = unattributed[:50]
    summary["unattributed_count"] = len(unattributed)
    # The next session of the trial must not count a read of any of these as acquired.
    summary["agent_written"] = sorted(set(stream.agent_written) | {p for p, how in changed.items() if how != "deleted"})
    out = {"events": summary, "residency_mean": resid["mean"], "abstention": abst["class"],
           "agent_written": summary.pop("agent_written"),
           "files_seen": sorted(set(files_seen) | files_touched(stream.events)
                                | {p for p, how in changed.items() if how != "deleted"})[:MAX_FILES_SEEN]}
    if resume is not None:
        out["resume"] = write_costs(resume["written"], calls=resume.get("calls"), events=stream.events,
                                    tool_event_times=stream.tool_event_times, started=resume["started"],
                                    prior=files_seen)
    return out
