"""Real repositories and what runs them: ``fetch-source``, ``add-repository``, ``build-env``,
``build-image`` and ``install-harnesses``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from sdcs_bench.cli._common import BackendOpt, ResultsOpt, _console, _need, _writing
from sdcs_bench.core.errors import SpecSnapError

commands = typer.Typer()

# (fetch-source and build-env: a real repository by hand, or the pipeline's planned one)
RepoWorkloadArg = Annotated[Optional[str], typer.Argument(help="a real repository workload, e.g. click")]
RepoPlanOpt = Annotated[Optional[Path], typer.Option("--repo-plan", help="pipeline: plan/repos/<workload>.json")]


@commands.command("fetch-source")
def fetch_source_command(
    workload: RepoWorkloadArg = None,
    results: ResultsOpt = Path("results"),
    repo_plan: RepoPlanOpt = None,
) -> None:
    """Download a real repository's pinned source once (its SHA-256 checked) into results/_cache/sources/."""
    from sdcs_bench.pipeline.repos import fetch_planned_source

    planned, where = _repo_plan(workload, results, repo_plan)
    record = fetch_planned_source(planned, where)
    _console().print(f"{where}: {record['archive']} ({record['bytes']} bytes, sha256 {record['sha256'][:12]}…) "
                     f"unpacked in {planned['source_dir']}")


@commands.command("add-repository")
def add_repository_command(
    name: Annotated[Optional[str], typer.Argument(help="the new workload's id, e.g. attrs (default: made from the "
                                                      "project's name)")] = None,
    pypi: Annotated[Optional[str], typer.Option("--pypi", help="a PyPI release: PACKAGE==VERSION")] = None,
    git: Annotated[Optional[str], typer.Option("--git", help="a git repository's URL (with --commit)")] = None,
    commit: Annotated[Optional[str], typer.Option("--commit", help="the full 40-digit commit id to pin")] = None,
    display: Annotated[Optional[str], typer.Option("--name", help="what texts call the repository, e.g. hukkin/tomli "
                                                   "(default: the name its pyproject.toml or setup.cfg declares, "
                                                   "else the URL's owner/name)")] = None,
    python: Annotated[str, typer.Option("--python", help="the repository's Python, major.minor")] = "%d.%d" % sys.version_info[:2],
    test_dep: Annotated[Optional[list[str]], typer.Option("--test-dep", help="a requirement its tests need, added to "
                                                          "pytest and to those the project keeps (requirements files "
                                                          "under its tests, test extras, tox, nox); a pin of one of "
                                                          "them replaces it (repeat)")] = None,
    results: ResultsOpt = Path("results"),
    backend: BackendOpt = "auto",
) -> None:
    """Add a real repository: pin and fetch it, build its environment, run its own suite once on the
    pin (and once more as scoring runs it) and write the workload's skeleton with the baseline
    selection (docs/real_repos.md). What is left: its bugs (`specsnap add-bug`, or by hand) and,
    for the hinted arms, its hint files."""
    from sdcs_bench.pipeline.add_repo import add_repository, parse_pin
    from sdcs_bench.sandbox import make_backend

    pin = parse_pin(pypi, git, commit)
    made = add_repository(name, pin, python=python, test_deps=list(test_dep or []), results=results,
                          backend=make_backend(backend), display=display,
                          say=lambda line: _console().print(line, markup=False))
    name = made["name"]
    from sdcs_bench.core.paths import project_root

    shown = [str(Path(p).relative_to(project_root())) for p in (made["workload_dir"], made["registry"])]
    for line in (f"wrote {shown[0]}/ and {shown[1]}: {made['baseline']} baseline tests, "
                 f"{made['excluded']} left out with their reasons (baseline_excluded.yaml).",
                 f"Next: add each bug from its upstream fix (`specsnap add-bug {name} --fix-commit SHA`), or write its "
                 "entry in bugs.yaml, its hidden test under hidden/tests/ and its fix under fixes/ by hand; then "
                 f"`specsnap validate-workload {name}`.",
                 "Hints (optional; the Repo_Hinted and Repo_Backlog arms run only where they exist): "
                 "hints/partial_agents.md and hints/backlog_state.md, each listed under `hints:` in workload.yaml "
                 "with the bug ids it names (docs/real_repos.md#hints)."):
        _console().print(line, markup=False)


