"""The stage jobs' own parser (sdcs_bench/jobs.py) and the ``specsnap`` program's entry
(sdcs_bench/entry.py): the stage verbs as the workflow's rules write them are parsed by argparse;
it and the typer commands of the same names are both built from one table of the verbs' options
(jobs.STAGE_VERBS), and take each option alike; anything else goes to the typer app; an error is
one line (also on the terminal under --log), never a traceback."""

from __future__ import annotations

import ast
import inspect
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from sdcs_bench import cli, jobs

STAGE_VERBS = ("scaffold-sandbox", "run-session", "inject", "handoff", "score")
RUNS = {"scaffold-sandbox": jobs.scaffold, "run-session": jobs.session, "inject": jobs.inject,
        "handoff": jobs.handoff, "score": jobs.score}


def _typer(*argv: str):
    """The typer app's answer to ``argv`` (in this process, the terminal 200 columns wide)."""
    return CliRunner().invoke(cli.app, list(argv), env={"COLUMNS": "200"})


def _typer_flags(*argv: str) -> set[str]:
    """The options the typer app's ``--help`` lists (of the app, or of the command ``argv`` names)."""
    shown = _typer(*argv, "--help")
    assert shown.exit_code == 0, shown.output
    return set(re.findall(r"^│ [* ]{0,3}(--[\w-]+)", shown.output, re.M)) - {"--help"}  # (an option's first line)


def _sample(verb: jobs.Verb, *, everything: bool) -> list[str]:
    """A command line of the stage verb from the table: each required option (``everything``: each
    option, a repeated one twice) with a value of its type (an int its lower bound)."""
    argv = [verb.name]
    for option in verb.options:
        if option.required or everything:
            for n in range(2 if option.repeat else 1):
                argv += [option.flag, str(option.min or 1) if option.type is int else f"{option.dest}.{n}"]
    return argv


