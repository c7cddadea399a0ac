"""A pipeline run's start-up (sdcs_bench.pipeline.startup): the one call the Snakefile makes, whether
an invocation runs jobs (the dry-run detection, over real `snakemake` command lines and real runs),
and the rule files kept pure and formatted (`snakefmt --check`)."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT

from sdcs_bench.pipeline import startup
from sdcs_bench.pipeline.plan import CELLS_VAR, pack_cells, read_cells
from sdcs_bench.pipeline.startup import (
    NO_JOB_OPTIONS,
    command_line_runs_no_job,
    runs_no_job,
    snakemake_argv,
    start_run,
)

SMALL = ['agent=[ref_oracle]', 'arm=[Vanilla]', 'seed=[0]']  # one trial of the smoke study

# ---------------------------------------------------------------------------------------------
# Whether an invocation runs jobs


NO_JOB = [
    "-n", "--dry-run", "--dryrun", "--dry-ru",  # (an abbreviation Snakemake's parser takes)
    "-np", "-pn", "-nj4", "-pnq", "--cores 2 -n", "-n --cores 2 --config study=smoke name=x",
    "--forceall -n", "--profile workflow/profiles/slurm -n", "-n --delete-all-output",
    "-S", "--summary", "-D", "--detailed-summary", "-pS",
    "--dag", "--dag mermaid-js", "--rulegraph", "--rulegraph dot", "--filegraph", "--d3dag",
    "--unlock", "--cores 2 --unlock",
    "--list-rules", "--list", "-l", "--list-target-rules", "--lt",
    "--list-changes code", "--lc input", "--list-input-changes", "--li", "--list-params-changes", "--lp",
    "--list-untracked", "--lu",
    "--lint", "--lint json", "--print-compilation", "--containerize", "--generate-unit-tests",
    "--cleanup-metadata results/smoke/leaderboard.md", "--cm results/smoke/leaderboard.md", "--cleanup-shadow",
    "--archive wf.tar.gz", "--delete-all-output", "--delete-temp-output",
    "--conda-create-envs-only", "--conda-cleanup-envs", "--list-conda-envs", "--container-cleanup-images",
    "--report", "--report report.html", "--reporter html",
]

RUNS = [
    "", "--cores 2", "-c2", "-c 2", "-j 4", "-pj4", "--cores 2 --config study=smoke name=n",
    "--cores 2 --config name=dry-run", "--cores 1 --until summary",  # (values, not options)
    "--cores 1 --omit-from scaffold", "-p --cores 1 --forceall", "--cores 1 -k --rerun-incomplete",
    "--profile workflow/profiles/slurm", "--cores 1 results/smoke/leaderboard.md",
    "--cores 1 --report report.html --report-after-run",
    "--touch",  # (it marks outputs as made: a run in all but the running, as before)
    "--cores 1 --nolock", "--cores 1 --notemp",  # (prefixes of nothing that runs no job)
]


@pytest.mark.parametrize("line", NO_JOB)
def test_a_command_line_that_runs_no_job_is_known(line):
    assert command_line_runs_no_job(line.split())


@pytest.mark.parametrize("line", RUNS)
def test_a_command_line_that_runs_jobs_is_a_run(line):
    assert not command_line_runs_no_job(line.split())


def test_a_command_line_snakemake_cannot_read_counts_as_a_run(capsys):
    assert not command_line_runs_no_job(["--dag", "pdf"])  # (Snakemake 9 draws dot or mermaid-js only)
    assert not command_line_runs_no_job(["--dry"])  # ambiguous: --dry-run or --dryrun
    assert capsys.readouterr() == ("", "")  # (the parser's complaint is not printed)


def test_every_no_job_option_is_one_of_snakemakes():
    """A Snakemake that renamed an option would silently make it a run again: each destination is
    one its parser has, unset by default."""
    parsed, _ = startup._snakemake_parser().parse_known_args([])
    for dest in (*NO_JOB_OPTIONS, "report", "reporter", "report_after_run"):
        assert hasattr(parsed, dest), dest
        assert getattr(parsed, dest) in (None, False), dest


@pytest.mark.parametrize("argv,args", [
    (["/usr/local/bin/snakemake", "-n", "--cores", "2"], ["-n", "--cores", "2"]),
    ([str(Path(sys.prefix) / "lib" / "site-packages" / "snakemake" / "__main__.py"), "-S"], ["-S"]),  # python -m
    (["snakemake"], []),
    (["/usr/bin/pytest", "-n", "4"], None),  # (Snakemake started through its API from another program)
    (["-c"], None),
    ([], None),
])
def test_only_the_snakemake_command_line_is_read(argv, args):
    assert snakemake_argv(argv) == args


def _workflow(dryrun: bool | None = False, main: bool = True, storage: str | None = None) -> SimpleNamespace:
    """What start-up reads of Snakemake's ``workflow`` object."""
    return SimpleNamespace(
        main_snakefile=str(ROOT / "Snakefile"), is_main_process=main,
        storage_settings=SimpleNamespace(default_storage_provider=storage),
        output_settings=None if dryrun is None else SimpleNamespace(dryrun=dryrun),
    )