@commands.command("add-bug")
def add_bug_command(
    workload: Annotated[str, typer.Argument(help="a real repository workload (added by add-repository)")],
    fix_commit: Annotated[str, typer.Option("--fix-commit", help="the upstream commit that fixes the bug and tests it")],
    history: Annotated[Optional[Path], typer.Option("--history", help="a clone of the repository's upstream (needed "
                                                    "for an sdist pin; default for a git pin: its URL)")] = None,
    bug_id: Annotated[Optional[str], typer.Option("--id", help="the bug's id (default: <WORKLOAD>-<n>)")] = None,
    results: ResultsOpt = Path("results"),
    backend: BackendOpt = "auto",
) -> None:
    """Add a bug from its upstream fix commit: the fix's source part becomes the bug's fix patch, the
    tests it adds or changes its hidden tests; each is checked to fail on the pin and pass with the
    fix, the fix to apply alone and after the others, and the baseline to stay green; then the
    bugs.yaml entry is drafted (docs/real_repos.md#adding-a-bug-add-bug)."""
    from sdcs_bench.pipeline.add_bug import add_bug, fix_from_commit, history_gitdir
    from sdcs_bench.pipeline.layout import CacheLayout
    from sdcs_bench.pipeline.repos import prepare_workload
    from sdcs_bench.sandbox import make_backend

    wl = prepare_workload(_draft_repo(workload), results)
    gitdir = history_gitdir(wl, history, Path(CacheLayout(str(results)).root))
    fix = fix_from_commit(wl, gitdir, fix_commit)
    say = lambda line: _console().print(line, markup=False)  # noqa: E731
    entry = add_bug(wl, fix, backend=make_backend(backend), bug_id=bug_id, say=say)
    say(f"added {entry['id']} to {wl.root.name}/bugs.yaml: fix {entry['gold']} ({', '.join(entry['files'])}), "
        f"{len(entry['tests'])} hidden test(s): {', '.join(entry['tests'])}")
    say(f"Next: edit its behaviour line in bugs.yaml (drafted from the commit message: {entry['behaviour']!r}), then "
        f"`specsnap validate-workload {wl.id}`")


@commands.command("import-tasks")
def import_tasks_command(
    file: Annotated[Path, typer.Argument(help="SWE-bench-format instances, one JSON object per line")],
    mirror: Annotated[Optional[Path], typer.Option("--mirror", help="a directory of clones (owner__name, owner/name or "
                                                   "name), for offline use (default: each repo's GitHub URL)")] = None,
    python: Annotated[str, typer.Option("--python", help="the repositories' Python, major.minor")] = "%d.%d" % sys.version_info[:2],
    results: ResultsOpt = Path("results"),
    backend: BackendOpt = "auto",
) -> None:
    """Import SWE-bench-format task instances: instances sharing a repository and base commit become one
    real-repository workload, each instance a bug (FAIL_TO_PASS its hidden tests, PASS_TO_PASS the
    baseline), checked and validated; one that cannot be built or validated here is reported with its
    reason (docs/real_repos.md#swe-bench-format-tasks-import-tasks)."""
    from sdcs_bench.pipeline.import_tasks import import_tasks
    from sdcs_bench.sandbox import make_backend

    say = lambda line: _console().print(line, markup=False)  # noqa: E731
    report = import_tasks(file, mirror=mirror, python=python, results=results, backend=make_backend(backend), say=say)
    imported = sum(len(w["imported"]) for w in report["workloads"])
    refused = [r for w in report["workloads"] for r in w["refused"]]
    invalid = [w["workload"] for w in report["workloads"] if not (w.get("validation") or {"ok": True})["ok"]]
    say(f"imported {imported} of {report['instances']} instance(s) into {len(report['workloads'])} workload(s); "
        f"{len(refused)} refused" + (f"; validation failed for {', '.join(invalid)}" if invalid else "")
        + f" (report: {report['report']})")
    for r in refused:
        say(f"  refused {r['instance_id']}: {r['reason']}")
    if refused or invalid:
        raise typer.Exit(1)


