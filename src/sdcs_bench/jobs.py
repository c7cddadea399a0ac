"""The pipeline's stage jobs: what each Snakemake job of a trial runs (docs/pipeline.md).

``specsnap [--root DIR] [--log FILE] <verb> ...`` for the stage verbs (``scaffold-sandbox --trial``,
``run-session``, ``inject``, ``handoff``, ``score``) is parsed here, with argparse, instead of by
the command line's typer app: a study runs a job per stage of every trial, and building typer's
parameter adapters cost each job more than a reference policy's whole session
(docs/benchmarks.md#a-trials-own-overhead). The typer commands of the same names (their ``--help``,
and anyone typing them) call the same functions; ``tests/test_jobs.py`` keeps the two parsers'
options the same. Anything else on the command line (``--help``, another verb, an option only the
typer command knows) goes to the typer app.

Also the process's plumbing both share: ``--log`` (all output to a file, errors also said on the
terminal) and one line per error instead of a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

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


# -- the lean parser --------------------------------------------------------------------------------
class _NotAJob(Exception):
    """The command line is not one of the stage jobs as the rules write them: the typer app takes it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # (no usage text, no exit: the typer app says what is wrong)
        raise _NotAJob(message)


def _positive(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(text)
        return value

    return parse


def parser() -> argparse.ArgumentParser:
    """The stage verbs' options (each as the typer command of the same name declares it)."""
    top = _Parser(prog="specsnap", add_help=False, allow_abbrev=False)  # (typer takes no abbreviation)
    top.add_argument("--root", type=Path)
    top.add_argument("--log", type=Path)
    verbs = top.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    def verb(name: str, run: Callable[..., None], *options: tuple[str, str, dict]) -> None:
        p = verbs.add_parser(name, add_help=False, allow_abbrev=False)
        p.set_defaults(run=run)
        for flag, dest, kw in options:
            p.add_argument(flag, dest=dest, **kw)

    trial = ("--trial", "trial", {"type": Path, "required": True})
    from_stage = ("--from", "from_stage", {"type": Path, "required": True})
    stage_dir = ("--stage-dir", "stage_dir", {"type": Path, "required": True})
    verb("scaffold-sandbox", scaffold, trial, stage_dir)
    verb("run-session", session, trial, ("--session", "session", {"type": _positive(1), "required": True}),
         from_stage, stage_dir)
    verb("inject", inject, trial, from_stage, stage_dir)
    verb("handoff", handoff, trial, ("--session", "session", {"type": _positive(2), "required": True}), from_stage,
         stage_dir, ("--session-stage", "session_stages", {"type": Path, "action": "append"}))
    verb("score", score, trial, from_stage, stage_dir,
         ("--session-record", "session_records", {"type": Path, "action": "append"}),
         ("--injection", "injection", {"type": Path}),
         ("--handoff-record", "handoff_records", {"type": Path, "action": "append"}))
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
