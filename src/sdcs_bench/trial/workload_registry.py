"""The registered workloads: a file ``conf/workload/<id>.yaml`` names a workload's directory (or the
family and seed it is generated from), and may give it aliases. Reading a workload's own directory is
:mod:`sdcs_bench.trial.workload`.
"""

from __future__ import annotations

from pathlib import Path

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.core.paths import conf_dir, project_root


def registered_workloads() -> dict[str, Path]:
    """Workload id -> its registry file ``conf/workload/<id>.yaml`` (read only when the workload is
    used, so one broken registration stops only the runs that use it)."""
    return {entry.stem: entry for entry in sorted((conf_dir() / "workload").glob("*.yaml"))}


def workload_dir(wid: str) -> Path:
    """The directory a registry file names, checked: one clear error naming the file otherwise."""
    from sdcs_bench.trial.config import read_yaml

    entry = registered_workloads()[wid]
    data = read_yaml(entry)
    if data.get("id", wid) != wid:
        raise SpecSnapError(f"conf/workload/{entry.name}: id {data.get('id')!r} must equal the file's name {wid!r}")
    if "generate" in data:  # generated from a seed (docs/coherence.md): written on first use
        from sdcs_bench.trial.generated import check_spec, ensure_generated

        family, seed = check_spec(data["generate"], f"conf/workload/{entry.name}")
        target = project_root() / data["path"] if isinstance(data.get("path"), str) and data["path"] else None
        return ensure_generated(wid, family, seed, target)
    if not isinstance(data.get("path"), str) or not data["path"]:
        raise SpecSnapError(f"conf/workload/{entry.name}: needs 'path:', the workload's directory (e.g. tiers/{wid})")
    root = project_root() / data["path"]
    if not (root / "workload.yaml").is_file():
        raise SpecSnapError(f"conf/workload/{entry.name}: path {data['path']!r} holds no workload.yaml")
    return root


def workload_aliases() -> tuple[dict[str, str], list[str]]:
    """Alias -> workload id, read from every registered workload that can be read; and the problems
    of those that cannot (reported only if a name is not found, never blocking the others)."""
    from sdcs_bench.trial.config import read_yaml

    aliases, problems = {}, []
    for wid in registered_workloads():
        try:
            meta = read_yaml(workload_dir(wid) / "workload.yaml")
        except SpecSnapError as exc:
            problems.append(str(exc))
            continue
        for alias in meta.get("aliases") or []:
            aliases[str(alias)] = wid
    return aliases, problems


def resolve_workload_id(name: str | None = None, tier: int | None = None) -> str:
    if tier is not None:
        if name is not None:
            raise SpecSnapError("give either --tier or --workload, not both")
        name = f"tier_{tier}"
    if name is None:
        raise SpecSnapError("a workload is required (--workload ID or --tier N)", registered_workloads())
    known = registered_workloads()
    if name in known:
        return name
    aliases, problems = workload_aliases()
    if name in aliases:
        return aliases[name]
    error = unknown("workload", name, known)
    if problems:
        error = SpecSnapError(f"{error} (unreadable: {'; '.join(problems)})")
    raise error
