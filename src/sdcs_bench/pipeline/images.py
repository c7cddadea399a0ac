"""What each generated docker image carries (``families:`` in ``containers/images.yaml``).

``env-<workload>``: a real repository's environment, the virtualenv with its pinned test
dependencies (and its interpreter, when that is not the run's own, which every container has
mounted read-only anyway). ``harness-<name>``: a pinned harness CLI as ``specsnap
install-harnesses`` installed it, its PyPI virtualenv or its npm package with every package it
depends on. Both are copied into the image at their host paths, so the paths a trial records stay
true, and the docker backend mounts nothing from the host where the image provides it.

And what a trial's sandbox is (:func:`sandbox_settings`): its backend, its limits and, for docker,
the images its sessions and its scoring run in, chosen and checked at planning.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import unknown
from sdcs_bench.core.paths import project_root
from sdcs_bench.sandbox.base import runtime_roots
from sdcs_bench.sandbox.images import SYSTEM_DIRS, Carried, split_name
from sdcs_bench.sandbox.limits import Limits
from sdcs_bench.trial.components import AgentConfig

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


def sandbox_settings(backend: str, cfg: dict[str, Any], results: Path, agent: AgentConfig,
                     workload: Any) -> dict[str, Any]:
    """A trial's sandbox: its backend and, for docker, the images its sessions and its scoring run
    in, with the records their build_image jobs write (the stages take them as input; checked
    against ``containers/images.yaml`` here, before any work), and the per-container limits."""
    limits = Limits.from_config(cfg.get("limits")).to_dict()
    if backend != "docker":
        return {"backend": backend, "limits": limits}
    from sdcs_bench.agents.install import harness_home, pins
    from sdcs_bench.pipeline.layout import CacheLayout
    from sdcs_bench.sandbox.images import carriable, engine, family_names, image_names

    docker = dict(cfg.get("docker") or {})
    image = str(docker.pop("image", "auto"))
    choices = ["auto", *image_names()]
    if image not in choices:
        raise unknown("image (sandbox.docker.image)", image, choices)
    # auto: a real repository's scoring runs in its environment's image, and so do its sessions
    # unless the agent is a real harness CLI, which runs in its own image.
    # (Not where what the image would carry lies under /tmp, which each container's private /tmp hides:
    # the parent image then runs with the host's copy mounted, as a named image does.)
    env = (f"env-{workload.id}" if workload.is_real_repo and "env" in family_names()
           and carriable(CacheLayout(str(results)).root) else None)
    harness = agent.harness if agent.harness in pins() and carriable(harness_home()) else None
    if image == "auto":
        session = (f"harness-{harness}" if harness and "harness" in family_names()
                   else env or ("harnesses" if agent.harness in pins() else "base"))
        score = env or "base"
    else:
        session = score = image
    engine()  # no engine answering is one line now, not a failed job later
    cache = CacheLayout(str(results))
    record = {name: cache.image_record(name, _image_digest(name, str(project_root()), str(results)))
              for name in {session, score}}
    return {"backend": backend, "limits": limits, "docker": {**docker, "image": session, "image_record": record[session],
                                           "score_image": score, "score_image_record": record[score]}}


@functools.cache
def _image_digest(name: str, root: str, results: str) -> str:
    """Once per image and project in a plan (hashing a context with the Node runtime takes a moment)."""
    from sdcs_bench.sandbox.images import image_digest

    return image_digest(name, carried(name, results))[:12]


def image_sources(images: set[str]) -> set[str]:
    """The files an image's digest reads, for the plan's record of its inputs: the catalogue, the
    harness pins (a generated image's key), and each image's and its parents' host files."""
    from sdcs_bench.sandbox.images import host_files, parent_image

    out = {"containers", "harnesses/pins.yaml"}
    todo = list(images)
    while todo:
        name = todo.pop()
        out.update(str(p) for p in host_files(name))
        parent = parent_image(name)
        if parent:
            todo.append(parent)
    return out


__all__ = ["FAMILIES", "carried", "image_sources", "members", "real_repo_ids", "sandbox_settings"]
