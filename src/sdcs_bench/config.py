"""The Hydra config tree under conf/: entity registries and composition.

Every agent, arm, workload, variant and study is one YAML file in its config group. This module
is the only place that composes them; the pipeline composes once per run (see plan.py).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from .errors import unknown
from .paths import conf_dir

GROUPS = ("study", "agent", "arm", "workload", "variant")


def options(group: str) -> list[str]:
    """The names a config group offers (its YAML files)."""
    if group not in GROUPS:
        raise unknown("config group", group, GROUPS)
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


def check_option(group: str, name: str) -> str:
    choices = options(group)
    if name not in choices:
        raise unknown(group, name, choices)
    return name


@contextmanager
def hydra_context() -> Iterator[None]:
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        yield
        return
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="specsnap"):
        yield


def compose(overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Compose conf/config.yaml with Hydra overrides and return a plain, resolved dict."""
    from hydra import compose as hydra_compose
    from omegaconf import OmegaConf

    with hydra_context():
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def entity(group: str, name: str) -> dict[str, Any]:
    """One resolved entity, e.g. ``entity("arm", "State_MD_Only")`` (a fresh copy each call)."""
    check_option(group, name)
    return copy.deepcopy(_entity(group, name))


@cache
def _entity(group: str, name: str) -> dict[str, Any]:
    return compose([f"+{group}={name}"] if group != "study" else [f"study={name}"])[group]
