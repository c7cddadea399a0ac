"""A real repository as data (docs/real_repos.md): where its code comes from and what it runs in.

- :class:`SourcePin`: ``{kind: sdist, name, version, sha256}`` (a source distribution from the
  package index, verified by its SHA-256) or ``{kind: git, url, commit}`` (one full commit id).
- :class:`EnvironmentSpec`: the interpreter version and the pinned test dependencies, installed in
  order with pip (a step may be ``no_deps``), under optional pip constraints.

Fetching a source and building an environment are the sandbox's (``sdcs_bench.sandbox.source``,
``sdcs_bench.sandbox.environment``); this module only reads and checks the data.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError

SOURCE_KINDS = ("sdist", "git")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
TREE = "tree"  # the unpacked source, inside its cache directory
_VERSION = re.compile(r"^\d+\.\d+$")


@dataclass(frozen=True)
class SourcePin:
    kind: str
    name: str = ""
    version: str = ""
    sha256: str = ""
    url: str = ""
    commit: str = ""

    @classmethod
    def from_config(cls, data: dict[str, Any], where: str) -> SourcePin:
        kind = data.get("kind")
        if kind not in SOURCE_KINDS:
            raise SpecSnapError(f"{where}: source kind {kind!r} is not one of {', '.join(SOURCE_KINDS)}")
        if kind == "sdist":
            missing = [k for k in ("name", "version", "sha256") if not data.get(k)]
            if missing:
                raise SpecSnapError(f"{where}: an sdist source needs {', '.join(missing)}")
            if not _SHA256.match(str(data["sha256"])):
                raise SpecSnapError(f"{where}: sha256 {data['sha256']!r} is not 64 lowercase hex digits")
            return cls("sdist", name=str(data["name"]), version=str(data["version"]), sha256=str(data["sha256"]))
        missing = [k for k in ("url", "commit") if not data.get(k)]
        if missing:
            raise SpecSnapError(f"{where}: a git source needs {', '.join(missing)}")
        if not _COMMIT.match(str(data["commit"])):
            raise SpecSnapError(f"{where}: commit {data['commit']!r} is not a full 40-digit commit id")
        return cls("git", name=str(data.get("name") or Path(str(data["url"])).stem), url=str(data["url"]),
                   commit=str(data["commit"]))

    @property
    def key(self) -> str:
        """The pin's own hash: what its cache directory is named by."""
        return self.sha256 if self.kind == "sdist" else self.commit

    def describe(self) -> str:
        return (f"{self.name}=={self.version} (sdist sha256 {self.sha256[:12]}…)" if self.kind == "sdist"
                else f"{self.url} @ {self.commit[:12]}")

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v}


@dataclass(frozen=True)
class InstallStep:
    packages: tuple[str, ...]
    no_deps: bool = False


@dataclass(frozen=True)
class EnvironmentSpec:
    python: str                       # "3.11": major.minor
    steps: tuple[InstallStep, ...]    # pip installs, in order
    constraints: tuple[str, ...] = ()  # pip constraints for every step (PIP_CONSTRAINT)

    @classmethod
    def from_config(cls, data: dict[str, Any], where: str) -> EnvironmentSpec:
        python = str(data.get("python", ""))
        if not _VERSION.match(python):
            raise SpecSnapError(f"{where}: environment.python must be a major.minor version such as \"3.11\" "
                                f"(got {data.get('python')!r})")
        steps = []
        for raw in data.get("install") or []:
            if isinstance(raw, list):
                steps.append(InstallStep(tuple(map(str, raw))))
            elif isinstance(raw, dict) and raw.get("packages"):
                steps.append(InstallStep(tuple(map(str, raw["packages"])), bool(raw.get("no_deps", False))))
            else:
                raise SpecSnapError(f"{where}: each environment.install step is a list of requirements or "
                                    f"{{packages: [...], no_deps: true}} (got {raw!r})")
        return cls(python, tuple(steps), tuple(map(str, data.get("constraints") or ())))

    def to_dict(self) -> dict[str, Any]:
        return {"python": self.python, "constraints": list(self.constraints),
                "install": [{"packages": list(s.packages), "no_deps": s.no_deps} for s in self.steps]}


def source_tree(source_dir: Path) -> Path:
    """The unpacked source inside a fetched source's cache directory."""
    return Path(source_dir) / TREE
