"""``specsnap add-repository``: the mechanical part of adding a real repository (docs/real_repos.md).

Given a name and a pin (a PyPI ``package==version``, or a git URL and a full commit id), it

1. finds the sdist's file and SHA-256 in the package index (the simple API, as the pipeline's
   ``source`` rule reads it: no build and no metadata step, so an sdist whose metadata disagrees
   with its file name is fine), fetches and verifies it into the cache the pipeline uses;
2. reads the layout from the tree: the import root (``src`` for a src layout), the packages, the
   test directory, and the runtime dependencies ``pyproject.toml`` declares;
3. builds the repository's environment (its Python, pytest and those dependencies), then pins
   every requirement to the version it got, so the workload is reproducible;
4. runs the repository's own suite once on the pin, in the sandbox, and writes the baseline
   selection: every passing test in ``baseline_tests.txt``, every other one in
   ``baseline_excluded.yaml`` with its outcome and first error line;
5. writes the skeleton: ``workload.yaml`` (the pin, the layout, a fresh canary), an empty
   ``bugs.yaml``, ``wiring.yaml``, ``hidden/pytest.ini``, ``prompts/find_bugs.md`` and the
   registry entry ``conf/workload/<name>.yaml``.

What is left to the user is the part no tool can write: each bug's entry, hidden test and fix.
``specsnap validate-workload <name>`` then says what is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import tomllib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import conf_dir, project_root
from sdcs_bench.pipeline.layout import CacheLayout
from sdcs_bench.sandbox.base import Backend, base_env
from sdcs_bench.sandbox.environment import build_environment, environment_key, find_interpreter, read_environment, \
    with_environment
from sdcs_bench.sandbox.source import fetch_source, sdist_pin
from sdcs_bench.trial.repo import EnvironmentSpec, SourcePin, source_tree

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
PLUGIN = Path(__file__).resolve().parents[1] / "sandbox" / "outcomes_plugin.py"
TEST_DIRS = ("tests", "test", "testing")
NOT_PACKAGES = {*TEST_DIRS, "docs", "doc", "examples", "example", "scripts", "benchmarks", "bench", "tools", "build"}


def parse_pin(pypi: str | None, git: str | None, commit: str | None) -> SourcePin:
    """The pin asked for on the command line (one error naming the forms when it is neither)."""
    if bool(pypi) == bool(git):
        raise SpecSnapError("give the source as --pypi PACKAGE==VERSION, or as --git URL --commit COMMIT")
    if pypi:
        name, sep, version = pypi.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise SpecSnapError(f"--pypi {pypi!r}: expected PACKAGE==VERSION, e.g. --pypi attrs==23.1.0")
        return sdist_pin(name.strip(), version.strip())
    if not commit:
        raise SpecSnapError("--git needs --commit: the full 40-digit commit id to pin")
    return SourcePin.from_config({"kind": "git", "url": git, "commit": commit}, "--git/--commit")


def _layout(tree: Path) -> dict[str, Any]:
    """Import root, packages and test directory of an unpacked source tree."""
    tests = next((d for d in TEST_DIRS if (tree / d).is_dir()), None)
    if tests is None:
        raise SpecSnapError(f"the source has no test directory ({', '.join(TEST_DIRS)}): SpecSnap scores a "
                            "repository's bugs with its own suite as the baseline")
    for root in ("src", "."):
        base = tree / root
        packages = sorted(p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
                          and p.name not in NOT_PACKAGES and p.name.isidentifier()) if base.is_dir() else []
        if packages:
            return {"import_root": root, "packages": packages, "tests": tests}
    raise SpecSnapError("no package (a directory with __init__.py) found at the top of the source or under src/")


def _dependencies(tree: Path) -> list[str]:
    """The runtime requirements ``pyproject.toml`` declares (``[project] dependencies``)."""
    path = tree / "pyproject.toml"
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    return [str(d) for d in (data.get("project") or {}).get("dependencies") or []]


def _pinned(requirements: list[str], freeze: list[str]) -> list[str]:
    """Each requirement as ``name==version`` from the built environment's freeze."""
    versions = {}
    for line in freeze:
        name, sep, version = line.partition("==")
        if sep:
            versions[_canonical(name)] = version
    out = []
    for req in requirements:
        name = _canonical(re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0])
        out.append(f"{name}=={versions[name]}" if name in versions else req)
    return out


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def run_suite(tree: Path, tests: str, import_root: str, env_dir: Path, backend: Backend,
              timeout_s: float = 1800) -> dict[str, dict[str, str]]:
    """The repository's own suite, run once in the sandbox on a copy of ``tree`` with its
    environment, as its developers run it: node id -> {outcome, why}."""
    with tempfile.TemporaryDirectory(prefix="specsnap-suite-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(tree, copy, symlinks=True)
        scratch = copy / ".specsnap"
        scratch.mkdir()
        shutil.copyfile(PLUGIN, scratch / "specsnap_outcomes.py")
        home = scratch / "home"
        home.mkdir()
        record = read_environment(env_dir)
        env = with_environment(base_env(home), record["python"])
        env["PYTHONPATH"] = f"{scratch}:{copy / import_root}" if import_root != "." else f"{scratch}:{copy}"
        env["SPECSNAP_OUTCOMES"] = str(scratch / "outcomes.json")
        argv = [record["python"], "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "specsnap_outcomes",
                "--rootdir", str(copy), tests]
        code, out, err = backend.run(argv, workdir=copy, home=home, env=env, timeout=timeout_s,
                                     ro_binds=[Path(env_dir), Path(record["base_prefix"])])
        if code is None:
            raise SpecSnapError(f"the repository's suite did not finish within {timeout_s:g} s")
        try:
            return json.loads((scratch / "outcomes.json").read_text())
        except (OSError, ValueError):
            tail = (out + err).decode(errors="replace").strip().splitlines()[-5:]
            raise SpecSnapError(f"the repository's suite did not run (pytest exit {code}): {' | '.join(tail)}") from None


def add_repository(name: str, pin: SourcePin, *, python: str, test_deps: list[str], results: Path, backend: Backend,
                   say: Callable[[str], None] = print) -> dict[str, Any]:
    """Everything but the bugs (see the module's docstring); returns what was written."""
    if not NAME.match(name):
        raise SpecSnapError(f"repository name {name!r}: use lowercase letters, digits and _ (a workload id)")
    root = project_root()
    workload_dir, registry = root / "real_repos" / name, conf_dir() / "workload" / f"{name}.yaml"
    for existing in (workload_dir, registry):
        if existing.exists():
            raise SpecSnapError(f"{existing} already exists: choose another name, or remove it first")
    interpreter = find_interpreter(python)  # a missing Python stops here, before any download
    cache = CacheLayout(str(results))
    say(f"source: {pin.describe()}")
    source_dir = Path(cache.source_dir(pin.key))
    fetch_source(pin, source_dir)
    tree = source_tree(source_dir)
    layout = _layout(tree)
    say(f"layout: packages {', '.join(layout['packages'])} under {layout['import_root']}, tests in {layout['tests']}/")
    wanted = [*test_deps, *_dependencies(tree)]
    first = EnvironmentSpec.from_config({"python": python, "install": [wanted]}, "add-repository")
    say(f"environment: Python {python}, {', '.join(wanted)}")
    record = build_environment(first, interpreter, Path(cache.env_dir(environment_key(first, interpreter))))
    spec = EnvironmentSpec.from_config({"python": python, "install": [_pinned(wanted, record["freeze"])]},
                                       "add-repository")
    env_dir = Path(cache.env_dir(environment_key(spec, interpreter)))
    build_environment(spec, interpreter, env_dir)  # pinned: the environment every later run builds
    say("running the repository's own suite once on the pin (in the sandbox)")
    outcomes = run_suite(tree, layout["tests"], layout["import_root"], env_dir, backend)
    passed = sorted(t for t, o in outcomes.items() if o["outcome"] == "passed" and "::" in t)
    others = sorted((t, o) for t, o in outcomes.items() if o["outcome"] != "passed")
    if not passed:
        raise SpecSnapError(f"no test of the repository's suite passed on the pin ({len(others)} did not): "
                            "check the environment (--test-dep) and the Python version")
    say(f"suite: {len(passed)} passed, {len(others)} left out of the baseline (each with its reason)")
    _write_skeleton(workload_dir, registry, name, pin, spec, layout, passed, others)
    return {"workload_dir": workload_dir, "registry": registry, "baseline": len(passed), "excluded": len(others),
            "environment_dir": env_dir, "source_dir": source_dir}


def _write_skeleton(workload_dir: Path, registry: Path, name: str, pin: SourcePin, spec: EnvironmentSpec,
                    layout: dict[str, Any], passed: list[str], others: list[tuple[str, dict[str, str]]]) -> None:
    canary = f"SPECSNAP-CANARY {name} {uuid.uuid4()}"
    what = f"{pin.name} {pin.version}" if pin.kind == "sdist" else f"{pin.name} at {pin.commit[:12]}"
    src = layout["import_root"]
    globs = [f"{src}/**/*.py"] if src != "." else [f"{p}/**/*.py" for p in layout["packages"]]
    install = [list(step.packages) for step in spec.steps]
    meta = {
        "id": name,
        "family": "real_repo",
        "title": f"{what}: hidden bugs",
        "description": f"{what}. Its bugs are hidden: the agent is asked to find and fix bugs without being told "
                       "which; each counts as resolved when its hidden test passes with the repository's own "
                       "tests still green.",
        "budget_tokens": 2_000_000,
        "canary": canary,
        "source": pin.to_dict(),
        "environment": {"python": spec.python, "install": install},
        "import_root": src,
        "import_mode": "prepend",
        "packages": layout["packages"],
        "source_globs": globs,
        "visible_tests": [layout["tests"]],
        "protected": [f"{layout['tests']}/**"],
        "source_tests": layout["tests"],
        "hidden": {"dir": "hidden", "pytest_ini": "hidden/pytest.ini"},
        "gold_dir": "fixes",
        "wiring": "wiring.yaml",
        "baseline_tests": {"file": "baseline_tests.txt"},
        "excluded_tests": {"file": "baseline_excluded.yaml"},
        "requirements": {"file": "bugs.yaml"},
        "schedule": [{"session": "S1", "prompt": "prompts/find_bugs.md", "cleave": "first_py_edit"},
                     {"session": "S2", "prompt": "neutral", "cleave": "none"}],
    }
    excluded: dict[str, list[str]] = {}
    for test, outcome in others:
        reason = f"{outcome['outcome']} on the pinned source" + (f": {outcome['why']}" if outcome["why"] else "")
        excluded.setdefault(reason, []).append(test)
    files = {
        "workload.yaml": f"# {what}, added by `specsnap add-repository` (docs/real_repos.md).\n"
                         "# Pure data: the pin, its environment, the bug list (bugs.yaml), the hidden tests (hidden/)\n"
                         "# and the fixes (fixes/), which you write.\n" + yaml.safe_dump(meta, sort_keys=False, width=100),
        "bugs.yaml": "# One entry per hidden bug, in patch order (docs/real_repos.md), e.g.\n"
                     "# - id: BUG-1\n#   behaviour: \"what is wrong, as a user would report it\"\n"
                     "#   tests: [tests/test_hidden_bug_1.py::test_the_behaviour]   # under hidden/\n"
                     "#   gold: fixes/BUG-1.patch                                   # applies to the pin\n[]\n",
        "baseline_tests.txt": "# The repository's own tests that pass on the pinned source (run once by add-repository).\n"
                              + "".join(f"{t}\n" for t in passed),
        "baseline_excluded.yaml": "# The repository's own tests left out of the baseline, with the reason (run once by\n"
                                  f"# add-repository, Python {spec.python}).\n"
                                  + (yaml.safe_dump([{"tests": tests, "reason": reason} for reason, tests in
                                                     sorted(excluded.items())], sort_keys=False, width=100,
                                                    allow_unicode=True) if excluded else "[]\n"),
        "wiring.yaml": f"# Boundary rules of {name} (import-linter contracts): none yet.\n"
                       f"root_packages: {json.dumps(layout['packages'])}\ncontracts: []\n",
        "hidden/pytest.ini": f"# {canary}\n[pytest]\njunit_family = xunit2\n",
        "hidden/tests/README.md": f"<!-- {canary} -->\nEach bug's hidden tests go here (`test_*.py`, the canary line in each).\n",
        "fixes/README.md": f"<!-- {canary} -->\nEach bug's fix goes here: a patch that `git apply`s to the pinned source.\n",
        "prompts/find_bugs.md": f"This repository is {what} (its code is under `{src if src != '.' else 'the top directory'}`, "
                                f"its tests in `{layout['tests']}/`). Users have reported that some of its behaviour is "
                                "wrong in this release.\n\nFind and fix bugs in the library: read the code, reproduce each "
                                "problem you find with a small script or test, fix it in the library's source, keep the "
                                "existing test suite passing (`python -m pytest -q`), and commit your work.\n",
    }
    for rel, text in files.items():
        path = workload_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(f"# {what}: added by `specsnap add-repository`.\nid: {name}\npath: real_repos/{name}\n")


def _python_default() -> str:
    return "%d.%d" % sys.version_info[:2]
