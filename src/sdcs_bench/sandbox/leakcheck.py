"""The leak check run before every session: no hidden test or gold may reach the agent."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sdcs_bench.sandbox.base import Backend, SandboxLeak
from sdcs_bench.trial.workload import Workload

_MIN_HASHED_BYTES = 64  # tiny files (an empty __init__.py) are common everywhere


def secret_file_hashes(workload: Workload) -> set[str]:
    hashes = set()
    for root in workload.secret_dirs():
        for path in root.rglob("*"):
            if path.is_file() and path.stat().st_size >= _MIN_HASHED_BYTES:
                hashes.add(hashlib.sha256(path.read_bytes()).hexdigest())
    return hashes


def leak_check(workdir: Path, home: Path, workload: Workload, backend: Backend) -> dict:
    problems: list[str] = []
    canary = workload.canary.encode()
    secrets = secret_file_hashes(workload)
    checked = 0
    for path in workdir.rglob("*"):
        rel = path.relative_to(workdir)
        if not path.is_file() or rel.parts[0] == ".git":
            continue
        checked += 1
        data = path.read_bytes()
        if canary in data:
            problems.append(f"{rel} carries the workload's canary string")
        elif hashlib.sha256(data).hexdigest() in secrets:
            problems.append(f"{rel} is a copy of a hidden test or gold file")
    visible: list[Path] = []
    if backend.isolated:
        visible = backend.leak_probe(workdir, home, workload.secret_dirs())
        problems += [f"{p} is visible from inside the sandbox" for p in visible]
    if problems:
        raise SandboxLeak("leak check failed: " + "; ".join(problems))
    return {"files_checked": checked, "isolated": backend.isolated, "backend": backend.name, "ok": True}
