"""What a run is asked for: its ``--config`` keys, its overrides, and the name of its directory."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError, one_line
from sdcs_bench.pipeline.plan.grid import GRID_AXES
from sdcs_bench.trial import config

RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def check_run_config(run_config: dict[str, Any], schema: Path) -> None:
    """The keys and types of a run's ``snakemake --config``: a key the schema does not know, or
    ``overrides`` that is not a list of strings, is one error naming what is valid."""
    import yaml

    known = yaml.safe_load(schema.read_text())["properties"]
    unknown = sorted(set(run_config) - set(known))
    if unknown:
        raise SpecSnapError(f"unknown --config key {unknown[0]!r}", sorted(known))
    overrides = run_config.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise SpecSnapError(f"--config overrides is a list of Hydra overrides, e.g. overrides='[\"arm=[Vanilla]\"]', "
                            f"not {overrides!r}")
    for key in ("study", "name", "results"):
        if key in run_config and not isinstance(run_config[key], str):
            raise SpecSnapError(f"--config {key} is one word, not {run_config[key]!r}")
    for key, value in run_config.items():  # (a switch: true or false, as the command line spells them)
        choices = known[key].get("enum")
        if choices is not None and value not in choices:
            raise SpecSnapError(f"--config {key}={value} is not a valid choice",
                                sorted({str(c).lower() for c in choices if c is not None}))


def run_name(study: str, overrides: list[str] | tuple[str, ...] = (), name: str | None = None) -> str:
    """The directory a run writes under ``results/``: the explicit ``name``; else the study's own
    name when there are no overrides; else ``<study>+<digest of the overrides>``, so a run with
    overrides never replaces the study's own results (and the same overrides find their results
    again, however they were spelled)."""
    if name:
        if not RUN_NAME.match(name) or name in (".", ".."):
            raise SpecSnapError(f"run name {name!r} must be letters, digits and _ . + - (not starting with one of those)")
        return name
    if not overrides:
        return study
    return f"{study}+{hashlib.sha256(override_key(overrides).encode()).hexdigest()[:8]}"


def override_key(overrides: list[str] | tuple[str, ...]) -> str:
    """The overrides' meaning, however they were spelled (spaces, order of Hydra overrides)."""
    grid, rest = split_overrides(list(overrides))
    return json.dumps({"grid": grid, "hydra": sorted(rest)}, sort_keys=True)


def split_overrides(overrides: list[str]) -> tuple[dict[str, list], list[str]]:
    """Overrides of a grid axis (``agent=[a,b]``, ``arm=Vanilla``) replace that axis of the study's
    grid; every other override goes to Hydra as it is."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    grid: dict[str, list] = {}
    rest: list[str] = []
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as exc:
        raise SpecSnapError(f"cannot parse overrides {overrides!r}: {one_line(exc)} (Hydra override grammar)") from None
    for text, override in zip(overrides, parsed):
        key = override.get_key_element()
        if key in GRID_AXES:
            if override.is_sweep_override():
                # seeds as numbers (a range sweep, seed=range(16), is numbers, not its strings)
                values = list(override.sweep_iterator() if key == "seed" else override.sweep_string_iterator())
                if key != "seed":
                    _check_sweep(override, values, text)
            else:
                value = override.value()
                values = list(value) if isinstance(value, list) else [value]
            if key == "seed":
                bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 0]
                if bad:
                    raise SpecSnapError(f"override {text!r}: seeds must be non-negative integers, got {bad[0]!r}")
            grid[key] = [int(v) if key == "seed" else str(v) for v in values]
        else:
            if not (override.is_add() or override.is_force_add() or override.is_delete()):
                _check_setting(override.key_or_group, text)
            rest.append(text)
    return grid, rest


def _check_sweep(override: Any, strings: list[Any], text: str) -> None:
    """Several values of an axis without brackets (``continuation=reset,trace:1000``) are a Hydra
    sweep, whose strings come escaped (``trace\\:1000``) or quoted: where that changed a value,
    one line saying to write the list in brackets, rather than a value that does not exist."""
    from hydra.core.override_parser.types import QuotedString

    try:
        plain = [v.text if isinstance(v, QuotedString) else str(v) for v in override.sweep_iterator()]
    except Exception:  # (a sweep Hydra expands only with a config loaded, e.g. glob(): its own check stands)
        return
    if plain == [str(v) for v in strings]:
        return
    listed = ",".join(v if re.fullmatch(r"[A-Za-z0-9_.+-]+", v) else json.dumps(v) for v in plain)
    raise SpecSnapError(f"override {text!r}: write several values as a list in brackets: "
                        f"'{override.get_key_element()}=[{listed}]'")


def _check_setting(key: str, text: str) -> None:
    """An override of a setting that does not exist (a misspelt axis, ``agnt=[...]``, or a misspelt
    key, ``sandbox.backnd=local``) is one line naming the valid choices at that level, before Hydra
    answers with its advice to append a new key."""
    top = config.read_yaml(config.conf_dir() / "config.yaml")
    settings = {k: v for k, v in top.items() if k != "defaults"}
    parts = key.split(".")
    if parts[0] in ("study", "hydra"):
        return  # the study's own file (a group) and Hydra's settings: Hydra's own check stands
    if parts[0] not in settings:
        raise SpecSnapError(f"override {text!r}: unknown setting {parts[0]!r}; grid axes: {', '.join(sorted(GRID_AXES))}; "
                            f"settings: {', '.join(sorted(settings))} (dotted, e.g. sandbox.backend=local)")
    level: object = settings[parts[0]]
    for depth, part in enumerate(parts[1:], start=1):
        if not isinstance(level, dict) or not level:
            return  # a free-form mapping (agent options): any key
        if part not in level:
            where = ".".join(parts[:depth])
            raise SpecSnapError(f"override {text!r}: {where} has no setting {part!r}; valid choices: "
                                f"{', '.join(sorted(level))}")
        level = level[part]
