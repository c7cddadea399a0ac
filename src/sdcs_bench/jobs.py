"""The pipeline's stage jobs: what each Snakemake job of a trial runs (docs/pipeline.md).

``specsnap [--root DIR] [--log FILE] <verb> ...`` for the stage verbs (``scaffold-sandbox --trial``,
``run-session``, ``inject``, ``handoff``, ``score``) is parsed here, with argparse, instead of by
the command line's typer app: a study runs a job per stage of every trial, and building typer's
parameter adapters cost each job more than a reference policy's whole session
(docs/benchmarks.md#a-trials-own-overhead). The typer commands of the same names (their ``--help``,
and anyone typing them) call the same functions. The verbs' options are declared once, in
``STAGE_VERBS`` (and ``GLOBAL_OPTIONS``): this module's parser and those typer commands are both
built from it (``tests/test_jobs.py`` checks that both take each option alike). Anything else on
the command line (``--help``, another verb, an option only the typer command knows) goes to the
typer app.

Also the process's plumbing both share: ``--log`` (all output to a file, errors also said on the
terminal) and one line per error instead of a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.timing import span

# The terminal, when --log sends this process's output (its own and its children's) to a file: an
# error is always said here too, in one line, so a full disk cannot swallow it.
_TERMINAL = None
_WRITING: Path | None = None  # the directory a pipeline verb writes into (named by a disk error)


def writing(path: Path | None) -> Path | None:
    """Name the directory this command writes into (a full disk's error names it)."""
    global _WRITING
    _WRITING = path
    return path


def redirect_to(log: Path) -> None:
    global _TERMINAL
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    _TERMINAL = os.fdopen(os.dup(2), "w", buffering=1)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def say(line: str) -> None:
    """One line on stderr (the log, under --log) and on the terminal; a full disk loses neither."""
    for stream in (sys.stderr, _TERMINAL):
        if stream is None:
            continue
        try:
            print(line, file=stream, flush=True)
        except OSError:
            pass


def guarded(command: Callable[[], Any]) -> None:
    """Run a command: a SpecSnap error is one line and exit status 2; a full disk, one line naming
    the directory being written, status 1; anything else a traceback (in the log, under --log)."""
    from sdcs_bench.core.fsutil import disk_error_message

    try:
        with span("stage, other"):
            command()
    except SpecSnapError as exc:
        say(f"specsnap: error: {exc}")
        sys.exit(2)
    except OSError as exc:
        message = disk_error_message(exc, _WRITING)
        if message is None:
            say(f"specsnap: error: {exc}")
            raise
        say(f"specsnap: error: {message}")
        sys.exit(1)
    except Exception as exc:
        if _TERMINAL is not None:  # the traceback goes to the log; the terminal gets one line
            _TERMINAL.write(f"specsnap: internal error: {type(exc).__name__}: {exc} (traceback in the log)\n")
        raise


# -- the stages -------------------------------------------------------------------------------------
def _stages():
    with span("imports"):
        from sdcs_bench.pipeline import stages
    return stages


def scaffold(trial: Path, stage_dir: Path) -> None:
    stages = _stages()
    stages.run_scaffold_stage(stages.load_trial(trial), writing(stage_dir))


def session(trial: Path, session: int, from_stage: Path, stage_dir: Path) -> None:
    stages = _stages()
    spec = stages.load_trial(trial)
    record = stages.run_session_stage(spec, session, from_stage, writing(stage_dir))
    s = record["session"]
    print(f"{spec.trial_id} {s['session']}: {s['status']}, {s['turns']} turns, {s['wall_s']} s", file=sys.stderr)


def inject(trial: Path, from_stage: Path, stage_dir: Path) -> None:
    stages = _stages()
    stages.run_inject_stage(stages.load_trial(trial), from_stage, writing(stage_dir))


def handoff(trial: Path, session: int, from_stage: Path, stage_dir: Path, session_stages: list[Path] | None) -> None:
    stages = _stages()
    stages.run_handoff_stage(stages.load_trial(trial), session, from_stage, writing(stage_dir),
                             session_stages=session_stages or None)


def score(trial: Path, from_stage: Path, stage_dir: Path, session_records: list[Path] | None = None,
          injection: Path | None = None, handoff_records: list[Path] | None = None) -> None:
    stages = _stages()
    record = stages.run_score_stage(stages.load_trial(trial), from_stage, writing(stage_dir),
                                    session_records=session_records or None, injection_record=injection,
                                    handoff_records=handoff_records or None)
    print(f"{record['trial']}: raw {record['raw']}, net {record['net']}", file=sys.stderr)


# -- the stage verbs' options, declared once -----------------------------------------------------------
class Option(NamedTuple):
    """One option of a stage verb (or of the program): the stage jobs' parser (``parser``) and the
    typer app's command of the same name (``sdcs_bench.cli``) are both built from it."""

    flag: str
    dest: str  # the job function's parameter it fills
    help: str  # what the typer command's --help says of it
    type: type = Path  # Path or int
    required: bool = True  # else None when not given
    repeat: bool = False  # given once per item: the items, in order (None when none)
    min: int | None = None  # an int's lower bound


class Verb(NamedTuple):
    """A stage verb: the job function its options are passed to (as keywords, by dest) and the
    help of its typer command."""

    name: str
    run: Callable[..., None]
    options: tuple[Option, ...]
    help: str = ""  # (a by-hand command's help is its own function's docstring)
    by_hand: bool = False  # its typer command also works by hand, with options of its own; these are optional there

    def option(self, flag: str) -> Option:
        (found,) = [o for o in self.options if o.flag == flag]
        return found


ROOT = Option("--root", "root", "the SpecSnap project to use (default: the working directory or its nearest parent "
              "holding tiers/ and workflow/schemas/)", required=False)
LOG = Option("--log", "log", "write all output to this file; errors are also said on the terminal", required=False)
GLOBAL_OPTIONS = (ROOT, LOG)  # before the verb

_TRIAL = Option("--trial", "trial", "a trial config from `plan`")
_FROM = Option("--from", "from_stage", "the previous stage's directory")
_STAGE_DIR = Option("--stage-dir", "stage_dir", "this stage's output directory")

STAGE_VERBS: dict[str, Verb] = {verb.name: verb for verb in (
    Verb("scaffold-sandbox", scaffold, (_TRIAL._replace(help="pipeline: a trial config from `plan`"),
                                        _STAGE_DIR._replace(help="pipeline: the stage's output dir")), by_hand=True),
    Verb("run-session", session,
         (_TRIAL, Option("--session", "session", "1-based session number", type=int, min=1), _FROM, _STAGE_DIR),
         "Pipeline: run one session of a trial from its predecessor's snapshot."),
    Verb("inject", inject, (_TRIAL, _FROM, _STAGE_DIR),
         "Pipeline: the variant's inject stage between two sessions (a poison pill, or withholding a\n"
         "coherence workload's facts: docs/coherence.md)."),
    Verb("handoff", handoff,
         (_TRIAL, Option("--session", "session", "the session it hands over to (2 or more)", type=int, min=2), _FROM,
          _STAGE_DIR, Option("--session-stage", "session_stages", "an earlier session's stage directory (each of "
                             "1 .. k-1, in order)", required=False, repeat=True)),
         "Pipeline: the handoff before session k in a continuation mode (docs/protocol.md#continuation-modes):\n"
         "a trace or summary for the next prompt, or the harness's own state for its next HOME."),
    Verb("score", score,
         (_TRIAL, _FROM._replace(help="the last session's stage directory"), _STAGE_DIR,
          Option("--session-record", "session_records", "each session's stage.json, in order (default: found in the "
                 "trial's layout)", required=False, repeat=True),
          Option("--injection", "injection", "the inject stage's stage.json (poison-pill variants)", required=False),
          Option("--handoff-record", "handoff_records", "each handoff's stage.json, in order (a continuation mode; "
                 "default: the layout's)", required=False, repeat=True)),
         "Pipeline: score a trial's final snapshot."),
)}


# -- the lean parser --------------------------------------------------------------------------------
class _NotAJob(Exception):
    """The command line is not one of the stage jobs as the rules write them: the typer app takes it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # (no usage text, no exit: the typer app says what is wrong)
        raise _NotAJob(message)


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(text)
        return value

    return parse


def _add(parser: argparse.ArgumentParser, option: Option) -> None:
    kind = option.type if option.min is None else _at_least(option.min)
    parser.add_argument(option.flag, dest=option.dest, type=kind, required=option.required,
                        action="append" if option.repeat else "store", help=option.help.replace("%", "%%"))


def parser() -> argparse.ArgumentParser:
    """The stage verbs' options (``GLOBAL_OPTIONS``, then each verb's of ``STAGE_VERBS``)."""
    top = _Parser(prog="specsnap", add_help=False, allow_abbrev=False)  # (typer takes no abbreviation)
    for option in GLOBAL_OPTIONS:
        _add(top, option)
    verbs = top.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    for verb in STAGE_VERBS.values():
        p = verbs.add_parser(verb.name, add_help=False, allow_abbrev=False)
        p.set_defaults(run=verb.run)
        for option in verb.options:
            _add(p, option)
    return top


def parse(argv: list[str]) -> argparse.Namespace | None:
    """The stage job ``argv`` names, or None when it is anything else (then the typer app runs)."""
    if any(a in ("--help", "-h") or a.startswith("--help=") for a in argv):
        return None
    try:
        return parser().parse_args(argv)
    except (_NotAJob, ValueError):
        return None


def run(args: argparse.Namespace) -> None:
    """Run a parsed stage job (with --root and --log applied as the typer app's callback applies them)."""

    def job() -> None:
        if args.root is not None:
            from sdcs_bench.core.paths import use_project

            use_project(args.root)
        if args.log is not None:
            redirect_to(args.log)
        args.run(**{k: v for k, v in vars(args).items() if k not in ("root", "log", "verb", "run")})

    guarded(job)
