"""The CLI: every verb of this issue, and bad input -> one clear message, exit 2, nothing written."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, specsnap

from sdcs_bench.trial import config


@pytest.mark.parametrize("what,expect", [("workloads", "tier_2"), ("arms", "State_MD_Only"),
                                          ("agents", "reference policy"), ("variants", "uninterrupted"),
                                          ("studies", "smoke")])
def test_list(what, expect):
    result = specsnap("list", what)
    assert result.returncode == 0 and expect in result.stdout


@pytest.mark.parametrize("what,row", [
    ("arms", ["State_MD_Only", "state.md", "A state.md scratchpad"]), ("arms", ["Vanilla", "-"]),
    ("workloads", ["tier_2", "synthetic", "Tier 2"]), ("workloads", ["click", "real_repo", "pallets/click"]),
    ("agents", ["ref_oracle", "reference policy"]), ("studies", ["smoke", "36"]),
])
def test_every_list_names_its_second_column_and_describes_each_entry(what, row):
    """No empty, unnamed column: each list's second column says something of its own (an agent's
    kind, a workload's family, an arm's notes file, what a variant sets, a study's trial count)."""
    out = specsnap("list", what, env={"COLUMNS": "400"}).stdout
    header = next(line for line in out.splitlines() if "name" in line and "description" in line)
    assert [c.strip() for c in header.strip("┃│ ").split("┃") if c.strip()][1] != "", header
    line = next(line for line in out.splitlines() if line.strip("│ ").startswith(row[0] + " "))
    cells = [c.strip() for c in line.strip().strip("│").split("│")]
    assert cells[1] == row[1] and (len(row) < 3 or cells[2].startswith(row[2])), cells


def test_list_alone_says_what_can_be_listed():
    """`specsnap list` with no argument is no usage error: each thing it can list, one line each
    with what it lists, exit status 0."""
    result = specsnap("list", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("  ")}
    assert set(lines) >= {"workloads", "arms", "agents", "variants", "studies", "modes"}, result.stdout
    assert all(len(line.split()) > 2 for line in lines.values())  # each says what it lists
    assert "continuation" in lines["modes"] and "specsnap list <what>" in result.stdout


@pytest.mark.parametrize("what", ["modes", "continuations"])
def test_list_modes_names_what_the_next_session_gets_and_which_harnesses_can(what):
    out = specsnap("list", what, env={"COLUMNS": "400"})
    assert out.returncode == 0, out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if line.startswith("│ ") and cells[0]:
            rows[cells[0]] = cells
    assert list(rows) == ["reset", "trace:<budget>", "summary", "notes", "resume", "compact", "<mode>_or_<fallback>"], rows
    assert "native_or_trace:4000" in rows["<mode>_or_<fallback>"][1] and "fallback" in rows["<mode>_or_<fallback>"][2]
    assert rows["reset"][2].startswith("every harness")
    resume, compact = rows["resume"][2], rows["compact"][2]
    assert all(h in resume for h in ("claude_code", "codex", "gemini_cli")) and "aider" not in resume
    assert "claude_code" in compact and "codex" not in compact and "gemini_cli" not in compact
    assert "summary" in rows["summary"][1].lower() and "budget" in rows["trace:<budget>"][1]
    assert "schema" in rows["notes"][1] and rows["notes"][2].startswith("every harness")


def test_a_sandbox_inside_another_is_refused(tmp_path):
    outer = tmp_path / "outer"
    assert specsnap("scaffold-sandbox", "--tier", "2", "--arm", "Vanilla", "--dest", str(outer)).returncode == 0
    inner = specsnap("scaffold-sandbox", "--tier", "2", "--arm", "Vanilla", "--dest", str(outer / "ledger" / "inner"))
    assert inner.returncode == 2 and "lies inside the sandbox" in inner.stderr and inner.stderr.count("\n") == 1
    assert not (outer / "ledger" / "inner").exists()


def test_console_script_and_module_are_the_same_cli():
    script = subprocess.run([str(Path(sys.executable).with_name("specsnap")), "list", "arms"], capture_output=True, text=True)
    assert script.returncode == 0 and script.stdout == specsnap("list", "arms").stdout


