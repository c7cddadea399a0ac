"""A real repository's own Python environment: its interpreter and its pinned test dependencies.

Built once per pin (a virtual environment, which the pipeline keeps under ``<results>/_cache/envs/<key>/``,
the key a hash of the interpreter's exact version and path and of the install steps) and reused by
every trial: the
agent's sessions run with its ``bin/`` first on PATH, and the scorer runs the hidden tests with its
interpreter. The code under test is never installed into it (it is imported from the sandbox or the
scoring copy), so one environment serves every sandbox.

The interpreter is found, not assumed (docs/real_repos.md): ``$SPECSNAP_PYTHON_<X>_<Y>`` when set,
else ``python<X.Y>`` (or ``python3``) on PATH, else the interpreters pyenv provides on this machine
(``pyenv root`` or ``$PYENV_ROOT`` or ``~/.pyenv``, ``versions/<X.Y>.*``), which are often installed
but not on PATH.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.fsutil import atomic_write
from sdcs_bench.trial.repo import EnvironmentSpec

RECORD = "env.json"


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: str       # the full version, e.g. 3.11.2
    found_by: str      # override | PATH | pyenv

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "version": self.version, "found_by": self.found_by}


def override_variable(version: str) -> str:
    return "SPECSNAP_PYTHON_" + version.replace(".", "_")


def _version_of(exe: str) -> str | None:
    try:
        proc = subprocess.run([exe, "-I", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _pyenv_roots() -> list[Path]:
    roots = []
    if shutil.which("pyenv"):
        proc = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout.strip():
            roots.append(Path(proc.stdout.strip()))
    if os.environ.get("PYENV_ROOT"):
        roots.append(Path(os.environ["PYENV_ROOT"]))
    roots.append(Path.home() / ".pyenv")
    return list(dict.fromkeys(roots))


def find_interpreter(version: str) -> Interpreter:
    """The interpreter for ``major.minor`` (see the module's docstring for the order); one clear
    error naming every place looked at when there is none."""
    var = override_variable(version)
    if os.environ.get(var):
        exe = os.environ[var]
        got = _version_of(exe)
        if got is None or not got.startswith(version + "."):
            raise SpecSnapError(f"${var}={exe} is {'not a working interpreter' if got is None else 'Python ' + got}, "
                                f"not Python {version}")
        return Interpreter(str(Path(exe).absolute()), got, "override")
    for name in (f"python{version}", "python3"):
        exe = shutil.which(name)
        got = exe and _version_of(exe)
        if got and got.startswith(version + "."):
            return Interpreter(exe, got, "PATH")
    looked = []
    for root in _pyenv_roots():
        looked.append(str(root / "versions"))
        candidates = sorted((root / "versions").glob(f"{version}.*"),
                            key=lambda p: [int(x) if x.isdigit() else -1 for x in p.name.split(".")], reverse=True)
        for cand in candidates:
            exe = cand / "bin" / f"python{version}"
            got = exe.is_file() and _version_of(str(exe))
            if got and got.startswith(version + "."):
                return Interpreter(str(exe), got, "pyenv")
    raise SpecSnapError(f"Python {version} is not available: not python{version} on PATH, not in pyenv "
                        f"({', '.join(looked)}), and ${var} is not set; install it, or set "
                        f"{var}=/path/to/python{version}")


def environment_key(spec: EnvironmentSpec, interpreter: Interpreter) -> str:
    data = json.dumps({"spec": spec.to_dict(), "python": interpreter.version, "path": interpreter.path},
                      sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:20]


def venv_python(env_dir: Path) -> Path:
    return Path(env_dir) / "venv" / "bin" / "python"


def _run(argv: list[str], env: dict[str, str], what: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
        raise SpecSnapError(f"building the environment: {what} failed:\n  " + "\n  ".join(tail))
    return proc.stdout


def build_environment(spec: EnvironmentSpec, interpreter: Interpreter, env_dir: Path) -> dict[str, Any]:
    """Build the environment in ``env_dir`` unless it is complete (``env.json`` is written last);
    concurrent builders of one key wait for each other."""
    env_dir = Path(env_dir).resolve()  # one spelling: what the venv records is what sandboxes bind
    env_dir.mkdir(parents=True, exist_ok=True)
    with open(env_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record_path = env_dir / RECORD
        if record_path.is_file() and venv_python(env_dir).is_file():
            return json.loads(record_path.read_text())
        venv = env_dir / "venv"
        shutil.rmtree(venv, ignore_errors=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
        _run([interpreter.path, "-m", "venv", str(venv)], env, f"{interpreter.path} -m venv")
        if spec.constraints:
            constraints = env_dir / "constraints.txt"
            constraints.write_text("\n".join(spec.constraints) + "\n")
            env["PIP_CONSTRAINT"] = str(constraints)
        python = str(venv_python(env_dir))
        for step in spec.steps:
            argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    *(["--no-deps"] if step.no_deps else []), *step.packages]
            _run(argv, env, f"pip install {' '.join(step.packages)}")
        freeze = _run([python, "-m", "pip", "freeze", "--all"], env, "pip freeze").split()
        base = _run([python, "-I", "-c", "import sys; print(sys.base_prefix)"], env, "reading sys.base_prefix").strip()
        record = {"key": env_dir.name, "interpreter": interpreter.to_dict(), "spec": spec.to_dict(),
                  "python": python, "bin": str(venv / "bin"), "base_prefix": base, "freeze": freeze}
        atomic_write(record_path, json.dumps(record, indent=2))
        return record


def read_environment(env_dir: Path) -> dict[str, Any]:
    record_path = Path(env_dir) / RECORD
    if not record_path.is_file():
        raise SpecSnapError(f"the repository environment {env_dir} is not built ({RECORD} is missing); the "
                            "pipeline's environment rule builds it, or run `specsnap build-env`")
    return json.loads(record_path.read_text())


def environment_access(env_dir: Path | None) -> tuple[str | None, list[Path]]:
    """(the environment's interpreter, the paths a sandboxed process needs to read to run it);
    ``(None, [])`` for a workload without an environment of its own."""
    if env_dir is None:
        return None, []
    record = read_environment(env_dir)
    return record["python"], [Path(env_dir), Path(record["base_prefix"])]


def with_environment(env: dict[str, str], python: str | None) -> dict[str, str]:
    """``env`` with the environment's ``bin/`` first on PATH (so ``python`` and ``pytest`` are the
    repository's own)."""
    if python is None:
        return env
    bindir = str(Path(python).parent)
    return {**env, "PATH": f"{bindir}:{env.get('PATH', '')}", "VIRTUAL_ENV": str(Path(bindir).parent)}
