"""Arms: the files placed in the sandbox before session 1, and nothing else (docs/protocol.md).

An arm file is inline ``text``, one or more ``source`` files of the project (concatenated), or the output of a named
``generator`` run on the scaffolded baseline. A ``source`` may also be a mapping from workload id to
file(s): a text written for each workload (a real repository's hand-written backlog); such an arm
runs only on the workloads it names. Texts may say ``{notes_cap_tokens}``: the arm's
notes cap for the workload at hand (``notes_cap_tokens`` is a number, or a mapping from
workload id to number with an optional ``default``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial.generators import GENERATORS, generate
from sdcs_bench.core.paths import project_root


@dataclass(frozen=True)
class ArmFile:
    path: str
    text: str | None = None  # None for generated files
    generator: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    by_workload: dict[str, str] | None = None  # workload id -> text, for a text written per workload


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
            elif isinstance(raw.get("texts"), dict):  # per-workload texts, already read
                files.append(ArmFile(raw["path"], by_workload={str(w): str(t) for w, t in raw["texts"].items()}))
                continue
            elif isinstance(raw.get("source"), dict):
                files.append(ArmFile(raw["path"], by_workload={str(w): _read_sources(src, where)
                                                               for w, src in raw["source"].items()}))
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

    def to_config(self, workload_id: str | None = None) -> dict[str, Any]:
        """The arm resolved for ``workload_id``: every file's text read (``source`` files included), so
        whatever reads it later (a pipeline stage) needs no project file beside it."""
        files = []
        for f in self.files:
            if f.generator:
                files.append({"path": f.path, "generator": f.generator, "options": dict(f.options)})
            elif f.by_workload is not None:
                if workload_id is None:
                    files.append({"path": f.path, "texts": dict(f.by_workload)})
                    continue
                if workload_id not in f.by_workload:
                    raise SpecSnapError(f"arm {self.name}: file {f.path} is written for the workloads "
                                        f"{', '.join(sorted(f.by_workload))}, not {workload_id}",
                                        sorted(f.by_workload))
                files.append({"path": f.path, "text": f.by_workload[workload_id]})
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

    def render(self, tree: Path, workload_id: str, packages: list[str]) -> dict[str, str]:
        """The arm's files for this workload: path -> content (generators read ``tree``)."""
        cap = self.notes_cap(workload_id)
        out = {}
        for f in self.files:
            if f.generator is not None:
                out[f.path] = generate(f.generator, tree, packages, f.options)
            elif f.by_workload is not None:
                if workload_id in f.by_workload:
                    out[f.path] = f.by_workload[workload_id]
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