class _Stages:
    """Stands in for sdcs_bench.pipeline.stages: records what each stage was called with."""

    def __init__(self):
        self.calls = []

    def load_trial(self, path):
        return SimpleNamespace(trial_id=f"trial {path}")

    def __getattr__(self, name):
        def run(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return {"session": {"session": 1, "status": "ok", "turns": 0, "wall_s": 0}, "trial": "t", "raw": 0,
                    "net": 0}

        return run


def _through_both(monkeypatch, argv: list[str]) -> tuple[list, list]:
    """The stages a stage job's command line calls, parsed by the job parser and by the typer app."""
    stages = _Stages()
    monkeypatch.setattr(jobs, "_stages", lambda: stages)
    args = jobs.parse(argv)
    assert args is not None, argv
    jobs.run(args)
    by_jobs, stages.calls = stages.calls, []
    result = _typer(*argv)
    assert result.exit_code == 0 and result.exception is None, result.output
    return by_jobs, stages.calls


# -- the two parsers, from one table -----------------------------------------------------------------
def test_the_table_has_exactly_the_stage_verbs_and_each_is_a_typer_command():
    assert tuple(jobs.STAGE_VERBS) == STAGE_VERBS
    assert {verb: jobs.STAGE_VERBS[verb].run for verb in STAGE_VERBS} == RUNS
    commands = _typer("--help").output
    for verb in STAGE_VERBS:
        assert re.search(rf"^\W+{verb}\s", commands, re.M), verb
        assert jobs.parse(_sample(jobs.STAGE_VERBS[verb], everything=False)) is not None, verb


@pytest.mark.parametrize("verb", STAGE_VERBS)
def test_each_stage_verbs_typer_command_lists_the_tables_options_and_their_help(verb):
    table = jobs.STAGE_VERBS[verb]
    flags = {option.flag for option in table.options}
    if table.by_hand:  # (scaffold-sandbox also scaffolds by hand: --arm, --dest, ...)
        assert flags < _typer_flags(verb)
    else:
        assert _typer_flags(verb) == flags
    shown = " ".join(_typer(verb, "--help").output.split())
    for option in table.options:
        assert option.help in shown, option.flag
    assert " ".join(table.help.split()) in shown


def test_the_global_options_are_the_tables_in_both_parsers():
    assert _typer_flags() == {option.flag for option in jobs.GLOBAL_OPTIONS} == {"--root", "--log"}
    job = _sample(jobs.STAGE_VERBS["inject"], everything=False)
    args = jobs.parse(["--root", "R", "--log", "L", *job])
    assert args is not None and (args.root, args.log) == (Path("R"), Path("L"))


@pytest.mark.parametrize("everything", [False, True], ids=["required options", "every option"])
@pytest.mark.parametrize("verb", STAGE_VERBS)
def test_both_parsers_read_a_stage_job_alike(monkeypatch, verb, everything):
    table = jobs.STAGE_VERBS[verb]
    argv = _sample(table, everything=everything)
    args = jobs.parse(argv)
    for option in table.options:  # each value as the table types it (a repeated option: all, in order)
        given = [option.type(v) for flag, v in zip(argv, argv[1:]) if flag == option.flag]
        assert getattr(args, option.dest) == ((given if option.repeat else given[0]) if given else None), option.flag
    by_jobs, by_typer = _through_both(monkeypatch, argv)
    assert len(by_jobs) == 1 and by_jobs == by_typer


@pytest.mark.parametrize("verb", STAGE_VERBS)
def test_both_parsers_refuse_a_job_without_a_required_option_or_with_an_unknown_one(verb):
    table = jobs.STAGE_VERBS[verb]
    for option in table.options:
        if not option.required or table.by_hand:  # (by hand, --arm and --dest may stand in for them)
            continue
        argv = _sample(table, everything=False)
        at = argv.index(option.flag)
        line = argv[:at] + argv[at + 2:]
        assert jobs.parse(line) is None, line
        assert _typer(*line).exit_code == 2, line
    line = [*_sample(table, everything=False), "--no-such-option", "x"]
    assert jobs.parse(line) is None
    assert _typer(*line).exit_code == 2


@pytest.mark.parametrize("verb", [v for v in STAGE_VERBS if any(o.min for o in jobs.STAGE_VERBS[v].options)])
def test_a_lower_bound_holds_in_both_parsers(monkeypatch, verb):
    table = jobs.STAGE_VERBS[verb]
    for option in (o for o in table.options if o.min is not None):
        argv = _sample(table, everything=False)
        low = argv.index(option.flag) + 1
        assert argv[low] == str(option.min)
        by_jobs, by_typer = _through_both(monkeypatch, argv)  # (the bound itself is taken by both)
        assert by_jobs == by_typer
        argv[low] = str(option.min - 1)
        assert jobs.parse(argv) is None
        refused = _typer(*argv)
        assert refused.exit_code == 2 and f"greater than or equal to {option.min}" in refused.output


# -- what is a job, and what goes to the typer app ---------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["--help"],
    ["-h"],
    [],
    ["run-session", "--help"],
    ["--log", "L", "score", "--trial", "t", "--from", "a", "--stage-dir", "b", "--help"],
    ["scaffold-sandbox", "--arm", "X", "--dest", "d"],
    ["scaffold-sandbox", "--trial", "t"],  # (the typer command says --stage-dir is required)
    ["scaffold-sandbox", "--trial", "t", "--stage-dir", "d", "--variant", "none"],
    ["run-session", "--trial", "t", "--session", "0", "--from", "a", "--stage-dir", "b"],
    ["run-session", "--trial", "t", "--session", "two", "--from", "a", "--stage-dir", "b"],
    ["run-session", "--trial", "t", "--session", "1", "--from", "a"],
    ["run-session", "--trial", "t", "--session", "1", "--from", "a", "--stage-dir", "b", "--log", "L"],
    ["handoff", "--trial", "t", "--session", "1", "--from", "a", "--stage-dir", "b"],
    ["inject-poison-pill", "--trial", "t", "--from", "a", "--stage-dir", "b"],
    ["list", "arms"],
    ["plan", "--study", "smoke"],
])
def test_anything_but_a_stage_job_is_left_to_the_typer_app(argv):
    assert jobs.parse(argv) is None


def test_a_session_job_as_its_rule_writes_it():
    args = jobs.parse(["--log", "L", "run-session", "--trial", "t.json", "--session", "2", "--from", "a",
                       "--stage-dir", "b"])
    assert args is not None
    assert (args.root, args.log, args.verb) == (None, Path("L"), "run-session")
    assert (args.trial, args.session, args.from_stage, args.stage_dir) == (Path("t.json"), 2, Path("a"), Path("b"))
    assert args.run is jobs.session


def test_score_takes_every_session_record_in_order():
    args = jobs.parse(["--root", "R", "score", "--trial", "t.json", "--from", "s2", "--stage-dir", "sc",
                       "--session-record", "s1/stage.json", "--session-record", "s2/stage.json"])
    assert args is not None and args.run is jobs.score and args.root == Path("R")
    assert args.session_records == [Path("s1/stage.json"), Path("s2/stage.json")]
    assert args.injection is None and args.handoff_records is None