def _draft_repo(workload: str):
    """A real repository workload, bugs or none yet (what add-bug adds to)."""
    from sdcs_bench.trial.workload import load_draft_repository
    from sdcs_bench.trial.workload_registry import registered_workloads, resolve_workload_id, workload_dir

    wl = load_draft_repository(workload_dir(resolve_workload_id(workload)))
    if not wl.is_real_repo:
        known = [w for w in registered_workloads() if (workload_dir(w) / "bugs.yaml").is_file()]
        raise SpecSnapError(f"workload {wl.id} is not a real repository (it has no source pin)", known)
    return wl


@commands.command("build-env")
def build_env_command(
    workload: RepoWorkloadArg = None,
    results: ResultsOpt = Path("results"),
    repo_plan: RepoPlanOpt = None,
) -> None:
    """Build a real repository's own environment (its Python and pinned test dependencies) once."""
    from sdcs_bench.pipeline.repos import build_planned_environment

    planned, where = _repo_plan(workload, results, repo_plan)
    record = build_planned_environment(planned, where)
    _console().print(f"{where}: Python {record['interpreter']['version']} ({record['interpreter']['found_by']}: "
                     f"{record['interpreter']['path']}), {len(record['freeze'])} packages, in {planned['environment_dir']}")


@commands.command("build-image")
def build_image_command(
    name: Annotated[str, typer.Argument(help="an image of containers/images.yaml, e.g. base, env-click, "
                                                 "harness-claude_code")] = "base",
    results: ResultsOpt = Path("results"),
    record: Annotated[Optional[Path], typer.Option("--record", help="where to write the image record "
                                                   "(default: results/_cache/images/<name>/<digest>.json)")] = None,
) -> None:
    """Build a docker sandbox image (containers/<name>/, or a generated env-<workload> or
    harness-<name>) without any image registry, once."""
    from sdcs_bench.pipeline.images import carried as carried_by
    from sdcs_bench.pipeline.layout import CacheLayout
    from sdcs_bench.sandbox.images import build_image, image_digest

    carried = carried_by(name, results)  # None for a catalogue image (or an unknown name, which
    digest = image_digest(name, carried)  # image_digest names in one line with the images there are)
    if record is not None and record.stem != digest[:12]:
        raise SpecSnapError(f"containers/{name}/ changed after this run was planned (its digest is now {digest[:12]}, "
                            f"the plan expects {record.stem}); rerun to plan the new image")
    where = record or Path(CacheLayout(str(results)).image_record(name, digest[:12]))
    data = build_image(name, _writing(where.parent) and where, log=lambda m: print(f"specsnap: {m}", file=sys.stderr),
                       digest=digest, carried=carried)
    _console().print(f"{data['tag']} ({data['id'][:19]}…), record in {where}")


def _repo_plan(workload: str | None, results: Path, repo_plan: Path | None) -> tuple[dict, str]:
    """What the source and environment commands work from: the pipeline's plan file, or the
    workload's own data planned now."""
    if repo_plan is not None:
        return json.loads(repo_plan.read_text()), str(repo_plan)
    from sdcs_bench.pipeline.repos import repo_plan as plan_repo

    wl = _real_repo(workload)
    return plan_repo(wl, results), wl.id


def _real_repo(workload: str | None):
    from sdcs_bench.trial.workload import load_workload
    from sdcs_bench.trial.workload_registry import registered_workloads, resolve_workload_id

    known = [w for w in registered_workloads() if _is_repo(w)]
    wl = load_workload(resolve_workload_id(_need(workload, "WORKLOAD", known)))
    if not wl.is_real_repo:
        raise SpecSnapError(f"workload {wl.id} is not a real repository (it has no source pin)", known)
    return wl


def _is_repo(wid: str) -> bool:
    from sdcs_bench.trial.workload import load_workload

    try:
        return load_workload(wid).is_real_repo
    except SpecSnapError:
        return False


@commands.command("install-harnesses")
def install_harnesses(
    names: Annotated[Optional[list[str]], typer.Argument(help="harnesses to install (default: all pinned)")] = None,
    force: Annotated[bool, typer.Option("--force", help="reinstall even if the pinned version is in place")] = False,
) -> None:
    """Install the pinned real agent CLIs (harnesses/pins.yaml); already-installed pins are skipped."""
    from sdcs_bench.agents.install import harness_home, install

    from sdcs_bench.core.progress import progress

    with progress("installing harnesses") as step:
        done = install(list(names or []) or None, force=force, log=lambda m: step(description=f"specsnap: {m}"))
    print(f"installed: {', '.join(done) or '(all already in place)'} under {harness_home()}")
