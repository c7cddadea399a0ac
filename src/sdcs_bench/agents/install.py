"""Install and locate the pinned real harness CLIs (``harnesses/pins.yaml``).

npm harnesses share one prefix (``<home>/npm``); each PyPI harness gets its own virtualenv
(``<home>/venvs/<name>``), since their dependency pins would fight each other and ours. A stamp
file per install records the pin it holds, so a second install is a no-op and a changed pin
reinstalls exactly that harness.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.core.paths import project_root


@dataclass(frozen=True)
class Pin:
    name: str
    registry: str  # npm | pypi
    package: str
    version: str
    bin: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}" if self.registry == "npm" else f"{self.package}=={self.version}"


def harness_home() -> Path:
    env = os.environ.get("SPECSNAP_HARNESS_HOME")
    return Path(env) if env else Path.home() / ".cache" / "specsnap" / "harnesses"


def pins() -> dict[str, Pin]:
    data = yaml.safe_load((project_root() / "harnesses" / "pins.yaml").read_text())
    return {name: Pin(name=name, **{k: str(v) for k, v in spec.items()}) for name, spec in data.items()}


def install_dir(pin: Pin) -> Path:
    return harness_home() / ("npm" if pin.registry == "npm" else f"venvs/{pin.name}")


def managed_binary(pin: Pin) -> Path:
    root = install_dir(pin)
    return root / "node_modules" / ".bin" / pin.bin if pin.registry == "npm" else root / "bin" / pin.bin


def _stamp(pin: Pin) -> Path:
    return install_dir(pin) / ".specsnap-pins" / pin.name


def installed(pin: Pin) -> bool:
    stamp = _stamp(pin)
    return stamp.is_file() and stamp.read_text().strip() == pin.spec and managed_binary(pin).exists()


def install(names: list[str] | None = None, *, force: bool = False, log=print) -> list[str]:
    """Install the named harnesses (all by default); return the names actually (re)installed."""
    table = pins()
    for name in names or []:
        if name not in table:
            raise unknown("harness", name, table)
    chosen = [table[n] for n in (names or list(table))]
    todo = [p for p in chosen if force or not installed(p)]
    npm = [p for p in todo if p.registry == "npm"]
    if npm:
        if shutil.which("npm") is None:
            raise SpecSnapError("npm is not on PATH; install Node.js 20 or newer to install " +
                                ", ".join(p.name for p in npm))
        root = harness_home() / "npm"
        root.mkdir(parents=True, exist_ok=True)
        if not (root / "package.json").exists():
            (root / "package.json").write_text(json.dumps({"name": "specsnap-harnesses", "private": True}) + "\n")
        log(f"npm install {' '.join(p.spec for p in npm)}")
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(root),
                        *(p.spec for p in npm)], check=True)
    for pin in (p for p in todo if p.registry == "pypi"):
        venv = install_dir(pin)
        if force and venv.exists():
            shutil.rmtree(venv)
        log(f"pip install {pin.spec} (own virtualenv)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        pin.spec], check=True)
    for pin in todo:
        if not managed_binary(pin).exists():
            raise SpecSnapError(f"installing {pin.spec} did not produce {managed_binary(pin)}")
        _stamp(pin).parent.mkdir(parents=True, exist_ok=True)
        _stamp(pin).write_text(pin.spec + "\n")
    return [p.name for p in todo]


def resolve_binary(harness: str, override: str | None = None) -> Path:
    """The executable of a harness: the agent's own ``binary`` setting, else the managed install."""
    if override:
        found = shutil.which(override) if os.sep not in override else (override if Path(override).exists() else None)
        if found is None:
            raise SpecSnapError(f"binary {override!r} of harness {harness} was not found")
        return Path(found).resolve()
    table = pins()
    if harness not in table:
        raise unknown("installable harness", harness, table)
    pin = table[harness]
    if not installed(pin):
        raise SpecSnapError(f"harness {harness} ({pin.spec}) is not installed; run `specsnap install-harnesses "
                            f"{harness}` (it installs under {harness_home()})")
    return managed_binary(pin)
