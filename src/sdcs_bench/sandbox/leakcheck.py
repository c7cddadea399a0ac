"""The leak check run before every session: no hidden test or gold may reach the agent."""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Iterable
from pathlib import Path

from sdcs_bench.core import safefs
from sdcs_bench.sandbox.base import Backend, SandboxLeak
from sdcs_bench.trial.workload_model import Workload
from sdcs_bench.core.timing import timed

_MIN_HASHED_BYTES = 64  # tiny files (an empty __init__.py) are common everywhere


def secret_file_hashes(workload: Workload) -> set[str]:
    hashes = set()
    for root in workload.secret_dirs():
        for path in root.rglob("*"):
            if path.is_file() and path.stat().st_size >= _MIN_HASHED_BYTES:
                hashes.add(hashlib.sha256(path.read_bytes()).hexdigest())
    return hashes


def _scan(root: Path, rel: str, canary: bytes) -> str | None:
    """``"canary"`` if the file carries the canary, else its SHA-256 (read in blocks, whatever
    its size, without following a link); None when it is not a regular file."""
    digest, tail = hashlib.sha256(), b""
    with safefs.open_regular(root, rel) as fh:
        if fh is None:
            return None
        while block := fh.read(1 << 20):
            if canary in tail + block:
                return "canary"
            digest.update(block)
            tail = block[-len(canary):]
    return digest.hexdigest()


@timed("leak check")
def leak_check(workdir: Path, home: Path, workload: Workload, backend: Backend, carried: Iterable[str] = (),
               then: tuple[str, ...] = (), env: dict[str, str] | None = None) -> dict:
    """Nothing hidden in the sandbox (no file with the workload's canary, no copy of a hidden test or
    gold file), nor in the files a continuation ``carried`` into the HOME (relative to it), and,
    with an isolating backend, nothing hidden visible from inside. With an isolating backend,
    ``then`` runs in the probe's sandbox after it (``env`` its environment); its exit status and
    stderr are under ``"then"`` (for the caller: not part of the record)."""
    problems: list[str] = []
    canary = workload.canary.encode()
    secrets = secret_file_hashes(workload)
    checked = 0
    for rel in carried:
        checked += 1
        found = _scan(home, rel, canary)
        if found == "canary" or found in secrets:
            problems.append(f"the carried HOME file {rel} carries the workload's canary or a hidden test or gold file")
    for rel, st in safefs.walk(workdir, top_skip={".git"}):
        if not stat.S_ISREG(st.st_mode):
            continue  # a link is not followed (its target is not in the sandbox), a FIFO not read
        checked += 1
        found = _scan(workdir, rel, canary)
        if found == "canary":
            problems.append(f"{rel} carries the workload's canary string")
        elif found in secrets:
            problems.append(f"{rel} is a copy of a hidden test or gold file")
    if problems:  # (before the probe: a sandbox start less for a check that has failed)
        raise SandboxLeak("leak check failed: " + "; ".join(problems))
    after: dict = {}
    if backend.isolated:
        probe = backend.probe(workdir, home, workload.secret_dirs(), then=then, env=env)
        problems += [f"{p} is visible from inside the sandbox" for p in probe.visible]
        if then:
            after["then"] = (probe.status, probe.stderr)
    if problems:
        raise SandboxLeak("leak check failed: " + "; ".join(problems))
    return {"files_checked": checked, "isolated": backend.isolated, "backend": backend.name, "ok": True, **after}
