"""What each generated docker image carries (``families:`` in ``containers/images.yaml``).

``env-<workload>``: a real repository's environment, the virtualenv with its pinned test
dependencies (and its interpreter, when that is not the run's own, which every container has
mounted read-only anyway). ``harness-<name>``: a pinned harness CLI as ``specsnap
install-harnesses`` installed it, its PyPI virtualenv or its npm package with every package it
depends on. Both are copied into the image at their host paths, so the paths a trial records stay
true, and the docker backend mounts nothing from the host where the image provides it.
"""

from __future__ import annotations

import json
from pathlib import Path

from sdcs_bench.core.errors import unknown
from sdcs_bench.core.paths import project_root
from sdcs_bench.sandbox.base import runtime_roots
from sdcs_bench.sandbox.images import SYSTEM_DIRS, Carried, split_name

# The families SpecSnap can generate, and what names a member of each.
FAMILIES = {"env": "workload", "harness": "harness"}


def real_repo_ids() -> list[str]:
    return sorted(p.parent.name for p in (project_root() / "real_repos").glob("*/workload.yaml"))


def members(family: str) -> list[str]:
    from sdcs_bench.agents.install import pins

    return real_repo_ids() if family == "env" else sorted(pins())


def _env(workload_id: str, results: Path) -> Carried:
    from sdcs_bench.pipeline.repos import repo_plan
    from sdcs_bench.sandbox.environment import read_environment
    from sdcs_bench.trial.workload import load_workload

    env_dir = Path(repo_plan(load_workload(workload_id), results)["environment_dir"]).resolve()
    if not (env_dir / "env.json").is_file():
        return Carried(env_dir.name, str(env_dir))  # the digest needs no more; a build says it is missing
    base = Path(read_environment(env_dir)["base_prefix"]).resolve()
    own = str(base) in SYSTEM_DIRS or any(base == r or base.is_relative_to(r) for r in runtime_roots())
    return Carried(env_dir.name, str(env_dir), (env_dir,) if own else (env_dir, base))


def _harness(name: str) -> Carried:
    from sdcs_bench.agents.install import install_dir, installed, managed_binary, pins

    pin = pins()[name]
    root = install_dir(pin)
    if not installed(pin):
        return Carried(pin.spec, str(root))
    if pin.registry != "npm":
        return Carried(pin.spec, str(root), (root,))
    modules = root / "node_modules"
    todo, seen = [modules / pin.package], []
    while todo:  # the package and its dependencies, as node resolves them: nested first, then hoisted
        pkg = todo.pop()
        if pkg in seen or not (pkg / "package.json").is_file():
            continue
        seen.append(pkg)
        meta = json.loads((pkg / "package.json").read_text())
        for dep in {**(meta.get("dependencies") or {}), **(meta.get("optionalDependencies") or {})}:
            todo += [p for p in (pkg / "node_modules" / dep, modules / dep) if p.is_dir()][:1]
    return Carried(pin.spec, str(root), (*sorted(seen), managed_binary(pin)))


def carried(name: str, results: Path | str = "results") -> Carried | None:
    """What the image ``name`` carries; None for an image of the catalogue (``images:``)."""
    generated = split_name(name)
    if generated is None:
        return None
    family, member = generated
    if family not in FAMILIES:
        raise unknown("image family (containers/images.yaml families:)", family, FAMILIES)
    if member not in members(family):
        raise unknown(f"{FAMILIES[family]} of image {family}-<{FAMILIES[family]}>", member, members(family))
    return _env(member, Path(results)) if family == "env" else _harness(member)


__all__ = ["FAMILIES", "carried", "members", "real_repo_ids"]
