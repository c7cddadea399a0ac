"""``specsnap add-repository``: the mechanical part of adding a real repository (docs/real_repos.md).

Given a name and a pin (a PyPI ``package==version``, or a git URL and a full commit id), it

1. finds the sdist's file and SHA-256 in the package index (the simple API, as the pipeline's
   ``source`` rule reads it: no build and no metadata step, so an sdist whose metadata disagrees
   with its file name is fine), fetches and verifies it into the cache the pipeline uses;
2. reads the layout from the tree: the import root (``src`` for a src layout), the packages, the
   test directory, the project's name, the runtime dependencies ``pyproject.toml`` declares and
   the test dependencies the project keeps (requirements files under its tests, test extras,
   tox and nox);
3. builds the repository's environment (its Python, pytest and those dependencies), then pins
   every requirement to the version it got, so the workload is reproducible;
4. runs the repository's own suite once on the pin, in the sandbox, then once more in exactly the
   tree scoring uses (only the source files and the tests are copied there), and writes the
   baseline selection: every test passing in both in ``baseline_tests.txt``, every other one in
   ``baseline_excluded.yaml`` with its outcome and first error line (no path of this machine);
5. writes the skeleton: ``workload.yaml`` (the pin, the layout, a fresh canary), an empty
   ``bugs.yaml``, ``wiring.yaml``, ``hidden/pytest.ini``, ``prompts/find_bugs.md`` and the
   registry entry ``conf/workload/<name>.yaml``.

What is left to the user is the part no tool can write: each bug's entry, hidden test and fix.
``specsnap validate-workload <name>`` then says what is missing.
"""

from __future__ import annotations

import configparser
import json
import re
import shutil
import sys
import tempfile
import tomllib
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
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
from sdcs_bench.trial.workload import load_draft_repository
from sdcs_bench.trial.workload_model import Workload

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
PLUGIN = Path(__file__).resolve().parents[1] / "sandbox" / "outcomes_plugin.py"
TEST_DIRS = ("tests", "test", "testing")
# pytest 9 reports each unittest subTest apart under its test's node id (and the test as passed when
# one of them failed): the scorer reads one report per phase, so a repository's pytest is below 9
# unless its project or --test-dep pins one
DEFAULT_PYTEST = "pytest<9"
TEST_KEYS = ("test", "tests", "testing")  # the extras and dependency groups that hold a suite's requirements
GENERIC_URL_PARTS = {"repo", "repository", "git", "src", "source", "mirror", "upstream", "code"}
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
            # the distribution's metadata beside the code (an sdist's *.egg-info): a package that reads its
            # own version (importlib.metadata) needs it in the tree scoring copies, as it is in the sandbox
            metadata = sorted(p.name for p in base.glob("*.egg-info") if p.is_dir())
            return {"import_root": root, "packages": packages, "tests": tests, "metadata": metadata}
    raise SpecSnapError("no package (a directory with __init__.py) found at the top of the source or under src/")


def project_name(tree: Path, pin: SourcePin) -> str:
    """What texts call the repository: the sdist's own name; for a git pin, the name its
    ``pyproject.toml`` or ``setup.cfg`` declares, else its URL's owner/name, else the URL's stem."""
    if pin.kind == "sdist":
        return pin.name
    declared = _declared_name(tree)
    if declared:
        return declared
    parts = [p for p in re.split(r"[/:]", pin.url.removesuffix("/").removesuffix(".git")) if p]
    if len(parts) >= 2 and parts[-1] not in GENERIC_URL_PARTS and "." not in parts[-2] and parts[-2] not in ("", "~"):
        return f"{parts[-2]}/{parts[-1]}"
    return parts[-1] if parts and parts[-1] not in GENERIC_URL_PARTS else pin.name