def test_the_dry_run_setting_comes_first_then_the_command_line():
    # Snakemake's own setting (from -n or a profile's dry-run: true) wins whatever the command line says
    assert runs_no_job(_workflow(dryrun=True), ["snakemake", "--cores", "2"])
    assert runs_no_job(_workflow(dryrun=True), ["my-launcher"])
    # what Snakemake decides only after the Snakefile is read, from its command line
    assert runs_no_job(_workflow(dryrun=False), ["snakemake", "--summary"])
    assert runs_no_job(_workflow(dryrun=None), ["snakemake", "-n"])
    assert not runs_no_job(_workflow(dryrun=False), ["snakemake", "--cores", "2"])
    # another program's command line is not Snakemake's: `pytest -n 4` is no dry run
    assert not runs_no_job(_workflow(dryrun=False), ["pytest", "-n", "4"])


# ---------------------------------------------------------------------------------------------
# start_run: the one call


@pytest.fixture
def clean_process(monkeypatch):
    """Start-up sets this process's project, collector thresholds and (in storage) the cells
    variable: put them back afterwards."""
    thresholds = gc.get_threshold()
    monkeypatch.setenv("SPECSNAP_ROOT", str(ROOT))
    monkeypatch.delenv(CELLS_VAR, raising=False)
    yield
    gc.set_threshold(*thresholds)


def _config(results: Path, **extra) -> dict:
    return {"study": "smoke", "overrides": list(SMALL), "results": str(results), "name": "tiny", **extra}


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """A run planned by start-up in the main process, as a dry run: (results, its Run)."""
    results = tmp_path_factory.mktemp("startup") / "results"
    thresholds = gc.get_threshold()
    old_root = os.environ.get("SPECSNAP_ROOT")
    try:
        run = start_run(_workflow(dryrun=True), _config(results), argv=["snakemake", "-n"])
    finally:
        gc.set_threshold(*thresholds)
        if old_root is None:
            os.environ.pop("SPECSNAP_ROOT", None)
        else:
            os.environ["SPECSNAP_ROOT"] = old_root
    return results, run


def test_start_up_plans_the_run_and_returns_what_the_rules_need(planned):
    results, run = planned
    assert (run.root, run.study, run.results, run.name) == (ROOT, "smoke", str(results), "tiny")
    assert run.dir == f"{results}/tiny" and run.layout.run_dir == run.dir and run.cache.results == str(results)
    assert run.subset is None and not run.in_storage
    cells = read_cells(Path(run.layout.cells))
    assert list(run.cells) == [row["trial"] for row in cells] and len(run.cells) == 1
    assert run.shell_prefix == f'export PATH="{Path(sys.executable).parent}:$PATH" SPECSNAP_ROOT="{ROOT}"; '
    # a study of reference policies: no repository, no image, no model's API
    assert (run.source_plans, run.env_plans, run.images, run.image_digests, run.image_needs) == ({}, {}, [], [], {})
    assert not run.calls_api
    # a dry run writes the plan but no budget
    assert Path(run.layout.plan_dir, "study.json").is_file()
    assert not (results / "tiny" / "budget").exists()


def test_start_up_fills_the_config_with_the_schemas_defaults(planned, clean_process):
    config = {"overrides": list(SMALL), "results": str(planned[0]), "name": "tiny"}
    start_run(_workflow(dryrun=True), config, argv=["snakemake", "-n"])
    assert (config["study"], config["rerun_share"], config["budget_max_usd"]) == ("smoke", 0.25, None)
    assert gc.get_threshold() == startup.GC_THRESHOLDS


def test_a_run_compiles_the_package_and_sets_its_budget(tmp_path, clean_process, monkeypatch):
    results = tmp_path / "results"
    compiled = []
    monkeypatch.setattr("sdcs_bench.core.bytecode.compile_package", lambda: compiled.append(1) or True)
    start_run(_workflow(dryrun=False), _config(results), argv=["snakemake", "--summary"])
    assert not compiled and not (results / "tiny" / "budget").exists()  # (--summary runs no job)
    start_run(_workflow(dryrun=False), _config(results, budget_max_usd=5), argv=["snakemake", "--cores", "2"])
    assert compiled == [1]
    assert json.loads((results / "tiny" / "budget" / "budget.json").read_text())["max_usd"] == 5


def test_a_job_process_only_reads_the_plan(planned, clean_process, monkeypatch):
    results, run = planned
    monkeypatch.setattr(startup, "ensure_plan", lambda *a, **k: pytest.fail("a job planned"))
    job = start_run(_workflow(main=False), _config(results), argv=["snakemake", "--mode", "subprocess"])
    assert job.cells == run.cells


