"""Arms: the files placed in the sandbox before session 1, and nothing else (docs/protocol.md).

An arm file is inline ``text``, one or more ``source`` files of the project (concatenated), or the output of a named
``generator`` run on the scaffolded baseline. ``source: {workload: PATH}`` takes the file at PATH in
the workload's own directory (a real repository's hint files: a partial AGENTS.md, a hand-written
backlog), so one arm serves every repository that has the file, and a repository added later
needs no change to the arm; such an arm runs only on workloads that have it (on others the planner
skips the cell: :class:`~sdcs_bench.core.errors.ArmNotApplicable`). Texts may say
``{notes_cap_tokens}``: the arm's
notes cap for the workload at hand (``notes_cap_tokens`` is a number, or a mapping from
workload id to number with an optional ``default``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import ArmNotApplicable, SpecSnapError
from sdcs_bench.trial.generators import GENERATORS, generate
from sdcs_bench.core.paths import project_root


@dataclass(frozen=True)
class ArmFile:
    path: str
    text: str | None = None  # None for generated files
    generator: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    workload_file: str | None = None  # a file of the workload's own directory, read per workload


@dataclass(frozen=True)
class Arm:
    name: str
    description: str
    files: tuple[ArmFile, ...]
    memory_files: tuple[str, ...]
    notes_file: str | None
    notes_caps: Any = None  # int, or {workload id: int, "default": int}

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> Arm:
        files = []
        for raw in cfg.get("files") or []:
            where = f"arm {cfg['name']}: file {raw.get('path')}"
            if "generator" in raw:
                if raw["generator"] not in GENERATORS:
                    raise SpecSnapError(f"{where}: unknown generator {raw['generator']!r}", GENERATORS)
                files.append(ArmFile(raw["path"], generator=raw["generator"], options=dict(raw.get("options") or {})))
                continue
            if "text" in raw:
                text = raw["text"]
            elif isinstance(raw.get("source"), dict):
                if set(raw["source"]) != {"workload"} or not isinstance(raw["source"]["workload"], str):
                    raise SpecSnapError(f"{where}: a source mapping is {{workload: PATH}}, a file of the workload's "
                                        f"own directory (got {raw['source']!r})")
                files.append(ArmFile(raw["path"], workload_file=raw["source"]["workload"]))
                continue
            elif "source" in raw:
                text = _read_sources(raw["source"], where)
            else:
                raise SpecSnapError(f"{where} needs 'text', 'source' or 'generator'")
            files.append(ArmFile(raw["path"], text=text))
        memory = cfg.get("memory_files")
        return cls(
            name=cfg["name"],
            description=cfg.get("description", ""),
            files=tuple(files),
            memory_files=tuple(memory if memory is not None else (f.path for f in files)),
            notes_file=cfg.get("notes_file"),
            notes_caps=cfg.get("notes_cap_tokens"),
        )

    def for_workload(self, workload_id: str, workload_root: Path) -> Arm:
        """This arm with the files it takes from the workload's own directory read
        (:class:`ArmNotApplicable` when the workload does not have one: the planner skips that cell)."""
        files = []
        for f in self.files:
            if f.workload_file is not None:
                path = Path(workload_root) / f.workload_file
                if not path.is_file():
                    raise ArmNotApplicable(self.name, f.path, f.workload_file, workload_id)
                f = ArmFile(f.path, text=path.read_text())
            files.append(f)
        return replace(self, files=tuple(files))

    def to_config(self) -> dict[str, Any]:
        """The arm with every file's text read (``source`` files included; call ``for_workload``
        first for files of the workload's own), so whatever reads it later (a pipeline stage) needs
        no project file beside it."""
        files = []
        for f in self.files:
            if f.generator:
                files.append({"path": f.path, "generator": f.generator, "options": dict(f.options)})
            elif f.workload_file is not None:
                files.append({"path": f.path, "source": {"workload": f.workload_file}})
            else:
                files.append({"path": f.path, "text": f.text})
        return {"name": self.name, "description": self.description, "files": files,
                "memory_files": list(self.memory_files), "notes_file": self.notes_file,
                "notes_cap_tokens": self.notes_caps}

    def notes_cap(self, workload_id: str) -> int | None:
        caps = self.notes_caps
        if isinstance(caps, dict):
            return caps.get(workload_id, caps.get("default"))
        return caps

    def render(self, tree: Path, workload_id: str, packages: list[str], private: tuple[str, ...] = ()) -> dict[str, str]:
        """The arm's files for this workload: path -> content (generators read ``tree``; they hash
        none of the ``private`` files, relative to ``tree``)."""
        cap = self.notes_cap(workload_id)
        out = {}
        for f in self.files:
            if f.generator is not None:
                out[f.path] = generate(f.generator, tree, packages, f.options, private)
            elif f.workload_file is not None:
                raise SpecSnapError(f"arm {self.name}: file {f.path} comes from the workload's directory; "
                                    "resolve the arm with for_workload() first")
            else:
                out[f.path] = f.text.replace("{notes_cap_tokens}", str(cap)) if cap is not None else f.text
        return out


def _read_sources(source: Any, where: str) -> str:
    """The text of one ``source`` file of the project, or of several concatenated."""
    sources = source if isinstance(source, list) else [source]
    missing = [s for s in sources if not (project_root() / s).is_file()]
    if missing:
        raise SpecSnapError(f"{where}: source {', '.join(missing)} does not exist")
    return "".join((project_root() / s).read_text() for s in sources)
