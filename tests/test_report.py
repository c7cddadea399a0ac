"""The static HTML report in a real browser (the system's headless Chromium, driven by Playwright):
the leaderboard filters and sorts, a row opens its trial page, the trial page shows the cleave diff
and the notes at the cutoff, and what an agent wrote is shown as text and never runs."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, missing, specsnap

pytestmark = pytest.mark.pipeline

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SMALL = 'overrides=["agent=[ref_oracle,ref_verbatim_notes]","arm=[Vanilla,State_MD_Only]","variant=[none]","seed=[0]"]'
HOSTILE_TRIAL = "tier_2__State_MD_Only__ref_verbatim_notes__none__s0"
ATTACK = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("report-run")
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
                          "--cores", "2", "--config", "study=smoke", "name=small", SMALL],
                         capture_output=True, text=True, env=os.environ.copy())
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return workdir / "results" / "small"


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        missing("browser", "no chromium binary: install.sh installs Debian's chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("browser", "Playwright for Python is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        chrome = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chrome
        chrome.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    """Where each page's screenshot goes: $SPECSNAP_SCREENSHOTS, else the test's own directory."""
    where = Path(os.environ.get("SPECSNAP_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    where.mkdir(parents=True, exist_ok=True)
    return where


def _page(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(url)
    return page


def _shot(page, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000, path
    print(f"screenshot: {path}")


def test_the_pipeline_writes_the_report_and_the_plots(study):
    report = study / "report"
    assert (report / "index.html").is_file()
    assert sorted(p.name for p in (report / "trials").iterdir()) == sorted(
        f"{t}.html" for t in (line.split("\t")[0] for line in (study / "plan" / "cells.tsv").read_text().splitlines()[1:]))
    for plot in ("net_by_arm", "tokens_vs_net", "requirement_survival"):
        for ext in ("png", "svg"):
            assert (study / "plots" / f"{plot}.{ext}").stat().st_size > 5_000
            assert (report / "plots" / f"{plot}.{ext}").is_file()
    assert not (study / "plots" / "withholding.png").exists()  # this study withholds nothing
    assert "reference policy" in (study / "plots" / "net_by_arm.svg").read_text()
    recorded = json.loads((report / "report.json").read_text())
    drawn = ("net_by_arm", "tokens_vs_net", "requirement_survival",
             *(("resume_cost",) if (study / "plots" / "resume_cost.svg").is_file() else ()))
    assert set(next(iter(recorded.values()))) == {"aggregate.json", "leaderboard.json", "scorecards.csv", *(
        f"plots/{p}.{e}" for p in drawn for e in ("png", "svg"))}


def test_filter_sort_and_open_a_trial_in_the_browser(study, browser, shots):
    page = _page(browser, (study / "report" / "index.html").as_uri())
    _shot(page, shots, "index")
    rows = page.locator("#leaderboard-table tbody tr")
    assert rows.count() == 4
    page.fill("input[data-table=leaderboard-table]", "state_md ref_verbatim")
    visible = page.locator("#leaderboard-table tbody tr:visible")
    assert visible.count() == 1 and "1 shown" in page.inner_text("#leaderboard-count")
    page.fill("input[data-table=leaderboard-table]", "")
    # Sorting by net puts the oracle's and the verbatim notes' State_MD_Only rows (8/8) last, ascending.
    page.click("#leaderboard-table thead th:has-text('net')")
    nets = [float(t) for t in page.locator("#leaderboard-table tbody tr td:nth-child(7)").all_inner_texts()]
    assert nets == sorted(nets) and nets[0] < nets[-1]
    page.click("#leaderboard-table thead th:has-text('net')")
    nets = [float(t) for t in page.locator("#leaderboard-table tbody tr td:nth-child(7)").all_inner_texts()]
    assert nets == sorted(nets, reverse=True)
    page.fill("input[data-table=leaderboard-table]", "state_md ref_verbatim")
    page.locator("#leaderboard-table tbody tr:visible td").first.click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/trials/{HOSTILE_TRIAL}.html"), page.url
    diff = page.locator("section#session_1 pre.diff").inner_text()
    assert "+++ b/ledger/balances.py" in diff and "def top_accounts" in diff
    notes = page.locator("section#session_1 pre.notes[data-path='state.md']").inner_text()
    assert "R-LED-1" in notes  # the notes file as it was at the cutoff
    assert page.locator("#requirements tbody tr").count() == 8
    assert "reference policy" in page.inner_text("body")
    assert page.errors == []
    _shot(page, shots, "trial")
    page.close()


def _poison_trial(run_dir: Path) -> None:
    """Plant markup where an agent could put it: its transcript, its notes file and a source file
    (the session's snapshot), and the diff at the cutoff."""
    s1 = run_dir / "trials" / HOSTILE_TRIAL / "session_1"
    with (s1 / "transcript.jsonl").open("a") as fh:
        fh.write(json.dumps({"turn": 99, "text": ATTACK}) + "\n")
        fh.write(ATTACK + "\n")  # not even JSON
    with (s1 / "events.jsonl").open("a") as fh:  # a path in the normalised events is the agent's too
        fh.write(json.dumps({"event_id": 99, "type": "file_read", "actor": "agent", "payload": {"path": ATTACK}}) + "\n")
    record = json.loads((s1 / "stage.json").read_text())
    record["session"]["cleave"]["diff"] += "+" + ATTACK + "\n"
    (s1 / "stage.json").write_text(json.dumps(record))
    snapshot = s1 / "snapshot.tar.gz"
    with tarfile.open(snapshot) as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    with tarfile.open(snapshot, "w:gz") as tar:
        for member, data in members:
            if member.name.removeprefix("./") == "state.md":
                data += ATTACK.encode()
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
        evil = tarfile.TarInfo(f"{ATTACK}.py")
        evil.size = len(ATTACK)
        tar.addfile(evil, io.BytesIO(ATTACK.encode()))


def test_what_an_agent_wrote_is_shown_as_text_and_runs_nothing(study, browser, shots, tmp_path):
    copy = tmp_path / "hostile"
    shutil.copytree(study, copy)
    _poison_trial(copy)
    result = specsnap("report", "--study-dir", str(copy))
    assert result.returncode == 0, result.stderr
    html = (copy / "report" / "trials" / f"{HOSTILE_TRIAL}.html").read_text()
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned" in html
    assert "<img src=x" not in html and html.count("&lt;img src=x onerror=") >= 5
    page = _page(browser, (copy / "report" / "trials" / f"{HOSTILE_TRIAL}.html").as_uri())
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.scripts.length") == 0
    text = page.inner_text("body")
    assert text.count("<script>window.__pwned = 1</script>") >= 3  # transcript (twice) and the diff
    assert "state.md" in text and ATTACK in page.locator("section#session_1 pre.notes[data-path='state.md']").inner_text()
    listed = page.locator("section#session_1 details summary code").all_inner_texts()
    assert f"{ATTACK}.py" in listed and "state.md" in listed
    assert not [p for p in listed if p.startswith((".git/", "git/"))]  # the repository's own store is left out
    _shot(page, shots, "hostile-trial")
    page.close()
    index = _page(browser, (copy / "report" / "index.html").as_uri())
    assert index.evaluate("typeof window.__pwned") == "undefined" and index.errors == []
    index.close()


def test_large_transcripts_are_cut_on_the_page_and_linked_whole(study, tmp_path):
    copy = tmp_path / "large"
    shutil.copytree(study, copy)
    transcript = copy / "trials" / HOSTILE_TRIAL / "session_2" / "transcript.jsonl"
    with transcript.open("a") as fh:
        for i in range(20_000):
            fh.write(json.dumps({"turn": i, "text": "x" * 200}) + "\n")
    assert specsnap("report", "--run-dir", str(copy)).returncode == 0
    page = (copy / "report" / "trials" / f"{HOSTILE_TRIAL}.html")
    assert page.stat().st_size < 2 * 1024 * 1024 < transcript.stat().st_size * 0.5
    html = page.read_text()
    assert f'href="../../trials/{HOSTILE_TRIAL}/session_2/transcript.jsonl"' in html and "Shown up to" in html
    # Each trial's data is on its own page: the index carries none of it.
    assert "x" * 200 not in (copy / "report" / "index.html").read_text()


def test_report_refuses_a_directory_with_no_aggregate(tmp_path):
    result = specsnap("report", "--run-dir", str(tmp_path / "nothing"))
    assert result.returncode == 2 and "no aggregated study here" in result.stderr
    assert not (tmp_path / "nothing").exists()


def test_a_poisoned_trial_page_shows_what_was_injected_between_sessions(tmp_path):
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
                          "--cores", "2", "--config", "study=poison", "name=pp",
                          'overrides=["agent=[ref_hash_check]","arm=[Gate_I]","variant=[poison_v3]"]'],
                         capture_output=True, text=True, env=os.environ.copy())
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    (page,) = (tmp_path / "results" / "pp" / "report" / "trials").glob("*.html")
    html = page.read_text()
    assert "Injection between sessions" in html and "billing/tax.py" in html and "forbidden_import" in html