def test_scaffold_sandbox(tmp_path):
    dest = tmp_path / "t2"
    result = specsnap("scaffold-sandbox", "--tier", "2", "--arm", "State_MD_Only", "--dest", str(dest))
    assert result.returncode == 0, result.stderr
    assert (dest / "state.md").is_file() and (dest / "AGENTS.md").is_file() and (dest / "wiring.yaml").is_file()
    meta = json.loads((dest / ".git" / "specsnap" / "sandbox.json").read_text())
    assert meta["workload"] == "tier_2" and meta["arm"] == "State_MD_Only" and "ledger/balances.py" in meta["manifest"]
    log = subprocess.run(["git", "log", "--oneline"], cwd=dest, capture_output=True, text=True).stdout.splitlines()
    assert len(log) == 1
    assert not subprocess.run(["git", "status", "--porcelain"], cwd=dest, capture_output=True, text=True).stdout
    assert (dest / ".git" / "hooks" / "reference-transaction").stat().st_mode & 0o111
    assert not any(p.name == "hidden" or p.name == "gold" for p in dest.rglob("*"))


@pytest.mark.parametrize(
    "args,message",
    [
        (["--tier", "2", "--arm", "Nope"], "unknown arm 'Nope'; valid choices: AGENTS_MD_Only, Gate_I, Repo_Backlog, Repo_Hinted, State_MD_InPlace_Rule"),
        (["--tier", "7", "--arm", "Vanilla"], "unknown workload 'tier_7'; valid choices: click, humanize, isort, markdown, "
                                              "more_itertools, motifs_s0, motifs_s2, packaging, semver, standards, tabulate, "
                                              "tier_1, tier_2, tier_3, tier_4"),
        (["--workload", "tier_2a_fintech", "--tier", "2", "--arm", "Vanilla"], "either --tier or --workload"),
        (["--tier", "2"], "--arm is required"),
    ],
)
def test_scaffold_bad_input_writes_nothing(tmp_path, args, message):
    dest = tmp_path / "never"
    result = specsnap("scaffold-sandbox", *args, "--dest", str(dest))
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1  # one line, no traceback
    assert not dest.exists()


def test_scaffold_refuses_a_non_empty_destination(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    result = specsnap("scaffold-sandbox", "--tier", "2", "--arm", "Vanilla", "--dest", str(tmp_path))
    assert result.returncode == 2 and "not an empty directory" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_workload_alias(tmp_path):
    result = specsnap("scaffold-sandbox", "--workload", "tier_2a_fintech", "--arm", "Vanilla", "--dest", str(tmp_path / "s"))
    assert result.returncode == 0


def test_plan_writes_cells_and_is_idempotent(tmp_path):
    result = specsnap("plan", "--study", "smoke", "--results", str(tmp_path))
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "smoke" / "plan" / "cells.tsv") as fh:
        cells = list(csv.DictReader(fh, delimiter="\t"))
    assert len(cells) == 36 and all(c["reference"] == "true" for c in cells)
    assert {c["stages"] for c in cells} == {"scaffold,session_1,session_2,score"}
    assert {c["seed"] for c in cells} == {"0", "1"}
    one = tmp_path / "smoke" / "plan" / "trials" / f"{cells[0]['trial']}.json"
    mtime = one.stat().st_mtime_ns
    again = specsnap("plan", "--study", "smoke", "--results", str(tmp_path))
    assert "0 changed" in again.stderr and one.stat().st_mtime_ns == mtime
    narrowed = specsnap("plan", "--results", str(tmp_path), "--override", "agent=[ref_oracle,ref_null]",
                        "--override", "arm=Vanilla")
    assert narrowed.returncode == 0 and "4 trials planned" in narrowed.stderr and "smoke+" in narrowed.stderr
    assert one.exists() and one.stat().st_mtime_ns == mtime  # the study's own plan is not touched


