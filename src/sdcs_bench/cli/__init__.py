"""The ``specsnap`` command line (``python -m sdcs_bench.cli`` is the same): the typer app, its
options before any command, and its commands, one module per group: ``catalogue`` (list, check),
``by_hand`` (a trial outside the pipeline), ``stages`` (the stage verbs, from the one table of their
options in ``sdcs_bench.jobs``), ``repositories`` (real repositories, images, harnesses), ``runs``
(plan to report) and ``proxy``. A group module imports only ``_common``, never another group."""

from __future__ import annotations

import typer

from sdcs_bench import jobs
from sdcs_bench.cli import by_hand, catalogue, proxy, repositories, runs, stages
from sdcs_bench.cli._common import typer_option

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

RootOpt = typer_option(jobs.ROOT)
LogOpt = typer_option(jobs.LOG)


@app.callback()
def _options(root: RootOpt = None, log: LogOpt = None) -> None:
    """SpecSnap: what survives when a coding agent's session is cut off mid-task."""
    from sdcs_bench.core.paths import use_project

    if root is not None:
        use_project(root)
    if log is not None:
        jobs.redirect_to(log)


# The order `specsnap --help` lists the commands in; a command not named here comes after these, in
# its group's order.
ORDER = (
    "list", "validate-workload", "scaffold-sandbox", "inject-poison-pill", "inject", "handoff", "run-session",
    "score", "evaluate-sandbox", "fetch-source", "add-repository", "build-env", "build-image", "plan", "power",
    "rerun", "stability", "estimate", "aggregate", "leaderboard", "report", "enumerate-estimators", "proxy",
    "install-harnesses",
)
_GROUPS = (catalogue, by_hand, stages, repositories, runs, proxy)

app.registered_commands.extend(sorted(
    (command for group in _GROUPS for command in group.commands.registered_commands),
    key=lambda command: ORDER.index(command.name) if command.name in ORDER else len(ORDER)))


def main() -> None:
    jobs.guarded(app)
