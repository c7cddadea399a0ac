"""Named generators for arm files (docs/protocol.md): content computed from the scaffolded baseline.

An arm references a generator by name (``generator: app_map``) with options; adding an arm that
uses an existing generator needs no code.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import unknown


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _public_symbols(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            args = [a.arg for a in node.args.posonlyargs + node.args.args]
            if node.args.vararg:
                args.append("*" + node.args.vararg.arg)
            elif node.args.kwonlyargs:
                args.append("*")
            args += [a.arg for a in node.args.kwonlyargs]
            names.append(f"{node.name}({', '.join(args)})")
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            methods = [n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and not n.name.startswith("_")]
            names.append(f"class {node.name}" + (f" [{', '.join(methods)}]" if methods else ""))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper() and not t.id.startswith("_")]
    return names


def _imports(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    found = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):  # function-local imports count too
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
    return sorted(found)


def app_map(tree: Path, packages: list[str], *, hashes: bool = False, private: tuple[str, ...] = ()) -> str:
    """Packages, modules, public symbols and imports of the baseline, read from its syntax tree;
    with ``hashes``, the SHA-256 of every module (the Gate I manifest) but the ``private`` ones (a
    coherence workload's secrets, which a hash of a small file would give away)."""
    lines = [
        "# app_map.md",
        "",
        "Generated from the syntax tree of the baseline when this workspace was set up.",
    ]
    if hashes:
        lines.append("Each module's SHA-256 is the one it had at setup (see AGENTS.md: drift check).")
    for package in packages:
        lines += ["", f"## package `{package}`"]
        for path in sorted((tree / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            source = path.read_bytes()
            module = _module_name(tree, path)
            parsed = ast.parse(source)
            header = f"- `{path.relative_to(tree).as_posix()}` (`{module}`)"
            if hashes and path.relative_to(tree).as_posix() not in private:
                header += f" sha256 `{hashlib.sha256(source).hexdigest()}`"
            lines.append(header)
            symbols = _public_symbols(parsed)
            imports = [i for i in _imports(parsed, module, path.name == "__init__.py") if i and i != "__future__"]
            if symbols:
                lines.append(f"  - public: {'; '.join(symbols)}")
            if imports:
                lines.append(f"  - imports: {', '.join(imports)}")
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[..., str]] = {"app_map": app_map}


def generate(name: str, tree: Path, packages: list[str], options: dict[str, Any] | None = None,
             private: tuple[str, ...] = ()) -> str:
    if name not in GENERATORS:
        raise unknown("arm file generator", name, GENERATORS)
    return GENERATORS[name](tree, packages, **(options or {}), private=private)