def _rule_shell(rule_file: str) -> str:
    """The shell command of the (one) rule in ``workflow/rules/<rule_file>``, its string literals joined."""
    text = (ROOT / "workflow" / "rules" / rule_file).read_text()
    match = re.search(r"^\s*shell:\n((?:[ \t]+\"(?:[^\"\\]|\\.)*\"[ \t]*\n)+)", text, re.M)
    assert match, f"no shell: in {rule_file}"
    return "".join(ast.literal_eval(s) for s in re.findall(r"\"(?:[^\"\\]|\\.)*\"", match.group(1)))


def _rule_argv(rule_file: str, values: dict[str, str]) -> list[str]:
    line = re.sub(r"\{([\w.]+)\}", lambda m: values[m.group(1)], _rule_shell(rule_file))
    argv = shlex.split(line)
    assert argv[0] == "specsnap"
    return argv[1:]


T = "results/smoke/plan/trials/t.json"
RULE_LINES = {
    "scaffold": ("sandbox.smk", {"log": "logs/scaffold.log", "input.trial": T, "params.stage_dir": "t/scaffold"},
                 {"verb": "scaffold-sandbox", "log": Path("logs/scaffold.log"), "trial": Path(T),
                  "stage_dir": Path("t/scaffold")}),
    "session": ("sessions.smk", {"log": "logs/s2.log", "input.trial": T, "wildcards.k": "2",
                                 "params.from_dir": "t/session_1", "params.stage_dir": "t/session_2"},
                {"verb": "run-session", "log": Path("logs/s2.log"), "trial": Path(T), "session": 2,
                 "from_stage": Path("t/session_1"), "stage_dir": Path("t/session_2")}),
    "inject": ("inject.smk", {"log": "logs/i.log", "input.trial": T, "params.from_dir": "t/session_1",
                              "params.stage_dir": "t/inject"},
               {"verb": "inject", "log": Path("logs/i.log"), "trial": Path(T), "from_stage": Path("t/session_1"),
                "stage_dir": Path("t/inject")}),
    "handoff": ("handoff.smk", {"log": "logs/h3.log", "input.trial": T, "wildcards.k": "3",
                                "params.from_dir": "t/session_2", "params.stage_dir": "t/handoff_3",
                                "params.sessions": "--session-stage t/session_1 --session-stage t/session_2"},
                {"verb": "handoff", "log": Path("logs/h3.log"), "trial": Path(T), "session": 3,
                 "from_stage": Path("t/session_2"), "stage_dir": Path("t/handoff_3"),
                 "session_stages": [Path("t/session_1"), Path("t/session_2")]}),
    "handoff, first": ("handoff.smk", {"log": "logs/h2.log", "input.trial": T, "wildcards.k": "2",
                                       "params.from_dir": "t/session_1", "params.stage_dir": "t/handoff_2",
                                       "params.sessions": "--session-stage t/session_1"},
                       {"verb": "handoff", "session": 2, "session_stages": [Path("t/session_1")]}),
    "score": ("score.smk", {"log": "logs/score.log", "input.trial": T, "params.from_dir": "t/session_2",
                            "params.stage_dir": "t/score",
                            "params.sessions": "--session-record t/session_1/stage.json "
                                               "--session-record t/session_2/stage.json",
                            "params.records": ""},
              {"verb": "score", "log": Path("logs/score.log"), "trial": Path(T), "from_stage": Path("t/session_2"),
               "stage_dir": Path("t/score"),
               "session_records": [Path("t/session_1/stage.json"), Path("t/session_2/stage.json")],
               "injection": None, "handoff_records": None}),
    "score, poison pill and handoffs": (
        "score.smk", {"log": "logs/score.log", "input.trial": T, "params.from_dir": "t/session_3",
                      "params.stage_dir": "t/score",
                      "params.sessions": " ".join(f"--session-record t/session_{k}/stage.json" for k in (1, 2, 3)),
                      "params.records": "--injection t/inject/stage.json --handoff-record t/handoff_2/stage.json "
                                          "--handoff-record t/handoff_3/stage.json"},
        {"verb": "score", "session_records": [Path(f"t/session_{k}/stage.json") for k in (1, 2, 3)],
         "injection": Path("t/inject/stage.json"),
         "handoff_records": [Path("t/handoff_2/stage.json"), Path("t/handoff_3/stage.json")]}),
}


