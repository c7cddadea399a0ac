"""Workloads generated from a seed (docs/coherence.md): a registry entry names a family and a seed.

``conf/workload/<id>.yaml`` with ``generate: {family: motifs, seed: 11}`` registers a workload whose
directory is written by the family's generator, deterministically, the first time it is used (by
planning, validation or a stage on a node that lacks it) under ``tiers/generated/<id>/`` (or the
entry's ``path``). A new seed is one registry file. The directory carries its generator's stamp
(``generated:`` in its workload.yaml); one written by another version of the generator is
rewritten. It is never edited by hand: ``validate-workload`` regenerates it and compares.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.core.paths import project_root

GENERATED_DIR = "tiers/generated"


def _families() -> dict[str, tuple[Callable[[str, int], dict[str, bytes]], Callable[[], str]]]:
    """Family -> (its files from (workload id, seed), its generator version)."""
    from sdcs_bench.trial import motifs

    return {motifs.FAMILY: (motifs.workload_files, motifs.generator_version)}


def check_spec(spec: Any, where: str) -> tuple[str, int]:
    """``generate: {family, seed}`` from a registry file, checked: one error naming the file."""
    families = _families()
    if not isinstance(spec, dict) or set(spec) != {"family", "seed"}:
        raise SpecSnapError(f"{where}: 'generate' is {{family: NAME, seed: N}}, got {spec!r}")
    family = spec["family"]
    if family not in families:
        raise unknown(f"generated workload family (in {where})", str(family), families)
    seed = spec["seed"]
    if family == "motifs":
        from sdcs_bench.trial.motifs import check_seed

        try:
            check_seed(seed)
        except SpecSnapError as exc:
            raise SpecSnapError(f"{where}: {exc.message}", exc.choices) from None
    return str(family), int(seed)


def default_dir(workload_id: str) -> Path:
    return project_root() / GENERATED_DIR / workload_id


def expected_files(workload_id: str, family: str, seed: int) -> dict[str, bytes]:
    return _families()[family][0](workload_id, seed)


def _stamp(root: Path) -> dict[str, Any] | None:
    import yaml

    try:
        return (yaml.safe_load((root / "workload.yaml").read_text()) or {}).get("generated")
    except (OSError, yaml.YAMLError, AttributeError):
        return None


def ensure_generated(workload_id: str, family: str, seed: int, root: Path | None = None) -> Path:
    """The workload's directory, written now if it is missing or was written by another version
    of its generator. Safe when several processes do it at once: each writes a private copy and
    renames it into place; a directory that is already current is never touched."""
    root = Path(root) if root is not None else default_dir(workload_id)
    want = {"family": family, "seed": seed, "generator": _families()[family][1]()}
    if _stamp(root) == want:
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{workload_id}-", dir=root.parent))
    try:
        for rel, data in expected_files(workload_id, family, seed).items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if root.exists():
            if _stamp(root) == want:  # another process wrote it meanwhile
                return root
            old = Path(tempfile.mkdtemp(prefix=f".{workload_id}-old-", dir=root.parent))
            os.replace(root, old / "tree")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, root)
        except OSError:
            if _stamp(root) != want:  # not a concurrent writer of the same files: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def differences(root: Path, workload_id: str, family: str, seed: int) -> list[str]:
    """How a generated directory differs from what its generator writes for its seed (for
    ``validate-workload``): missing, extra and changed files."""
    want = expected_files(workload_id, family, seed)
    have = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
    out = [f"{rel} is missing" for rel in sorted(set(want) - set(have))]
    out += [f"{rel} is not the generator's" for rel in sorted(set(have) - set(want))]
    out += [f"{rel} differs from the generator's output" for rel in sorted(set(want) & set(have)) if want[rel] != have[rel]]
    return out