@pytest.mark.parametrize(
    "args,message",
    [
        (["--study", "huge"], "unknown study 'huge'; valid choices: " + ", ".join(config.options("study"))),
        (["--override", "agent=[ref_oracle,gpt_9]"], "unknown agent 'gpt_9'; valid choices: "),
        (["--override", "variant=poison_v9"], "unknown variant 'poison_v9'; valid choices: conflicts_10, conflicts_4, cut_nth_1, cut_nth_2, cut_nth_3, cut_nth_5, cut_nth_8, cut_share_25, cut_share_50, cut_share_75, cut_tokens_1000, cut_tokens_2000, cut_tokens_4000, cut_tokens_8000, cut_turns_1, cut_turns_2, cut_turns_4, cut_turns_8, none, poison_v1, poison_v2, poison_v3, polarity_inverted, polarity_normal, standard_correct, standard_none, standard_stale, uninterrupted"),
        (["--override", "sandbox.backend=vm"], "unknown sandbox backend 'vm'; valid choices: auto, bwrap, docker, local"),
    ],
)
def test_plan_bad_input_writes_nothing(tmp_path, args, message):
    result = specsnap("plan", "--results", str(tmp_path), *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not any(tmp_path.iterdir())


def test_leaderboard_formats_label_published_numbers(tmp_path):
    # No local run: no family to compare with, so the published tables are one option away, said so.
    bare = specsnap("leaderboard", "--format", "markdown", "--results", str(tmp_path))
    assert bare.returncode == 0 and "No local results" in bare.stdout and "--published" in bare.stdout
    assert "PUBLISHED (recorded by the source studies" not in bare.stdout
    md = specsnap("leaderboard", "--format", "markdown", "--published", "--results", str(tmp_path))
    assert md.returncode == 0 and "PUBLISHED (recorded by the source studies" in md.stdout
    assert "No local results" in md.stdout
    # The coherence-debt study's figures that this checkout reproduces, each beside its local value.
    assert "| figure | published | local (computed now by this checkout) |" in md.stdout
    for row in ("| runs | 1089 | 1089 |", "| fully_covered | 124 | 124 |", "| event_only_false_alarms | 119 | 119 |",
                "| all_read | 5 | 5 |"):
        assert row in md.stdout
    assert "Standards workload (coherence-debt study)" in md.stdout and "Coherence debt: direct withholding" in md.stdout
    data = json.loads(specsnap("leaderboard", "--format", "json", "--results", str(tmp_path)).stdout)
    assert data["published"]["label"].startswith("PUBLISHED") and data["local"]["rows"] == []
    table = specsnap("leaderboard", "--format", "table", "--published", "--results", str(tmp_path))
    assert table.returncode == 0 and "PUBLISHED" in table.stdout
    bare = specsnap("leaderboard", "--format", "table", "--results", str(tmp_path))
    assert bare.returncode == 0 and "PUBLISHED" not in bare.stdout and "--published" in bare.stdout
    bad = specsnap("leaderboard", "--format", "html")
    assert bad.returncode == 2 and "table" in bad.stderr and "markdown" in bad.stderr


def test_dvc_pipeline_is_declared():
    result = subprocess.run([sys.executable, "-m", "dvc", "stage", "list"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("smoke")


@pytest.mark.parametrize("agent,var", [("claude_code_sonnet", "ANTHROPIC_API_KEY"), ("codex_gpt5", "OPENAI_API_KEY"),
                                       ("gemini_cli_pro", "GEMINI_API_KEY")])
def test_plan_refuses_a_real_agent_without_its_key(tmp_path, agent, var):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run([sys.executable, "-m", "sdcs_bench.cli", "plan", "--results", str(tmp_path),
                             "--override", f"agent=[ref_oracle,{agent}]"], capture_output=True, text=True, env=env,
                            cwd=ROOT)
    assert result.returncode == 2, result.stderr
    assert f"needs its API key in the environment variable {var}" in result.stderr
    assert not any(tmp_path.iterdir())


def test_replay_agents_are_labelled_in_the_agent_list():
    out = specsnap("list", "agents", env={"COLUMNS": "250"}).stdout
    assert "replay (scripted, no model)" in out and "reference policy" in out


def _in_a_terminal(*args: str, cwd: Path) -> str:
    """Run specsnap with its output on a pseudo-terminal (as a user at a shell sees it)."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-m", "sdcs_bench.cli", *args], cwd=cwd, stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=300) == 0, out.decode(errors="replace")[-3000:]
    return out.decode(errors="replace")


def test_long_cli_work_shows_progress_on_a_terminal_and_plain_lines_elsewhere(tmp_path):
    shown = _in_a_terminal("plan", "--study", "smoke", "--results", str(tmp_path / "tty"), cwd=ROOT)
    assert "writing 36 trial files" in shown and "36/36" in shown and "composing study smoke" in shown
    piped = specsnap("plan", "--study", "smoke", "--results", str(tmp_path / "pipe"))
    assert piped.returncode == 0 and "36/36" not in piped.stderr and "\x1b[" not in piped.stderr
    assert "36 trials planned" in piped.stderr


def _by_hand_sandbox(tmp_path: Path) -> Path:
    """A sandbox a person worked in by hand: scaffolded, then two requirements' gold applied."""
    from conftest import apply_patch

    from sdcs_bench.trial.workload import load_workload

    dest = tmp_path / "mine"
    assert specsnap("scaffold-sandbox", "--tier", "2", "--arm", "State_MD_Only", "--dest", str(dest)).returncode == 0
    for req in load_workload("tier_2").requirements[:2]:
        apply_patch(dest, req.gold)
    return dest


def test_a_by_hand_trial_recorded_into_a_run_is_on_its_leaderboard_and_report_labelled(tmp_path):
    """evaluate-sandbox --run records the trial into the run (made if new) with its agent, model,
    harness, variant and reported tokens; the run's leaderboard and report show it, labelled by
    hand, and a second recording is a second trial of the same cell."""
    sandbox, results = _by_hand_sandbox(tmp_path), tmp_path / "results"
    argv = ["evaluate-sandbox", "--tier", "2", "--sandbox", str(sandbox), "--tokens", "12345", "--results", str(results),
            "--run", "handrun", "--agent", "my_agent", "--model", "some-model", "--harness", "my-cli"]
    first = specsnap(*argv)
    assert first.returncode == 0, first.stderr
    assert specsnap(*argv).returncode == 0
    rows = json.loads((results / "handrun" / "leaderboard.json").read_text())["rows"]
    (row,) = rows
    assert (row["agent"], row["agent_kind"], row["arm"], row["trials"], row["net"], row["tokens"]) == \
        ("my_agent", "by hand", "State_MD_Only", 2, 2, 12345)
    shown = specsnap("leaderboard", "--results", str(results), "--run", "handrun", "--format", "markdown")
    assert shown.returncode == 0 and "by hand: some-model via my-cli (tokens as reported)" in shown.stdout, shown.stdout
    trials = sorted(p.name for p in (results / "handrun" / "report" / "trials").glob("*.html"))
    assert trials == ["tier_2__State_MD_Only__my_agent__none__s0-by-hand1.html",
                      "tier_2__State_MD_Only__my_agent__none__s0-by-hand2.html"]
    assert "by hand: some-model via my-cli" in (results / "handrun" / "report" / "index.html").read_text()


def test_by_hand_labels_without_a_run_are_refused(tmp_path):
    sandbox = _by_hand_sandbox(tmp_path)
    result = specsnap("evaluate-sandbox", "--tier", "2", "--sandbox", str(sandbox), "--agent", "x")
    assert result.returncode == 2 and "give --run NAME" in result.stderr
    result = specsnap("evaluate-sandbox", "--tier", "2", "--sandbox", str(sandbox), "--run", "r")
    assert result.returncode == 2 and "--run needs --agent" in result.stderr


@pytest.mark.pipeline
def test_a_by_hand_trial_joins_a_pipeline_run_beside_its_trials(clone, tmp_path):
    """Recorded into the run a study wrote: the leaderboard and report show both, each labelled."""
    results = tmp_path / "results"
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--config", "study=mine",
                          f"results={results}"], cwd=clone, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    sandbox = _by_hand_sandbox(tmp_path)
    recorded = specsnap("--root", str(clone), "evaluate-sandbox", "--tier", "2", "--sandbox", str(sandbox),
                        "--tokens", "99", "--results", str(results), "--run", "mine", "--agent", "my_agent",
                        "--model", "m1", "--harness", "h1", cwd=clone)
    assert recorded.returncode == 0, recorded.stderr
    rows = {r["agent"]: r for r in json.loads((results / "mine" / "leaderboard.json").read_text())["rows"]}
    assert rows["ref_null"]["source"] == "reference policy" and rows["ref_null"]["arm"] == "Vanilla"
    assert rows["my_agent"]["source"] == "by hand: m1 via h1 (tokens as reported)" and rows["my_agent"]["net"] == 2
    table = specsnap("--root", str(clone), "leaderboard", "--results", str(results), "--run", "mine", cwd=clone,
                     env={"COLUMNS": "80"})
    assert "by hand" in table.stdout and "reference policy" in table.stdout, table.stdout
    pages = {p.name for p in (results / "mine" / "report" / "trials").glob("*.html")}
    assert "tier_2__Vanilla__ref_null__none__s0.html" in pages and any("by-hand" in p for p in pages)