@pytest.mark.parametrize("case", list(RULE_LINES))
def test_the_command_line_each_rule_writes_is_a_job(case):
    rule_file, values, expected = RULE_LINES[case]
    args = jobs.parse(_rule_argv(rule_file, values))
    assert args is not None, _rule_shell(rule_file)
    assert {k: getattr(args, k) for k in expected} == expected
    assert args.run is RUNS[args.verb] and args.root is None
    # run() calls the job with the rest of the namespace as keywords: they are its parameters
    inspect.signature(args.run).bind(**{k: v for k, v in vars(args).items() if k not in ("root", "log", "verb", "run")})


@pytest.mark.parametrize("argv", [
    ["score", "--trial", "t", "--from", "a", "--stage-dir", "b", "--session", "r.json"],
    ["scaffold-sandbox", "--trial", "t", "--stage", "d"],
    ["--lo", "L", "inject", "--trial", "t", "--from", "a", "--stage-dir", "b"],
])
def test_an_abbreviated_option_is_not_a_job(argv):
    assert jobs.parse(argv) is None


def test_the_specsnap_program_is_the_entry():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["specsnap"] == "sdcs_bench.entry:main"


# -- the real program --------------------------------------------------------------------------------
def _program(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sdcs_bench.entry", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "SPECSNAP_ROOT": str(ROOT), "COLUMNS": "200"}, timeout=60)


def _missing_trial_jobs(tmp: Path) -> dict[str, list[str]]:
    trial, src, out = str(tmp / "no-such-trial.json"), str(tmp / "from"), str(tmp / "stage")
    return {
        "scaffold-sandbox": ["scaffold-sandbox", "--trial", trial, "--stage-dir", out],
        "run-session": ["run-session", "--trial", trial, "--session", "1", "--from", src, "--stage-dir", out],
        "inject": ["inject", "--trial", trial, "--from", src, "--stage-dir", out],
        "handoff": ["handoff", "--trial", trial, "--session", "2", "--from", src, "--stage-dir", out,
                    "--session-stage", src],
        "score": ["score", "--trial", trial, "--from", src, "--stage-dir", out,
                  "--session-record", src + "/stage.json"],
    }


@pytest.mark.parametrize("verb", STAGE_VERBS)
def test_a_job_naming_a_missing_trial_is_one_line_and_no_traceback(tmp_path, verb):
    argv = _missing_trial_jobs(tmp_path)[verb]
    assert jobs.parse(argv) is not None  # (a job: the typer app is not what answers)
    proc = _program(*argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("specsnap: error:"), proc.stderr
    assert "no-such-trial.json" in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout and proc.stdout == ""
    assert not (tmp_path / "stage").exists()


def test_under_log_the_error_is_in_the_log_and_on_the_terminal(tmp_path):
    log = tmp_path / "logs" / "session_1.log"
    proc = _program("--log", str(log), *_missing_trial_jobs(tmp_path)["run-session"], cwd=tmp_path)
    assert proc.returncode == 2
    said = proc.stderr.splitlines()
    assert len(said) == 1 and said[0].startswith("specsnap: error:") and "no-such-trial.json" in said[0], proc.stderr
    assert said[0] in log.read_text().splitlines()
    assert "Traceback" not in log.read_text() + proc.stderr and proc.stdout == ""


def test_help_of_a_stage_verb_is_the_typer_commands(tmp_path):
    proc = _program("run-session", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--stage-dir" in proc.stdout and "--session" in proc.stdout and "Usage" in proc.stdout
    assert "predecessor's snapshot" in proc.stdout  # (the typer command's own docstring)


def test_a_command_line_that_is_no_job_gets_the_typer_apps_answer(tmp_path):
    proc = _program("run-session", "--trial", str(tmp_path / "no-such-trial.json"), "--session", "0", "--from", "a",
                    "--stage-dir", "b", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--session" in proc.stderr and "greater than or equal to 1" in proc.stderr
    assert "no-such-trial.json" not in proc.stderr  # (nothing ran)


def test_a_stage_job_loads_neither_typer_nor_click(tmp_path):
    argv = _missing_trial_jobs(tmp_path)["inject"]
    code = ("import sys\n"
            f"sys.argv = ['specsnap', *{argv!r}]\n"
            "from sdcs_bench import entry\n"
            "try:\n    entry.main()\nexcept SystemExit as exc:\n    print('exit', exc.code)\n"
            "print(sorted(m for m in ('typer', 'click', 'sdcs_bench.cli') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "SPECSNAP_ROOT": str(ROOT)}, timeout=60)
    assert proc.stdout.splitlines() == ["exit 2", "[]"], proc.stdout + proc.stderr
