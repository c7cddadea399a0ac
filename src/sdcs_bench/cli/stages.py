"""The stage verbs the pipeline's rules run: ``run-session``, ``inject``, ``handoff`` and ``score``,
each a typer command made from its entry of ``jobs.STAGE_VERBS``, the one table the stage jobs' own
parser (``jobs.parser``) is made from too: its options (flag, type, required, repeated, lower bound,
help) and its help. A stage job as a rule writes it is parsed by that parser, without loading typer
(``sdcs_bench.entry``); these commands answer ``--help``, a mistyped line, and anyone typing them.
(``scaffold-sandbox``, which also scaffolds by hand, is in ``by_hand``: its pipeline options come
from the same table.)"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import typer

from sdcs_bench import jobs
from sdcs_bench.cli._common import typer_option

commands = typer.Typer()


def _command(verb: jobs.Verb) -> Callable[..., None]:
    """A function typer reads as the verb's command: a keyword parameter per option of the table,
    named by its dest, passed on as the job function's keywords (as ``jobs.run`` passes them)."""

    def command(**options: Any) -> None:
        verb.run(**options)

    command.__signature__ = inspect.Signature([
        inspect.Parameter(option.dest, inspect.Parameter.KEYWORD_ONLY, annotation=typer_option(option),
                          default=inspect.Parameter.empty if option.required else None)
        for option in verb.options])
    command.__name__ = command.__qualname__ = verb.name.replace("-", "_")
    command.__doc__ = verb.help
    return command


for _verb in jobs.STAGE_VERBS.values():
    if not _verb.by_hand:
        commands.command(_verb.name)(_command(_verb))
