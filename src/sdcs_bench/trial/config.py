"""The Hydra config tree under conf/: entity registries and composition.

Every agent, arm, workload, variant and study is one YAML file in its config group. This module
is the only place that composes them; the pipeline composes once per run (see pipeline/plan/planner.py).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pathlib import Path

from sdcs_bench.core.errors import SpecSnapError, one_line, unknown
from sdcs_bench.core.paths import conf_dir, project_root

GROUPS = ("study", "agent", "arm", "workload", "variant")
# A trial has one variant; a variant may be a composition of variant files joined by this sign
# (``conflicts_4+polarity_inverted+standard_stale``): one value per axis, merged (docs/coherence.md).
COMPOSE = "+"


def safe_loader():
    """PyYAML's safe loader, its C implementation (libyaml) where PyYAML has it: the same documents,
    read about ten times faster (every stage reads its workload's YAML)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path, what: str = "mapping") -> Any:
    """Parse one YAML file of the project; a missing file or a syntax error is one SpecSnapError
    naming the file (relative to the project) and the line, never a parser traceback."""
    import yaml

    shown = _shown(path)
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise SpecSnapError(f"{shown} does not exist") from None
    except OSError as exc:
        raise SpecSnapError(f"{shown}: cannot be read ({exc.strerror})") from None
    try:
        data = yaml.load(text, Loader=safe_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecSnapError(f"{shown}: invalid YAML{where}: {problem}") from None
    if what == "mapping" and not isinstance(data, dict):
        raise SpecSnapError(f"{shown}: expected a mapping of keys to values, found {type(data).__name__}")
    return data


def _shown(path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(project_root()).as_posix()
    except (ValueError, SpecSnapError):
        return str(path)


def options(group: str) -> list[str]:
    """The names a config group offers (its YAML files)."""
    if group not in GROUPS:
        raise unknown("config group", group, GROUPS)
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


def check_option(group: str, name: str) -> str:
    choices = options(group)
    parts = name.split(COMPOSE) if group == "variant" else [name]
    for part in parts:
        if part not in choices:
            raise unknown(group, part, choices)
    if len(set(parts)) != len(parts):
        raise SpecSnapError(f"variant {name!r} names a part twice")
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

    read_yaml(conf_dir() / "config.yaml")  # a broken file is named, not left to Hydra's traceback
    for item in overrides:
        group, _, name = str(item).lstrip("+").partition("=")
        if group in GROUPS and name and (conf_dir() / group / f"{name}.yaml").is_file():
            read_yaml(conf_dir() / group / f"{name}.yaml")
    with hydra_context():
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def entity(group: str, name: str) -> dict[str, Any]:
    """One resolved entity, e.g. ``entity("arm", "State_MD_Only")`` (a fresh copy each call). A
    composed variant (``a+b``) is its parts merged: see :func:`compose_variant`."""
    check_option(group, name)
    if group == "variant" and COMPOSE in name:
        return compose_variant(name)
    return copy.deepcopy(_entity(group, name))


_ENTITIES: dict[tuple[str, str], dict[str, Any]] = {}  # (group, name) -> the resolved entity, composed once


def compose_variant(name: str) -> dict[str, Any]:
    """The variant ``a+b+...``: every part's settings together. Mappings merge key by key; a setting
    two parts give different values is an error naming both parts (each part sets one axis)."""
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}

    def merge(into: dict[str, Any], data: dict[str, Any], part: str, prefix: str) -> None:
        for key, value in data.items():
            where = f"{prefix}{key}"
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value, part, where + ".")
            elif key in into and into[key] != value:
                raise SpecSnapError(f"variant {name!r}: {owner[where]} and {part} both set {where} "
                                    f"({into[key]!r} and {value!r}); compose at most one value per setting")
            else:
                into[key] = copy.deepcopy(value)
                owner[where] = part
                if isinstance(value, dict):
                    for sub in value:
                        owner[f"{where}.{sub}"] = part

    parts = name.split(COMPOSE)
    for part in parts:
        data = {k: v for k, v in _entity("variant", part).items() if k not in ("name", "description")}
        merge(merged, data, part, "")
    descriptions = [str(_entity("variant", p).get("description", "")).strip() for p in parts]
    return {"name": name, "description": " + ".join(d for d in descriptions if d), **merged}


def _entity(group: str, name: str) -> dict[str, Any]:
    key = (group, name)
    if key not in _ENTITIES:
        _ENTITIES[key] = _compose_entity(group, name)
    return _ENTITIES[key]


def _compose_entity(group: str, name: str) -> dict[str, Any]:
    path = conf_dir() / group / f"{name}.yaml"
    read_yaml(path)
    try:
        composed = compose([f"+{group}={name}"] if group != "study" else [f"study={name}"])
        if group == "agent":  # conf/config.yaml's agent_defaults: the one place an agent setting defaults
            return {**composed.get("agent_defaults", {}), **composed["agent"]}
        return composed[group]
    except SpecSnapError:
        raise
    except Exception as exc:  # Hydra / OmegaConf: interpolation, type or key errors inside the file
        raise SpecSnapError(f"{_shown(path)}: {one_line(exc)}") from None


_PACKAGE_SAFE = re.compile(r"^[A-Za-z0-9_]+$")


def prefetch(entities: Iterable[tuple[str, str]]) -> None:
    """Compose many entities (``("arm", "Vanilla")``, ...) in one Hydra composition, each under a
    package of its own, and keep them as :func:`entity` returns them: every composition re-reads
    the config tree, so a study's twenty-odd entities one by one cost seconds. Anything this cannot
    do (an unknown name, a broken file) is left to :func:`entity`, which names the file."""
    todo = []
    for group, name in dict.fromkeys(entities):
        if (group, name) in _ENTITIES or group in ("study",) or not _PACKAGE_SAFE.match(name):
            continue
        try:
            check_option(group, name)
            read_yaml(conf_dir() / group / f"{name}.yaml")
        except SpecSnapError:
            continue
        todo.append((group, name))
    if len(todo) < 2:
        return
    try:
        composed = compose([f"+{group}@_prefetch.{group}.{name}={name}" for group, name in todo])
        for group, name in todo:
            value = composed["_prefetch"][group][name]
            if group == "agent":
                value = {**composed.get("agent_defaults", {}), **value}
            _ENTITIES[group, name] = value
    except Exception:  # composed one by one instead, where the error names its file
        return
