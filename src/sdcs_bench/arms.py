"""Arms: the files placed in the sandbox before session 1, and nothing else (SPEC §4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SpecSnapError
from .paths import project_root


@dataclass(frozen=True)
class ArmFile:
    path: str
    text: str


@dataclass(frozen=True)
class Arm:
    name: str
    description: str
    files: tuple[ArmFile, ...]
    memory_files: tuple[str, ...]
    notes_file: str | None
    notes_cap_tokens: int | None

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> Arm:
        files = []
        for raw in cfg.get("files") or []:
            if "generator" in raw:
                raise SpecSnapError(
                    f"arm {cfg['name']}: file {raw.get('path')} names generator {raw['generator']!r}, "
                    "but no generators are available in this version"
                )
            if "text" in raw:
                text = raw["text"]
            elif "source" in raw:
                text = (project_root() / raw["source"]).read_text()
            else:
                raise SpecSnapError(f"arm {cfg['name']}: file {raw.get('path')} needs 'text' or 'source'")
            files.append(ArmFile(raw["path"], text))
        memory = cfg.get("memory_files")
        return cls(
            name=cfg["name"],
            description=cfg.get("description", ""),
            files=tuple(files),
            memory_files=tuple(memory if memory is not None else (f.path for f in files)),
            notes_file=cfg.get("notes_file"),
            notes_cap_tokens=cfg.get("notes_cap_tokens"),
        )
