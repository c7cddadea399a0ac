"""Where the project tree (conf/, tiers/) and a study's results live.

The project root is the checkout the user runs in, never the one the package happens to be
installed from: ``--root`` (the CLI) or ``SPECSNAP_ROOT`` (which the Snakefile sets to its own
directory for every job), else the working directory or the nearest parent of it holding
``tiers/`` and ``workflow/schemas/``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import cache
from pathlib import Path

from sdcs_bench.core.errors import SpecSnapError


MARKS = "tiers/ and workflow/schemas/"


def is_project(path: Path) -> bool:
    """A SpecSnap checkout. (``conf/`` is what planning reads; a pipeline stage reads only its trial
    file and the workload's files, so a node without ``conf/`` can still run stages.)"""
    return (path / "tiers").is_dir() and (path / "workflow" / "schemas").is_dir()


@cache
def project_root() -> Path:
    env = os.environ.get("SPECSNAP_ROOT")
    if env:
        if not is_project(Path(env)):
            raise SpecSnapError(f"SPECSNAP_ROOT={env} is not a SpecSnap project (no {MARKS} there)")
        return Path(env).resolve()
    cwd = Path.cwd().resolve()
    for cand in (cwd, *cwd.parents):
        if is_project(cand):
            return cand
    raise SpecSnapError(
        f"{cwd} is not inside a SpecSnap project (a directory with {MARKS}); "
        "run from a clone of the project, or pass --root DIR (or set SPECSNAP_ROOT)"
    )


def use_project(root: Path | str) -> Path:
    """Make ``root`` this process's project (and its children's, through ``SPECSNAP_ROOT``)."""
    root = Path(root).resolve()
    if not is_project(root):
        raise SpecSnapError(f"{root} is not a SpecSnap project (no {MARKS} there)")
    os.environ["SPECSNAP_ROOT"] = str(root)
    project_root.cache_clear()
    return root


def workflow_project(snakefile_dir: Path, main_process: bool) -> Path:
    """The project a Snakemake process uses: the Snakefile's checkout; for a remote job whose
    deployed sources hold only the workflow (no tiers/), the one ``SPECSNAP_ROOT`` names (the job
    image's copy of the same checkout)."""
    env = os.environ.get("SPECSNAP_ROOT")
    if not is_project(Path(snakefile_dir)) and not main_process and env:
        return use_project(env)
    return use_project(snakefile_dir)


def installed_checkout() -> Path | None:
    """The checkout the package itself was installed from (an editable install), if any: its hidden
    tests and gold must stay invisible to agents as well, whichever clone a study runs in."""
    for cand in Path(__file__).resolve().parents:
        if is_project(cand):
            return cand
    return None


def conf_dir() -> Path:
    """The config tree, which planning (and listing) reads; pipeline stages never do."""
    conf = project_root() / "conf"
    if not (conf / "config.yaml").is_file():
        raise SpecSnapError(f"{conf}/config.yaml does not exist: planning and listing need the project's conf/ tree")
    return conf


def default_work_root() -> Path:
    """Scratch space for live sandboxes (``SPECSNAP_WORK_ROOT``, else ``<tmp>/specsnap-work``)."""
    return Path(os.environ.get("SPECSNAP_WORK_ROOT") or Path(tempfile.gettempdir()) / "specsnap-work")


def run_work_root(run_dir: Path) -> Path:
    """The live sandboxes of one study directory: unique to that directory's absolute path, so two
    clones, two result roots or two runs of a study with different overrides never share one."""
    absolute = str(Path(run_dir).resolve())
    return default_work_root() / f"{Path(run_dir).name}-{hashlib.sha256(absolute.encode()).hexdigest()[:10]}"