def _declared_name(tree: Path) -> str | None:
    """The project's name as ``pyproject.toml`` (``[project] name``) or ``setup.cfg`` declares it."""
    declared = (_toml(tree / "pyproject.toml").get("project") or {}).get("name")
    if not declared and (tree / "setup.cfg").is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string((tree / "setup.cfg").read_text(errors="replace"))
            declared = parser.get("metadata", "name", fallback=None)
        except configparser.Error:
            declared = None
    if isinstance(declared, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", declared.strip()):
        return declared.strip()
    return None


def _toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def test_dependencies(tree: Path, tests: str) -> tuple[list[str], list[str]]:
    """The requirements the project keeps for its tests, and where each group was found: the
    requirements files under its test directory and at the top (``requirements-test*.txt``,
    ``test-requirements.txt``, ``requirements/test*.txt``), the test extras and dependency groups
    of ``pyproject.toml``, ``setup.cfg`` and ``setup.py`` (a literal, never run), tox's
    ``[testenv] deps`` and nox's
    ``session.install(...)``. Editable installs, options and the project itself are left out."""
    found: dict[str, list[str]] = {}
    files = sorted({*(tree / tests).glob("requirements*.txt"), *tree.glob("requirements-test*.txt"),
                    *tree.glob("requirements_test*.txt"), *tree.glob("test-requirements*.txt"),
                    *tree.glob("test_requirements*.txt"), *tree.glob("requirements/test*.txt")})
    for path in files:
        found[path.relative_to(tree).as_posix()] = _requirements_file(tree, path, depth=0)
    pyproject = _toml(tree / "pyproject.toml")
    for table, where in (((pyproject.get("project") or {}).get("optional-dependencies") or {}, "test extras"),
                         (pyproject.get("dependency-groups") or {}, "dependency groups")):
        for key in TEST_KEYS:
            if isinstance(table.get(key), list):
                found[f"pyproject.toml {where} [{key}]"] = [str(r) for r in table[key] if isinstance(r, str)]
    if (tree / "setup.cfg").is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string((tree / "setup.cfg").read_text(errors="replace"))
            for key in TEST_KEYS:
                value = parser.get("options.extras_require", key, fallback=None)
                if value:
                    found[f"setup.cfg extras [{key}]"] = value.splitlines()
        except configparser.Error:
            pass
    for key, reqs in _setup_py_extras(tree / "setup.py").items():
        if key in TEST_KEYS:
            found[f"setup.py extras_require [{key}]"] = reqs
    if (tree / "tox.ini").is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string((tree / "tox.ini").read_text(errors="replace"))
            deps = parser.get("testenv", "deps", fallback="")
        except configparser.Error:
            deps = ""
        if deps:
            found["tox.ini [testenv] deps"] = deps.splitlines()
    if (tree / "noxfile.py").is_file():
        text = (tree / "noxfile.py").read_text(errors="replace")[:200_000]
        calls = re.findall(r"session\.install\(([^)]*)\)", text)
        found["noxfile.py session.install"] = [lit for call in calls for lit in re.findall(r"[\"']([^\"']+)[\"']", call)]
    own = _canonical(_declared_name(tree) or "")
    out: list[str] = []
    for reqs in found.values():
        for req in reqs:
            req = req.split("#", 1)[0].strip()
            if not req or req.startswith(("-", ".", "{", "/")) or "://" in req or req.startswith("git+"):
                continue  # an option, a path, a URL, a tox substitution, the project itself
            if _requirement_name(req) == own:
                continue
            out.append(req)
    return list(dict.fromkeys(out)), [where for where, reqs in found.items() if reqs]


def _setup_py_extras(path: Path) -> dict[str, list[str]]:
    """``extras_require`` of a ``setup.py``'s ``setup(...)`` call, where it is written as a literal
    (read from the syntax tree: the file is never run)."""
    import ast

    try:
        tree = ast.parse(path.read_text(errors="replace")[:500_000]) if path.is_file() else None
    except (SyntaxError, ValueError):
        return {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and any(k.arg == "extras_require" for k in node.keywords):
            value = next(k.value for k in node.keywords if k.arg == "extras_require")
            try:
                extras = ast.literal_eval(value)
            except ValueError:
                return {}
            return {str(k): [str(r) for r in v] for k, v in extras.items() if isinstance(v, (list, tuple))} \
                if isinstance(extras, dict) else {}
    return {}


def _requirements_file(tree: Path, path: Path, depth: int) -> list[str]:
    """A requirements file's lines, ``-r`` includes within the tree followed (three deep at most)."""
    out = []
    try:
        lines = path.read_text(errors="replace").splitlines()[:2000]
    except OSError:
        return []
    for line in lines:
        line = line.split(" #", 1)[0].strip()
        if line.startswith(("-r ", "--requirement ")) and depth < 3:
            included = (path.parent / line.split(None, 1)[1].strip()).resolve()
            if included.is_file() and included.is_relative_to(tree.resolve()):
                out += _requirements_file(tree, included, depth + 1)
        elif line and not line.startswith("#"):
            out.append(line)
    return out


def merge_requirements(*groups: list[str]) -> list[str]:
    """Requirements in order, one per project: a later group's entry replaces an earlier one's
    (``--test-dep pytest==7.4.4`` replaces the default ``pytest``)."""
    by_name: dict[str, str] = {}
    for group in groups:
        for req in group:
            by_name[_requirement_name(req)] = req
    return list(by_name.values())


def _dependencies(tree: Path) -> list[str]:
    """The runtime requirements ``pyproject.toml`` declares (``[project] dependencies``)."""
    return [str(d) for d in (_toml(tree / "pyproject.toml").get("project") or {}).get("dependencies") or []]


def _pinned(requirements: list[str], freeze: list[str]) -> list[str]:
    """Each requirement as ``name==version`` from the built environment's freeze."""
    versions = {}
    for line in freeze:
        name, sep, version = line.partition("==")
        if sep:
            versions[_canonical(name)] = version
    out = []
    for req in requirements:
        name = _requirement_name(req)
        out.append(f"{name}=={versions[name]}" if name in versions else req)
    return out


def _requirement_name(req: str) -> str:
    """The project a requirement names, canonical (``Foo_Bar[x]>=1`` -> ``foo-bar``)."""
    return _canonical(re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0])


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def run_suite(tree: Path, tests: str | list[str], import_root: str, env_dir: Path, backend: Backend,
              timeout_s: float = 1800) -> dict[str, dict[str, str]]:
    """The repository's own suite (``tests``: its directory, or test files), run once in the sandbox
    on a copy of ``tree`` with its environment, as its developers run it: node id -> {outcome, why}."""
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
                "--rootdir", str(copy), *([tests] if isinstance(tests, str) else tests)]
        code, out, err = backend.run(argv, workdir=copy, home=home, env=env, timeout=timeout_s,
                                     ro_binds=[Path(env_dir), Path(record["base_prefix"])])
        if code is None:
            raise SpecSnapError(f"the repository's suite did not finish within {timeout_s:g} s")
        hide = {str(copy): ".", str(home): "~", str(env_dir): "<environment>", str(record["base_prefix"]): "<python>"}
        try:
            outcomes = json.loads((scratch / "outcomes.json").read_text())
        except (OSError, ValueError):
            tail = (out + err).decode(errors="replace").strip().splitlines()[-5:]
            raise SpecSnapError(f"the repository's suite did not run (pytest exit {code}): "
                                f"{unplaced(' | '.join(tail), hide)}") from None
        return {t: {**o, "why": unplaced(o.get("why") or "", hide)} for t, o in outcomes.items()}


