"""Withholding authored facts (docs/coherence.md): a coherence workload's secrets taken from a sandbox.

A variant withholds the secrets of k motifs, the set the workload's seed fixes for k, in one of two
forms: ``delete`` removes the file; ``stub`` replaces its content with the workload's stub of
exactly the same byte length, which defines nothing. It happens either before session 1 (at the
scaffold, before the baseline commit: ``withhold: {k, mode}``) or between two sessions (an
``inject`` stage: ``inject: {after_session: 1, withhold: {k, mode}}``), so that in SpecSnap's twist
the secrets are there for session 1 and gone for the continuation: a motif survives only if what
session 1 left (its notes, its edits) carried the value across the reset.

The secrets are never in the sandbox's history (the workload's ``.gitignore`` keeps them out of
every commit the scaffold makes), nor hashed into any record or arm file in the sandbox, so
removing the file removes the value. What session 1 itself stored elsewhere is left alone: that is
what the variant measures. Nothing in the sandbox records the withholding; the record is returned
and kept by the caller outside the sandbox.
"""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath
from typing import Any

from sdcs_bench.core import safefs
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial.components import VariantConfig
from sdcs_bench.trial.workload_model import Workload
from sdcs_bench.trial.workload_registry import registered_workloads

MODES = ("delete", "stub")


def withholding_workloads() -> list[str]:
    """The registered workloads that author facts a variant can withhold (unreadable ones left out)."""
    from sdcs_bench.trial.workload import load_workload

    found = []
    for wid in registered_workloads():
        try:
            if load_workload(wid).facts is not None:
                found.append(wid)
        except SpecSnapError:
            continue
    return sorted(found)


def variant_withholding(variant: VariantConfig | dict[str, Any]) -> tuple[dict[str, Any], int | None] | None:
    """:attr:`VariantConfig.withholding` of a variant, typed or as a mapping."""
    return VariantConfig.of(variant).withholding


def check_spec(workload: Workload, spec: Any, variant_name: str) -> tuple[int, str]:
    """``(k, mode)`` of a variant's ``withhold``, or one error naming the problem and the choices."""
    where = f"variant {variant_name!r}"
    if not isinstance(spec, dict) or set(spec) != {"k", "mode"}:
        raise SpecSnapError(f"{where}: withhold is {{k: N, mode: delete|stub}}, got {spec!r}")
    if workload.facts is None:
        raise SpecSnapError(f"{where} withholds authored facts, which workload {workload.id} does not have",
                            withholding_workloads())
    mode, k = spec["mode"], spec["k"]
    if mode not in MODES:
        raise SpecSnapError(f"{where}: unknown withholding mode {mode!r}", MODES)
    levels = [n for n, _ in workload.facts.withheld]
    if isinstance(k, bool) or not isinstance(k, int) or k not in levels:
        raise SpecSnapError(f"{where}: workload {workload.id} has no withheld set for k={k!r}", map(str, levels))
    return k, mode


def _remove(sandbox: Path, rel: str) -> None:
    parent, name = str(PurePosixPath(rel).parent), PurePosixPath(rel).name
    try:
        with safefs.open_dir(sandbox, "" if parent == "." else parent) as fd:
            safefs.remove_entry(fd, name)
    except OSError:
        pass  # no directory of the sandbox's own there: nothing of the secret's to remove


def withhold(workload: Workload, sandbox: Path, k: int, mode: str) -> dict[str, Any]:
    """Withhold the secrets of the k motifs the workload's seed fixes; return the record."""
    if mode not in MODES:
        raise SpecSnapError(f"unknown withholding mode {mode!r}", MODES)
    facts = workload.facts
    if facts is None:
        raise SpecSnapError(f"workload {workload.id} authors no facts to withhold", withholding_workloads())
    paths = facts.withheld_secrets(k)
    sandbox = Path(sandbox)
    for rel in paths:  # in the agent's tree: no link it planted is followed (core.safefs)
        if mode == "delete":
            _remove(sandbox, rel)
        else:
            safefs.write_file(sandbox, rel, facts.motif(rel).stub.read_bytes(), replace_dirs=True)
    return {
        "workload": workload.id,
        "k": k,
        "mode": mode,
        "withheld": list(paths),
        "motifs": [facts.motif(p).id for p in paths],
        "at": time.time(),
    }
