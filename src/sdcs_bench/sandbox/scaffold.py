"""Scaffold (docs/protocol.md): baseline + arm files, git init, one baseline commit, a manifest."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from sdcs_bench import __version__
from sdcs_bench.trial.arms import Arm
from sdcs_bench.sandbox.guard import exempt_patterns
from sdcs_bench.sandbox.guard_install import install_guard
from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.gitutil import commit_all, init_repo
from sdcs_bench.sandbox.records import META
from sdcs_bench.trial.standards import layout_for, write_layout
from sdcs_bench.trial.workload_model import Workload
from sdcs_bench.core.timing import timed

IGNORED = ("__pycache__/", "*.pyc", ".pytest_cache/")


def manifest(root: Path, private: tuple[str, ...] = ()) -> dict[str, str]:
    """SHA-256 of every file of the working tree (``.git`` excluded), except ``private`` files (a
    coherence workload's secrets: the hash of a small integer's file gives the integer away)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] != ".git" and rel.as_posix() not in private:
            out[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@timed("scaffold files")
def scaffold(workload: Workload, arm: Arm, dest: Path, variant: dict[str, Any] | None = None,
             withhold: tuple[int, str] | None = None, max_file_bytes: int | None = None) -> dict[str, Any]:
    """A fresh sandbox. ``variant`` matters only to a workload whose baseline it arranges (the
    standards family's layout: STYLE.md, the existing handlers' forms, the sealed task queue).
    ``withhold`` ``(k, mode)`` takes a coherence workload's secrets away before anything reads the
    baseline (docs/coherence.md); its record is returned as ``withheld`` and written nowhere in the
    sandbox."""
    dest = dest.resolve()
    layout = layout_for(workload, variant)  # a bad layout is one error before anything is written
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise SpecSnapError(f"{dest} already exists and is not an empty directory; choose a new --dest")
    shutil.copytree(workload.baseline_dir, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    if layout is not None:
        write_layout(workload.standards, layout, dest)
    withheld = None
    if withhold is not None:
        from sdcs_bench.sandbox.withhold import withhold as take_away

        withheld = take_away(workload, dest, *withhold)
    # Generators read the packages where they are imported from (``src/`` in a src layout).
    files = arm.for_workload(workload.id, workload.root).render(dest / workload.import_root, workload.id,
                                                                list(workload.packages),
                                                                private=workload.private_files)
    for path, text in files.items():
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    init_repo(dest)
    (dest / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (dest / ".git" / "info" / "exclude").write_text("\n".join(IGNORED) + "\n")
    # (``max_file_bytes``: the snapshots' cap on one file; the baseline's packs stay well under it)
    baseline_commit = commit_all(dest, f"SpecSnap baseline: {workload.id} + arm {arm.name}",
                                 max_pack_bytes=max_file_bytes // 2 if max_file_bytes else None)
    install_guard(dest, exempt_patterns(workload.protected, arm.memory_files))
    meta = {
        "specsnap_version": __version__,
        "workload": workload.id,
        "workload_fingerprint": workload.fingerprint(),
        "arm": arm.name,
        "memory_files": list(arm.memory_files),
        "notes_file": arm.notes_file,
        "notes_cap_tokens": arm.notes_cap(workload.id),
        "baseline_commit": baseline_commit,
        **({"standards_layout": layout.settings()} if layout is not None else {}),
        "manifest": manifest(dest, workload.private_files),
    }
    (dest / META).write_text(json.dumps(meta, indent=2))
    return {**meta, "withheld": withheld} if withheld is not None else meta
