"""Residency ρ_w (docs/coherence.md, "Residency"): the directed import graph, the window, the
authored neighbourhood of a motif-shaped workspace, and the exclusion of files the agent wrote.

The motif-shaped fixture follows the coupling the ``motifs`` workload authors: per motif m,
``pkg_m/secret.py`` -> ``pkg_m/first.py`` -> ``pkg_m/second.py`` -> ``pkg_m/third.py`` (each file
depends on the one before), the secret required as a literal and never imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdcs_bench.coherence.events import StreamBuilder
from sdcs_bench.coherence.normalise import normalise
from sdcs_bench.coherence.residency import WINDOWS, import_graph, residency

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
SANDBOX = "/specsnap/sandbox"
SRC = {"record": "test", "line": None}


def motif_authored(motifs: int = 8) -> dict[str, list[str]]:
    out = {}
    for m in range(1, motifs + 1):
        out[f"pkg_{m}/first.py"] = [f"pkg_{m}/secret.py"]
        out[f"pkg_{m}/second.py"] = [f"pkg_{m}/first.py"]
        out[f"pkg_{m}/third.py"] = [f"pkg_{m}/second.py"]
    return out


def motif_sources(motifs: int = 8) -> dict[str, str]:
    """The motif files as Python: none imports its secret (the value is a literal)."""
    files = {}
    for m in range(1, motifs + 1):
        files[f"pkg_{m}/__init__.py"] = ""
        files[f"pkg_{m}/first.py"] = "VALUE = 0  # must equal the secret\n"
        files[f"pkg_{m}/second.py"] = f"from pkg_{m}.first import VALUE\nDERIVED = VALUE * 2\n"
        files[f"pkg_{m}/third.py"] = f"from pkg_{m}.second import DERIVED\nFINAL = DERIVED + 1\n"
    return files


def test_the_import_graph_is_directed_and_resolves_what_python_would():
    files = {
        "app/__init__.py": "from .core import run\n",
        "app/core.py": "import os\nfrom app import util\nfrom . import models\n",
        "app/util.py": "def f():\n    from app.sub.deep import g  # function-local\n",
        "app/models.py": "from app import core\nx = (\n",  # does not parse: the fallback reads it
        "app/sub/__init__.py": "",
        "app/sub/deep.py": "from ..models import M\nif True:\n    import app.util\n",
        "src/lib/a.py": "import lib.b\n",
        "src/lib/b.py": "",
    }
    graph = import_graph(files, roots=["src"])
    assert graph["app/core.py"] == {"app/util.py", "app/models.py"}
    assert graph["app/util.py"] == {"app/sub/deep.py"}
    assert graph["app/models.py"] == {"app/core.py"}
    assert graph["app/sub/deep.py"] == {"app/models.py", "app/util.py"}
    assert graph["app/__init__.py"] == {"app/core.py"}
    assert graph["src/lib/a.py"] == {"src/lib/b.py"}
    assert graph["src/lib/b.py"] == set()  # imported by a.py, but an importer is not a dependency


def _stream(actions: list[tuple], agent_written=()):
    """Build a stream from (kind, path) steps, one tool event each."""
    b = StreamBuilder("t/session_1", "test", SANDBOX, agent_written)
    for kind, *rest in actions:
        b.step()
        if kind == "read":
            b.read(rest[0], via="tool", source=SRC)
        elif kind == "edit":
            b.write(rest[0], kind="modify", tool="Edit", source=SRC, result="ok")
        elif kind == "noop":
            pass
        elif kind == "read+edit":  # one tool call that reads then writes (cat a > b)
            b.read(rest[0], via="shell", source=SRC)
            b.write(rest[1], kind="create", tool="Bash", source=SRC, script={"kind": "redirect", "command": "x"})
    return b.finish({}).events


def test_the_window_counts_tool_events_before_the_edit_and_never_after():
    graph = {"m.py": {"a.py", "b.py"}}
    events = _stream([("read", "a.py"), *[("noop",)] * 3, ("read", "b.py"), ("edit", "m.py"), ("read", "a.py")])
    row = residency(events, graph=graph)["edits"][0]
    # the edit is tool event 6: a.py was read 5 tool events before it, b.py 1 before; the later read never counts
    assert row["rho"]["imports"] == {"4": 0.5, "8": 1.0, "16": 1.0, "32": 1.0, "64": 1.0, "128": 1.0}
    same_call = _stream([("read+edit", "a.py", "m.py")])
    assert residency(same_call, graph=graph)["edits"][0]["rho"]["imports"]["4"] == 0.5  # read first, in the same call


def test_no_neighbours_is_full_residency_and_only_python_edits_are_scored():
    events = _stream([("edit", "lonely.py"), ("edit", "notes.md")])
    report = residency(events, graph={"lonely.py": set()})
    assert [r["path"] for r in report["edits"]] == ["lonely.py"]
    assert report["edits"][0]["rho"]["imports"] == {str(w): 1.0 for w in WINDOWS}
    assert report["edits_not_scored"] == 1


def test_residency_is_zero_at_k8_when_the_only_reads_are_of_agent_written_files():
    """k = 8: every secret withheld by deletion. The agent writes each missing secret itself, reads
    it back, then writes the motif's three files, reading each of its own files back before the
    next. Nothing it read was available to it, so every edit's authored residency is 0.0 at every
    window; counting its own writes as reads would report 1.0 (the paper's failure mode)."""
    actions = []
    for m in range(1, 9):
        actions += [("edit", f"pkg_{m}/secret.py"), ("read", f"pkg_{m}/secret.py")]
        for a, b in (("first", None), ("second", "first"), ("third", "second")):
            if b:
                actions.append(("read", f"pkg_{m}/{b}.py"))
            actions.append(("edit", f"pkg_{m}/{a}.py"))
    events = _stream(actions)
    graph = import_graph(motif_sources())
    report = residency(events, graph=graph, authored=motif_authored())
    motif_edits = [r for r in report["edits"] if not r["path"].endswith("secret.py")]
    assert len(motif_edits) == 24
    assert all(r["rho"]["authored"][str(w)] == 0.0 for r in motif_edits for w in WINDOWS)
    assert report["mean"]["authored"] == {str(w): 0.0 for w in WINDOWS}  # the session's score: 0.0
    assert report["edits_scored_by"]["authored"] == 24  # the fabricated secrets are no authored file    assert {r["path"]: r["rho"]["authored"]["8"] for r in motif_edits} == {r["path"]: 0.0 for r in motif_edits}
    naive = residency(events, graph=graph, authored=motif_authored(), exclude_agent_written=False)
    assert naive["mean"]["authored"]["8"] == 1.0
    # the import graph never sees the secret: first.py has no import neighbours at all
    assert all(r["neighbours"]["imports"] == [] for r in motif_edits if r["path"].endswith("first.py"))


def test_at_k0_reading_the_real_secret_is_full_residency():
    actions = []
    for m in range(1, 9):
        actions += [("read", f"pkg_{m}/secret.py"), ("edit", f"pkg_{m}/first.py")]
    report = residency(_stream(actions), graph=import_graph(motif_sources()), authored=motif_authored())
    assert report["mean"]["authored"] == {str(w): 1.0 for w in WINDOWS}


def test_a_file_written_by_an_earlier_session_does_not_count_either():
    events = _stream([("read", "pkg_1/secret.py"), ("edit", "pkg_1/first.py")], agent_written=["pkg_1/secret.py"])
    assert residency(events, graph={}, authored=motif_authored(1))["edits"][0]["rho"]["authored"]["4"] == 0.0


@pytest.mark.parametrize("harness", ["claude_code", "codex", "gemini_cli", "opencode", "mini_swe_agent", "aider"])
def test_residency_of_every_harness_recorded_session_on_tier_2s_import_graph(harness):
    """The recorded ``events`` sessions read ledger/journal.py and ledger/balances.py before creating
    ledger/periods.py (which imports ledger.journal) and editing balances.py (which imports
    ledger.accounts and ledger.journal)."""
    baseline = ROOT / "tiers" / "tier_2" / "baseline"
    sources = {p.relative_to(baseline).as_posix(): p.read_text() for p in baseline.rglob("*.py")}
    sources["ledger/periods.py"] = "from ledger.journal import JournalEntry\n"
    graph = import_graph(sources)
    stream = normalise(harness, FIXTURES / harness / "events", run_id="x", workdir=SANDBOX)
    report = residency(stream.events, graph=graph)
    rows = {r["path"]: r for r in report["edits"]}
    assert rows["ledger/periods.py"]["neighbours"]["imports"] == ["ledger/journal.py"]
    assert rows["ledger/periods.py"]["rho"]["imports"]["8"] == 1.0
    balances = rows["ledger/balances.py"]
    assert balances["neighbours"]["imports"] == ["ledger/accounts.py", "ledger/journal.py"]
    # aider and codex and mini read accounts.py only through sed (codex/mini) or never (aider)
    expected = 0.5 if harness == "aider" else 1.0
    assert balances["rho"]["imports"]["8"] == expected
    assert report["edits_without_path"] == (1 if harness == "aider" else 0)
    json.dumps(report)  # a plain JSON document