def test_hostile_records_neither_break_the_report_nor_blow_up_a_page(study, tmp_path):
    """A file name that is not UTF-8, a transcript record nested 5,000 deep, a 3 MB diff at the cutoff
    and a corrupt snapshot: the report is still written, each page bounded."""
    copy = tmp_path / "hostile"
    shutil.copytree(study, copy)
    s1 = copy / "trials" / HOSTILE_TRIAL / "session_1"
    with tarfile.open(s1 / "snapshot.tar.gz") as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    with tarfile.open(s1 / "snapshot.tar.gz", "w:gz", encoding="utf-8", errors="surrogateescape") as tar:
        for member, data in members:
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
        odd = tarfile.TarInfo(b"\xff<b>odd.txt".decode("utf-8", "surrogateescape"))
        odd.size = 3
        tar.addfile(odd, io.BytesIO(b"odd"))
    with (s1 / "transcript.jsonl").open("a") as fh:
        fh.write("[" * 5000 + "]" * 5000 + "\n")   # deeper than the JSON parser's recursion
        fh.write(json.dumps(json.loads("[" * 400 + "1" + "]" * 400)) + "\n")  # parses, but indents badly
    record = json.loads((s1 / "stage.json").read_text())
    record["session"]["cleave"]["diff"] += "+" + "x" * 3_000_000 + "\n"
    (s1 / "stage.json").write_text(json.dumps(record))
    (copy / "trials" / HOSTILE_TRIAL / "session_2" / "snapshot.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    result = specsnap("report", "--run-dir", str(copy))
    assert result.returncode == 0, result.stderr
    page = copy / "report" / "trials" / f"{HOSTILE_TRIAL}.html"
    html = page.read_text()
    assert page.stat().st_size < 3 * 1024 * 1024
    assert "\ufffd&lt;b&gt;odd.txt" in html  # the name shown, its byte that is not UTF-8 replaced
    assert "cut at 65536 of" in html and 'href="../../trials/' in html
    assert "The snapshot could not be read" in html


def test_a_rerun_of_the_report_leaves_nothing_stale(study, tmp_path):
    copy = tmp_path / "again"
    shutil.copytree(study, copy)
    (copy / "report" / "trials" / "gone.html").write_text("old")
    (copy / "report" / "plots" / "gone.svg").write_text("<svg/>")
    assert specsnap("report", "--run-dir", str(copy)).returncode == 0
    assert not (copy / "report" / "trials" / "gone.html").exists()
    assert "gone.svg" not in (copy / "report" / "index.html").read_text()
    recorded = next(iter(json.loads((copy / "report" / "report.json").read_text()).values()))
    assert "plots/net_by_arm.svg" in recorded  # the plots are among the report's recorded inputs


def test_trial_pages_written_side_by_side_are_the_pages_written_one_by_one(study, tmp_path):
    """The report job writes its trial pages in forked workers when it has two threads (the rule
    asks for them): the same files as one by one, and every trial has its page."""
    pages = {}
    copy = tmp_path / "run"
    for threads in ("1", "2"):
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(study, copy)
        shutil.rmtree(copy / "report")
        done = specsnap("report", "--run-dir", str(copy), env={**os.environ, "OMP_NUM_THREADS": threads})
        assert done.returncode == 0, done.stderr
        pages[threads] = {p.name: p.read_bytes() for p in (copy / "report" / "trials").glob("*.html")}
    trials = {p.stem for p in (study / "plan" / "trials").glob("*.json")}
    assert {name.removesuffix(".html") for name in pages["1"]} == trials
    assert pages["1"] == pages["2"]


@pytest.mark.slow
def test_a_pair_of_a_reference_policy_and_a_replay_is_told_as_both_everywhere(tmp_path, browser):
    """Who did what (issue: handoffs told truthfully): each session's agent, harness and model in ledger.csv
    and on the trial page's timeline, the pair on the leaderboard, the index's trial table and the page's
    header, labelled as both kinds; a turn cut names its call, never a path it does not have."""
    import pandas as pd

    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
                          "--cores", "2", "--config", "study=smoke", "name=pair",
                          'overrides=["agent=[ref_amnesiac]","successor=[replay_codex]","arm=[Vanilla]",'
                          '"variant=[cut_turns_1]","seed=[0]","continuation=[\\"trace:4000\\"]"]'],
                         capture_output=True, text=True, env=os.environ.copy())
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    where = tmp_path / "results" / "pair"
    ledger = pd.read_csv(where / "ledger.csv").set_index("session")
    assert ledger.loc["S1", ["agent", "agent_kind", "harness"]].tolist() == ["ref_amnesiac", "reference policy", "reference"]
    assert ledger.loc["S2", ["agent", "agent_kind", "harness"]].tolist() == ["replay_codex", "replay (scripted, no model)",
                                                                           "codex"]
    board = pd.read_csv(where / "leaderboard.csv")
    assert board.loc[0, "source"] == "reference policy, then replay (codex, scripted, no model)"
    assert board.loc[0, "successor_harness"] == "codex" and board.loc[0, "harness"] == "reference"
    (page_file,) = (where / "report" / "trials").glob("*.html")
    page = _page(browser, page_file.as_uri())
    header = page.locator("table").first.inner_text()
    assert "every later session: replay_codex, harness codex" in header and "then replay (codex" in header
    timeline = page.locator("#timeline ~ table").first.inner_text()
    assert "ref_amnesiac" in timeline and "replay_codex" in timeline and "codex" in timeline
    assert "on None" not in page.content() and "at call 1" in timeline
    assert "Some of its sessions ran a built-in reference policy" in page.content()
    index = _page(browser, (where / "report" / "index.html").as_uri())
    assert "reference policy, then replay (codex, scripted, no model)" in index.locator("#trials ~ table, #trials ~ div table").first.inner_text()
    assert not page.errors and not index.errors