def test_without_a_shared_file_system_the_cells_table_travels_in_the_environment(planned, clean_process, capsys):
    results, run = planned
    # a job not started by a SpecSnap run: one line
    with pytest.raises(SystemExit) as stopped:
        start_run(_workflow(main=False, storage="s3"), _config(results), argv=["snakemake"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == f"specsnap: error: {CELLS_VAR} is not set: this job was not started by a SpecSnap run\n"
    # the main process hands it over; a job reads it (the plan's file is not there on a node)
    os.environ[CELLS_VAR] = "stale"
    main = start_run(_workflow(dryrun=True, storage="s3"), _config(results), argv=["snakemake", "-n"])
    assert main.in_storage and os.environ[CELLS_VAR] == pack_cells(Path(run.layout.cells))
    moved = results.parent / "moved"
    Path(run.layout.cells).rename(moved)
    try:
        job = start_run(_workflow(main=False, storage="s3"), _config(results), argv=["snakemake"])
    finally:
        moved.rename(run.layout.cells)
    assert job.cells == run.cells


@pytest.mark.parametrize("config,message", [
    ({"stduy": "smoke"}, "specsnap: error: unknown --config key 'stduy'; valid choices: "),
    ({"overrides": "arm=Vanilla"}, "specsnap: error: --config overrides is a list of Hydra overrides"),
    ({"name": "../elsewhere"}, "specsnap: error: run name '../elsewhere' must be letters, digits"),
    ({"rerun_of": "smoke", "rerun_share": 2}, "specsnap: error: rerun_share=2.0: the share of the run's cells"),
    ({"study": "nope"}, "specsnap: error: unknown study 'nope'"),
])
def test_bad_input_stops_start_up_in_one_line(tmp_path, clean_process, capsys, config, message):
    with pytest.raises(SystemExit) as stopped:
        start_run(_workflow(dryrun=True), {"results": str(tmp_path / "results"), **config}, argv=["snakemake", "-n"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------------------------------------
# Through Snakemake


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), *args,
         "--config", "overrides=[" + ",".join(f'"{o}"' for o in SMALL) + "]", "name=tiny"],
        capture_output=True, text=True, env=os.environ.copy(),
    )


@pytest.mark.pipeline
def test_snakemake_tells_start_up_whether_it_runs_jobs(tmp_path):
    """What runs no job plans the run but sets no budget (and moves nothing); a run sets it. The
    dry-run setting is Snakemake's own: a profile's `dry-run: true`, with no -n on the command line,
    is a dry run too."""
    budget = tmp_path / "results" / "tiny" / "budget" / "budget.json"
    dry = _snakemake(tmp_path, "-n")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "This was a dry-run" in dry.stdout + dry.stderr and (tmp_path / "results" / "tiny" / "plan").is_dir()
    assert not budget.exists()
    profile = tmp_path / "dry-profile"
    profile.mkdir()
    (profile / "config.yaml").write_text("dry-run: true\n")
    by_profile = _snakemake(tmp_path, "--profile", str(profile))
    assert by_profile.returncode == 0, by_profile.stderr[-3000:]
    assert "This was a dry-run" in by_profile.stdout + by_profile.stderr and not budget.exists()
    summary = _snakemake(tmp_path, "-S")
    assert summary.returncode == 0, summary.stderr[-3000:]
    assert "tiny/leaderboard.md" in summary.stdout and not budget.exists()
    # a real run (of nothing: every job is left out) sets the budget
    run = _snakemake(tmp_path, "--cores", "1", "--omit-from", "scaffold")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Nothing to be done" in run.stdout + run.stderr and budget.is_file()


# ---------------------------------------------------------------------------------------------
# The rule files


RULE_FILES = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
START_UP = ("ensure_plan", "apply_budget", "compile_package", "check_run_config", "run_name(", "pack_cells",
            "unpack_cells", "read_cells", "workflow_project", "validate(", "sys.argv", "os.environ", "gc.",
            "sys.exit")


def test_start_up_is_one_call_and_the_rule_files_hold_none_of_it():
    calls = [(p.name, line) for p in RULE_FILES for line in p.read_text().splitlines() if "start_run(" in line]
    assert calls == [("common.smk", "RUN = start_run(workflow, config)")]
    for path in RULE_FILES:
        text = re.sub(r"#.*", "", path.read_text())
        assert not [word for word in START_UP if word in text], path.name


def test_every_rule_file_is_formatted():
    """`snakefmt --check workflow Snakefile`, as CI runs it (snakefmt is in the dev extras)."""
    check = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "workflow", "Snakefile"], cwd=ROOT,
                           capture_output=True, text=True)
    assert "No module named snakefmt" not in check.stderr, "snakefmt is missing: pip install -e '.[dev]'"
    assert check.returncode == 0, check.stderr[-3000:]