def unplaced(text: str, where: dict[str, str]) -> str:
    """``text`` with the paths of this machine it names replaced (``where``: path -> what to say), and
    any other temporary directory of SpecSnap's cut from the path: nothing machine-specific is written."""
    for path, said in sorted(where.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path + "/", "" if said == "." else said + "/").replace(path, said)
    return re.sub(r"/(?:[^/\s'\"]+/)*specsnap-[A-Za-z0-9_.-]+/(?:(?:tree|copy)/)?", "", text)


def add_repository(name: str | None, pin: SourcePin, *, python: str, test_deps: list[str], results: Path,
                   backend: Backend, display: str | None = None, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Everything but the bugs (see the module's docstring); returns what was written. ``name``: the
    workload id (None: made from the project's name); ``display``: what texts call the repository
    (None: :func:`project_name`)."""
    if name is not None:
        _check_name(name)
    interpreter = find_interpreter(python)  # a missing Python stops here, before any download
    cache = CacheLayout(str(results))
    say(f"source: {pin.describe()}")
    source_dir = Path(cache.source_dir(pin.key))
    fetch_source(pin, source_dir)
    tree = source_tree(source_dir)
    display = display or project_name(tree, pin)
    if name is None:
        name = re.sub(r"[^a-z0-9_]+", "_", display.rpartition("/")[2].lower()).strip("_")
        name = name if NAME.match(name) else f"repo_{name}"
    _check_name(name)
    pin = replace(pin, name=display) if pin.kind == "git" else pin  # (an sdist keeps its file's name: it is fetched by it)
    layout = _layout(tree)
    _check_no_shadow(layout)
    say(f"{display} as workload {name}: packages {', '.join(layout['packages'])} under {layout['import_root']}, "
        f"tests in {layout['tests']}/")
    kept, where = test_dependencies(tree, layout["tests"])
    if kept:
        say(f"test dependencies the project keeps ({'; '.join(where)}): {', '.join(kept)}")
    wanted = merge_requirements([DEFAULT_PYTEST], _dependencies(tree), kept, test_deps)
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
        raise SpecSnapError(f"no test of the repository's suite passed on the pin ({len(others)} did not)"
                            f"{_first_error(others)}: check the environment (--test-dep) and the Python version")
    workload_dir, registry = project_root() / "real_repos" / name, conf_dir() / "workload" / f"{name}.yaml"
    # (an id holding an address is written up to it: a prefix pytest's --deselect and validation match)
    unstable = {t[:_ADDRESS.search(t).start()]: {"outcome": "unstable id", "why": ""} for t in passed
                if _ADDRESS.search(t)}
    passed = [t for t in passed if not _ADDRESS.search(t)]
    others = sorted([*others, *unstable.items()])
    say(f"running them again in the tree scoring uses (only {', '.join(_globs(layout))} and {layout['tests']}/)")
    with tempfile.TemporaryDirectory(prefix="specsnap-staging-") as staging:
        draft = Path(staging) / name
        for twinned in (False, True, True, True):  # as scored; then with every test twinned (until none differs)
            _write_skeleton(draft, Path(staging) / "registry.yaml", name, pin, spec, layout, passed, others, display)
            found = _fail_when_scored(load_draft_repository(draft).with_source(tree, env_dir), tree, backend, twinned)
            passed = [t for t in passed if t not in found]
            others = sorted([*others, *found.items()])
            if twinned and not found:
                break
    if not passed:
        raise SpecSnapError(f"no test of the repository's suite passes in the tree scoring uses (only the source files, "
                            f"{', '.join(_globs(layout))}, and {layout['tests']}/ are copied there){_first_error(others)}")
    kinds = Counter(o["outcome"] for _, o in others)
    said = [f"{n} {what}" for what, n in (("fail in the tree scoring uses", kinds["failed in the scored tree"]),
                                          ("give another verdict when run twice", kinds["twin differs"]),
                                          ("have an id that changes between runs", kinds["unstable id"])) if n]
    say(f"suite: {len(passed)} passed, {len(others)} left out of the baseline (each with its reason"
        + (f"; of them {', '.join(said)}" if said else "") + ")")
    for existing in (workload_dir, registry):  # (checked again: the name may have been made from the source)
        if existing.exists():
            raise SpecSnapError(f"{existing} already exists: choose another name, or remove it first")
    _write_skeleton(workload_dir, registry, name, pin, spec, layout, passed, others, display)
    return {"workload_dir": workload_dir, "registry": registry, "baseline": len(passed), "excluded": len(others),
            "environment_dir": env_dir, "source_dir": source_dir, "name": name, "display": display}


def _check_no_shadow(layout: dict[str, Any]) -> None:
    """A package at the top of the tree named as a standard or test-runner module is never copied
    to the scored tree (it would shadow what runs the tests): refused before any work."""
    from sdcs_bench.scoring.scorer import SHADOW_NAMES

    if layout["import_root"] == ".":
        shadowing = [p for p in layout["packages"] if p in SHADOW_NAMES]
        if shadowing:
            raise SpecSnapError(f"package {shadowing[0]} sits at the top of the repository under the name of a module the "
                                "test runner needs (the standard library's, or pytest's and its dependencies'), so "
                                "scoring cannot copy it; pin a release with a src layout")


def _check_name(name: str) -> None:
    if not NAME.match(name):
        raise SpecSnapError(f"repository name {name!r}: use lowercase letters, digits and _ (a workload id)")
    root = project_root()
    for existing in (root / "real_repos" / name, conf_dir() / "workload" / f"{name}.yaml"):
        if existing.exists():
            raise SpecSnapError(f"{existing} already exists: choose another name, or remove it first")


def _first_error(others: list[tuple[str, dict[str, str]]]) -> str:
    """The suite's first collection error (or else its first failure), said after the counts."""
    for kinds in (("collection error",), ("failed", "error in setup", "error in call", "error in teardown")):
        for test, outcome in others:
            if outcome["outcome"] in kinds and outcome.get("why"):
                return f"; first {outcome['outcome']}: {test}: {outcome['why']}"
    return ""


def _globs(layout: dict[str, Any]) -> list[str]:
    src = layout["import_root"]
    code = [f"{src}/**/*.py"] if src != "." else [f"{p}/**/*.py" for p in layout["packages"]]
    return code + [f"{m}/*" if src == "." else f"{src}/{m}/*" for m in layout.get("metadata", [])]


SCORED_TREE = ("passes on the whole source and fails in the tree scoring uses (only the source files and the tests "
               "are copied there: a test that reads another file of the repository cannot pass)")


TWICE = ("gives another verdict when run a second time (scoring runs an identical twin of each test: this one leaves "
         "state behind, or depends on the order tests run in)")
UNSTABLE_ID = ("its id is not the same from one run to the next (it holds a memory address): listed up to the address, "
               "which selects it by prefix")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def _fail_when_scored(workload: Workload, tree: Path, backend: Backend, twinned: bool) -> dict[str, dict[str, str]]:
    """The baseline tests that fail when the pin is scored as an agent's tree is (the scorer itself,
    on the draft workload), each with its reason and, where the run says it, its first error line.
    ``twinned``: every test run with its twins (an identical one, and a changed one where it can
    carry one), as scoring may: a test whose verdict changes when run a second time shows now, not
    as a tampered run of an agent's later."""
    from sdcs_bench.scoring.junit import HIDDEN_PREFIX
    from sdcs_bench.scoring.scorer import evaluate_tree, first_errors
    from sdcs_bench.scoring.sentinels import SentinelSettings

    shares = (1.0, 1.0, 1) if twinned else (0.0, 0.0, 0)
    result = evaluate_tree(workload, tree, backend, sentinels=SentinelSettings(*shares))
    first = first_errors(result["run"]["output"])
    if not result["run"]["report_trusted"] and not result["tampered"]:
        said = next(iter(first.values()), "") or " | ".join(result["run"]["output"].strip().splitlines()[-3:])
        raise SpecSnapError("the repository's suite could not be run as scoring runs it (only the source files and the "
                            f"tests are copied there): {unplaced(said, {}).replace(f'{HIDDEN_PREFIX}/', '')[:300]}")
    if twinned:  # (every test here passed when run once: a failure or a disagreeing twin is the second run's)
        evidence = result["tamper_evidence"]
        twice = {t: {"outcome": "twin differs", "why": ""} for t in workload.baseline_tests
                 if (not result["tampered"] and not result["passed"][t]) or any(t in line for line in evidence)}
        if result["tampered"] and not twice:
            raise SpecSnapError(f"the repository's suite could not be run as scoring runs it: {evidence[0]}")
        return twice
    lost = {}
    for test in (t for t, ok in result["passed"].items() if not ok):
        why = first.get(f"{HIDDEN_PREFIX}/{test.partition('::')[0]}", "")
        lost[test] = {"outcome": "failed in the scored tree", "why": unplaced(why, {}).replace(f"{HIDDEN_PREFIX}/", "")[:300]}
    return lost


def _write_skeleton(workload_dir: Path, registry: Path, name: str, pin: SourcePin, spec: EnvironmentSpec,
                    layout: dict[str, Any], passed: list[str], others: list[tuple[str, dict[str, str]]],
                    display: str | None = None) -> None:
    canary = f"SPECSNAP-CANARY {name} {uuid.uuid4()}"
    shown = display or pin.name
    what = f"{shown} {pin.version}" if pin.kind == "sdist" else f"{shown} (commit {pin.commit[:12]})"
    src = layout["import_root"]
    globs = _globs(layout)
    packages = ", ".join(f"`{p}`" for p in layout["packages"])
    where = (f"under `{src}/`" if src != "." else
             f"in the package{'s' if len(layout['packages']) > 1 else ''} {packages} at the top of the repository")
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
        said = {"failed in the scored tree": SCORED_TREE, "twin differs": TWICE, "unstable id": UNSTABLE_ID}.get(
            outcome["outcome"], f"{outcome['outcome']} on the pinned source")
        reason = said + (f": {outcome['why']}" if outcome["why"] else "")
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
        "prompts/find_bugs.md": f"This repository is {what}: its code is {where}, its tests are in "
                                f"`{layout['tests']}/`. Users have reported that some of its behaviour is "
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
