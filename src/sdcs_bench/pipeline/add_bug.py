"""``specsnap add-bug``: a real repository's bug from an upstream fix, in one command
(docs/real_repos.md#adding-a-bug-add-bug).

Given a workload added by ``add-repository`` and a fix (a commit of the repository's history, or a
fix and test patch pair: ``import-tasks``), it

1. splits the fix into the **fix patch** (the source files the workload scores: its
   ``source_globs``) and the **hidden tests** (the test modules it adds or changes; files that are
   neither, such as docs and changelogs, are left out and named);
2. writes each changed test module as a new hidden test file holding only the tests the fix adds
   or changes (with everything else of the module they need: imports, helpers, fixtures), beside
   the repository's own tests as scoring places them;
3. checks, by running them: each hidden test fails on the pin and passes with the fix (the ones
   that do not are left out, and a fix with none left is refused); the fix applies to the pin
   alone and after the workload's other fixes; the repository's own baseline stays green with
   it; and, on the workload drafted with the bug, the same in the tree scoring uses;
4. only then writes ``fixes/<ID>.patch``, the hidden test files and the ``bugs.yaml`` entry
   (its behaviour line drafted from the commit message, for the user to edit).

Every refusal is one line naming its reason; a refused bug writes nothing.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.sandbox.base import Backend
from sdcs_bench.trial.workload import load_draft_repository
from sdcs_bench.trial.workload_model import Workload

_SHA = re.compile(r"^[0-9a-f]{4,40}$")
_ISSUE = re.compile(r"(?:#|issues/|pull/)(\d+)")
MAX_PATCH_BYTES = 4 << 20  # a fix larger than this is no single bug
# git's own diff only: no external diff driver or text conversion a history's config may name
DIFF = ("diff", "--no-renames", "--no-ext-diff", "--no-textconv")


@dataclass
class Fix:
    """An upstream fix, split: the source part as a patch, and each test module it adds or changes
    (its text after the fix, and the lines the fix added or changed in it)."""

    patch: str
    source_files: list[str]
    tests: dict[str, str]
    changed_lines: dict[str, set[int]]
    left_out: list[str] = field(default_factory=list)  # neither source nor test (docs, changelogs, CI)
    message: str = ""
    origin: dict[str, str] = field(default_factory=dict)  # what bugs.yaml records of where it came from


# -- reading a fix from a history --------------------------------------------------------------------
def _git(gitdir: Path, *argv: str, check: bool = True) -> str:
    proc = subprocess.run(["git", "--git-dir", str(gitdir), *argv], capture_output=True, text=True,
                          env={"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin",
                               "HOME": "/nonexistent"})
    if check and proc.returncode != 0:
        raise SpecSnapError(f"git {' '.join(argv[:2])}: {' '.join(proc.stderr.split())[:300]}")
    return proc.stdout


def history_gitdir(workload: Workload, history: Path | None, cache: Path) -> Path:
    """The repository's history: ``history`` (a clone, bare or not), else for a git pin a bare
    clone of its URL kept in the cache; an sdist pin needs ``history``."""
    if history is not None:
        probe = subprocess.run(["git", "-C", str(history), "rev-parse", "--absolute-git-dir"], capture_output=True,
                               text=True)
        if probe.returncode != 0:
            raise SpecSnapError(f"--history {history}: not a git repository (a clone of {workload.id}'s upstream)")
        return Path(probe.stdout.strip())
    if workload.source.kind != "git":
        raise SpecSnapError(f"workload {workload.id} is pinned to an sdist ({workload.source.describe()}), which has "
                            "no history: give a clone of its upstream repository with --history GITDIR")
    gitdir = cache / "history" / workload.source.key
    if not gitdir.is_dir():
        gitdir.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["git", "clone", "-q", "--bare", workload.source.url, str(gitdir)], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            shutil.rmtree(gitdir, ignore_errors=True)
            raise SpecSnapError(f"cannot clone {workload.source.url}: {' '.join(proc.stderr.split())[:300]}; "
                                "give a clone with --history GITDIR")
    return gitdir


def is_test_path(workload: Workload, rel: str) -> bool:
    """A test module or test support file of the repository's own suite."""
    under = workload.source_tests and (rel + "/").startswith(workload.source_tests.rstrip("/") + "/")
    return bool(under) or rel.rpartition("/")[2] == "conftest.py" or _is_test_module(rel)


def _is_test_module(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def fix_from_commit(workload: Workload, gitdir: Path, sha: str) -> Fix:
    """The commit ``sha`` of the history, split (against its first parent)."""
    if not _SHA.match(sha.lower()):
        raise SpecSnapError(f"--fix-commit {sha!r}: a commit id (hex digits)")
    full = _git(gitdir, "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}", check=False).strip()
    if not full:
        raise SpecSnapError(f"commit {sha} is not in the history at {gitdir}: fetch it, or name the fix's own commit")
    parents = _git(gitdir, "rev-list", "--parents", "-n", "1", full).split()[1:]
    if not parents:
        raise SpecSnapError(f"commit {full[:12]} has no parent: it adds the project, it fixes nothing")
    parent = parents[0]
    changes = [line.split("\t") for line in _git(gitdir, *DIFF, "--name-status", parent, full).splitlines()
               if line.strip()]
    source, tests, left_out = _classify(workload, [(c[0], c[-1]) for c in changes], f"commit {full[:12]}")
    patch = _git(gitdir, *DIFF, "--binary", parent, full, "--", *source)
    if len(patch.encode()) > MAX_PATCH_BYTES:
        raise SpecSnapError(f"commit {full[:12]}'s fix is {len(patch.encode()):,} bytes: more than one bug's")
    texts = {rel: _git(gitdir, "show", "--no-textconv", f"{full}:{rel}") for rel in tests}
    changed = {rel: plus_lines(_git(gitdir, *DIFF, "-U0", parent, full, "--", rel)) for rel in tests}
    message = _git(gitdir, "log", "-1", "--format=%B", full)
    issue = _ISSUE.search(message)
    repo = _remote_repo(gitdir)  # owner/name where the history says it (its origin), so the source can be looked up
    return Fix(patch, source, texts, changed, left_out, message,
               {"fix": f"{repo}@{full[:12]}" if repo else full,
                **({"upstream": f"{repo or ''}#{issue.group(1)}"} if issue else {})})


def _remote_repo(gitdir: Path) -> str | None:
    """owner/name of the history's origin (a clone of a hosted repository), else None."""
    url = _git(gitdir, "config", "--get", "remote.origin.url", check=False).strip()
    m = re.search(r"[:/]([A-Za-z0-9][A-Za-z0-9._-]*)/([A-Za-z0-9][A-Za-z0-9._-]*?)(?:\.git)?/?$", url)
    hosted = url.startswith(("https://", "http://", "ssh://", "git://")) or re.match(r"^[\w.-]+@[\w.-]+:", url)
    return f"{m.group(1)}/{m.group(2)}" if m and hosted else None


def _classify(workload: Workload, changes: list[tuple[str, str]], what: str) -> tuple[list[str], list[str], list[str]]:
    """A fix's changed files (status, path) as source, test modules and the rest; refusals said."""
    from sdcs_bench.scoring.scorer import _glob

    source, tests, left_out = [], [], []
    for status, rel in changes:
        if is_test_path(workload, rel):
            if status.startswith("D"):
                raise SpecSnapError(f"the fix deletes the test file {rel}: a bug's hidden tests are tests it adds or "
                                    "changes")
            if not _is_test_module(rel):
                raise SpecSnapError(f"the fix changes {rel}, which is test support, not a test module: the hidden tests "
                                    "run beside the pinned copy of the repository's own tests, so they cannot carry it")
            tests.append(rel)
        elif any(_glob(rel, pat) for pat in workload.source_globs):
            source.append(rel)
        else:
            left_out.append(rel)
    if not source:
        raise SpecSnapError(f"{what} changes no source file the workload scores ({', '.join(workload.source_globs)}): "
                            "there is no fix to hide")
    if not tests:
        raise SpecSnapError(f"{what} adds or changes no test module: name the commit that adds the fix's tests, or "
                            "write the hidden test by hand (docs/real_repos.md)")
    return source, tests, left_out


def split_patch(patch: str) -> list[tuple[str, str, str]]:
    """A unified diff (git's form) as (status, path, its part of the diff), one per file."""
    parts = re.split(r"(?m)^(?=diff --git )", patch)
    out = []
    for part in (p for p in parts if p.startswith("diff --git ")):
        new = re.search(r"(?m)^\+\+\+ (?:b/)?(.+?)\s*$", part)
        old = re.search(r"(?m)^--- (?:a/)?(.+?)\s*$", part)
        header = re.match(r"diff --git a/(\S+) b/(\S+)", part)
        path = (new.group(1) if new and new.group(1) != "/dev/null" else
                old.group(1) if old and old.group(1) != "/dev/null" else header.group(2) if header else "")
        status = "D" if re.search(r"(?m)^deleted file mode", part) else "A" if re.search(r"(?m)^new file mode", part) else "M"
        out.append((status, path, part))
    return out


def plus_lines(diff: str) -> set[int]:
    """The new file's line numbers a diff adds (with any context)."""
    lines: set[int] = set()
    current = None
    for line in diff.splitlines():
        m = re.match(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
        if m:
            current = int(m.group(1))
        elif current is not None and line.startswith("+") and not line.startswith("+++"):
            lines.add(current)
            current += 1
        elif current is not None and line.startswith(" "):
            current += 1
    return lines


def fix_from_patches(workload: Workload, patch: str, test_patch: str, origin: dict[str, str], message: str) -> Fix:
    """A fix given as its source patch and its test patch (a SWE-bench instance's ``patch`` and
    ``test_patch``), both against the pin: the test modules' texts are the pin's with the test
    patch applied."""
    parts = split_patch(patch) + split_patch(test_patch)
    source, tests, left_out = _classify(workload, [(st, rel) for st, rel, _ in parts], "the instance")
    by_path = {rel: part for _, rel, part in parts}
    with tempfile.TemporaryDirectory(prefix="specsnap-test-patch-") as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(workload.baseline_dir, tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        test_diff = Path(tmp) / "tests.patch"
        test_diff.write_text("".join(by_path[rel] for rel in tests))
        proc = subprocess.run(["git", "apply", str(test_diff)], cwd=tree, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SpecSnapError(f"the test patch does not apply to the pinned source: {' '.join(proc.stderr.split())[:300]}")
        texts = {rel: (tree / rel).read_text() for rel in tests}
    return Fix("".join(by_path[rel] for rel in source), source, texts, {rel: plus_lines(by_path[rel]) for rel in tests},
               left_out, message, origin)


# -- the hidden test file ----------------------------------------------------------------------------
def _span(node: ast.AST) -> set[int]:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return set(range(first, node.end_lineno + 1))


def _is_test_function(node: ast.AST, prefix: str = "test") -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(prefix)


def _is_test_class(node: ast.AST) -> bool:
    if not isinstance(node, ast.ClassDef):
        return False
    bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
    return node.name.startswith("Test") or "TestCase" in bases


def hidden_module(text: str, changed: set[int], keep: set[str] | None = None) -> tuple[str, list[str]]:
    """A test module cut to the tests the fix added or changed (and all else it holds: imports,
    helpers, fixtures, a test class's other members); the tests kept, as ``name`` or
    ``Class::name`` (``keep``: only those of them). Lines are removed, never rewritten."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise SpecSnapError(f"a test module the fix changes does not parse: {exc}") from None
    drop: set[int] = set()
    kept: list[str] = []
    for node in tree.body:
        if _is_test_function(node):
            if _span(node) & changed and (keep is None or node.name in keep):
                kept.append(node.name)
            else:
                drop |= _span(node)
        elif _is_test_class(node):
            methods = [m for m in node.body if _is_test_function(m)]
            hit = [m for m in methods if _span(m) & changed and (keep is None or f"{node.name}::{m.name}" in keep)]
            if not hit:
                drop |= _span(node)
                continue
            kept += [f"{node.name}::{m.name}" for m in hit]
            for m in methods:
                if m not in hit:
                    drop |= _span(m)
    lines = text.splitlines(keepends=True)
    return "".join(line for n, line in enumerate(lines, start=1) if n not in drop), kept


def hidden_name(bug_id: str, rel: str) -> str:
    """The hidden file a test module of the fix becomes (beside the repository's own tests)."""
    stem = rel.rpartition("/")[2].removesuffix(".py").removeprefix("test_").removesuffix("_test")
    return f"test_{re.sub(r'[^a-z0-9]+', '_', bug_id.lower()).strip('_')}_{stem}.py"


# -- checking and writing ------------------------------------------------------------------------------
def add_bug(workload: Workload, fix: Fix, *, backend: Backend, bug_id: str | None = None,
            behaviour: str | None = None, wanted: list[str] | None = None,
            say: Callable[[str], None] = print) -> dict[str, Any]:
    """Check ``fix`` as a bug of ``workload`` (its source fetched and environment built) and write
    it (module docstring); its bugs.yaml entry, and ``upstream_tests``: each hidden test's id in the
    fix's own test module. ``wanted``: the hidden tests asked for (``file::name`` of the fix's test
    modules, e.g. an instance's FAIL_TO_PASS); the others found are not kept."""
    from sdcs_bench.pipeline.add_repo import run_suite
    from sdcs_bench.pipeline.validate import _apply_problem

    known = [r.id for r in workload.requirements]
    bug_id = bug_id or _next_id(workload, known)
    if bug_id in known:
        raise SpecSnapError(f"bug {bug_id} already exists in {workload.id}'s bugs.yaml: name another with --id", known)
    if fix.left_out:
        say(f"left out of the fix (neither source the workload scores nor tests): {', '.join(fix.left_out)}")
    tests_dir = workload.source_tests or "tests"
    hidden: dict[str, str] = {}  # hidden/<rel> -> text
    origin: dict[str, str] = {}  # hidden/<rel> -> the fix's test module it is cut from
    candidates: dict[str, str] = {}  # node id under hidden/ -> its upstream test
    for rel, text in fix.tests.items():
        cut, names = hidden_module(text, fix.changed_lines[rel])
        if not names:
            continue
        target = f"{tests_dir}/{hidden_name(bug_id, rel)}"
        hidden[target], origin[target] = f"# {workload.canary}\n{cut}", rel
        candidates.update({f"{target}::{n}": f"{rel}::{n}" for n in names})
    if wanted is not None:
        asked = {w.partition("[")[0] for w in wanted}
        candidates = {nid: up for nid, up in candidates.items() if up.partition("[")[0] in asked}
    if not candidates:
        raise SpecSnapError("the fix adds or changes no test function" + (" of those asked for" if wanted else "")
                            + ": there is no hidden test to keep")
    with tempfile.TemporaryDirectory(prefix="specsnap-add-bug-") as tmp:
        pin = _copy_with(workload.baseline_dir, Path(tmp) / "pin", {k.removeprefix(f"{tests_dir}/"): v
                                                                    for k, v in hidden.items()}, tests_dir)
        patch = Path(tmp) / "fix.patch"
        patch.write_text(fix.patch)
        problem = _apply_problem(pin, patch)
        if problem:
            raise SpecSnapError(f"the fix does not apply to the pinned source: {problem}")
        fixed = Path(tmp) / "fixed"
        shutil.copytree(pin, fixed, symlinks=True)
        subprocess.run(["git", "apply", str(patch)], cwd=fixed, check=True, capture_output=True)
        files = sorted(hidden)
        say("running the hidden tests on the pin and with the fix, and the repository's suite with the fix")
        on_pin = run_suite(pin, files, workload.import_root, workload.environment_dir, backend)
        with_fix = run_suite(fixed, [tests_dir], workload.import_root, workload.environment_dir, backend)
        broken = [t for t in workload.baseline_tests if (with_fix.get(t) or {}).get("outcome") != "passed"]
        if broken:
            why = (with_fix.get(broken[0]) or {}).get("why") or "not run"
            raise SpecSnapError(f"the fix changes an existing baseline test: {broken[0]} fails with it ({why})"
                                + (f", and {len(broken) - 1} more" if len(broken) > 1 else "")
                                + "; its hidden test would contradict the repository's own suite")
        tests = _bug_tests(candidates, on_pin, with_fix, say)
        # every test left in a hidden file is listed: the files are cut again to the tests kept (a test
        # with a parameter that passes on the pin, or not asked for, is left out whole)
        whole = {b for b in {t.partition("[")[0] for t in tests}
                 if all(t in tests for t in {*on_pin, *with_fix} if t.partition("[")[0] == b)}
        if not whole:
            raise SpecSnapError(f"no hidden test passes with the fix in every parameter and fails on the pin in every "
                                f"one: {tests[0]}")
        tests = [t for t in tests if t.partition("[")[0] in whole]
        for target, rel in list(origin.items()):
            names = {b.partition("::")[2] for b in whole if b.startswith(target + "::")}
            if names:
                hidden[target] = f"# {workload.canary}\n{hidden_module(fix.tests[rel], fix.changed_lines[rel], names)[0]}"
            else:
                del hidden[target]
        _check_with_others(workload, patch, Path(tmp))
        entry = {"id": bug_id, **fix.origin,
                 "behaviour": behaviour or _behaviour(fix.message),
                 "files": fix.source_files, "tests": tests, "gold": f"fixes/{bug_id}.patch"}
        staged = Path(tmp) / "workload"
        shutil.copytree(workload.root, staged)
        _write_bug(staged, workload, entry, fix.patch, hidden)
        _check_scored(load_draft_repository(staged).with_source(workload.baseline_dir, workload.environment_dir),
                      entry, backend)
    _write_bug(workload.root, workload, entry, fix.patch, hidden)
    upstream = []  # (what each hidden test was upstream: what an instance's FAIL_TO_PASS names)
    for nid in tests:
        base, sep, params = nid.partition("[")
        upstream.append(candidates[base] + sep + params)
    return {**entry, "upstream_tests": upstream}


def _copy_with(source: Path, dest: Path, files: dict[str, str], tests_dir: str) -> Path:
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, text in files.items():
        (dest / tests_dir / rel).write_text(text)
    return dest


def _bug_tests(candidates: dict[str, str], on_pin: dict, with_fix: dict, say: Callable[[str], None]) -> list[str]:
    """The hidden tests that fail on the pin and pass with the fix (collected node ids, parameters
    included); the others are said and left out, and none left is a refusal."""
    kept, passing_on_pin, failing_with_fix = [], [], []
    for nid in candidates:
        run = sorted(t for t in {*on_pin, *with_fix} if t == nid or t.startswith(nid + "["))
        if not run:
            failing_with_fix.append(f"{nid} (not collected)")
        for t in run:
            before, after = (on_pin.get(t) or {}).get("outcome"), (with_fix.get(t) or {}).get("outcome")
            if before == "passed":
                passing_on_pin.append(t)
            elif after != "passed":
                failing_with_fix.append(f"{t} ({after or 'not run'}: {(with_fix.get(t) or {}).get('why', '')})")
            else:
                kept.append(t)
    if passing_on_pin and kept:
        say(f"left out (they pass on the pin, so they find no bug): {', '.join(passing_on_pin)}")
    if failing_with_fix and kept:
        say(f"left out (they do not pass with the fix): {', '.join(failing_with_fix)}")
    if not kept:
        if passing_on_pin:
            raise SpecSnapError(f"the test passes on the pin, so it finds no bug: {passing_on_pin[0]}"
                                + (f" (and {len(passing_on_pin) - 1} more)" if len(passing_on_pin) > 1 else ""))
        raise SpecSnapError(f"the test does not pass with the fix: {failing_with_fix[0]}")
    return kept


def _check_with_others(workload: Workload, patch: Path, tmp: Path) -> None:
    """The fix applies after the workload's other fixes, in their order."""
    from sdcs_bench.pipeline.validate import _apply_problem, _tree

    if not workload.requirements:
        return
    try:
        tree = _tree(workload, tmp, "all-fixes", [r.gold for r in workload.requirements])
    except RuntimeError as exc:
        raise SpecSnapError(f"the workload's own fixes no longer apply ({' '.join(str(exc).split())}): "
                            f"run `specsnap validate-workload {workload.id}`") from None
    problem = _apply_problem(tree, patch)
    if problem:
        others = ", ".join(r.id for r in workload.requirements)
        raise SpecSnapError(f"the fix does not apply after the workload's other fixes ({others}): {problem}")


def _check_scored(draft: Workload, entry: dict[str, Any], backend: Backend) -> None:
    """On the workload drafted with the bug, as scoring runs it: its tests fail on the pin, and
    pass with its fix with the baseline green."""
    from sdcs_bench.pipeline.validate import _tree
    from sdcs_bench.scoring.scorer import evaluate_tree

    bug = draft.requirement(entry["id"])
    with tempfile.TemporaryDirectory(prefix="specsnap-add-bug-scored-") as tmp:
        for name, patches, want in (("pin", [], False), ("fix", [bug.gold], True)):
            tree = _tree(draft, Path(tmp), name, patches)
            result = evaluate_tree(draft, tree, backend)
            if result["tampered"]:
                raise SpecSnapError(f"in the tree scoring uses, {'with the fix' if want else 'on the pin'}, a test's twin "
                                    f"disagrees with it ({result['tamper_evidence'][0]}): a test that leaves state "
                                    "behind gives another verdict when run twice; leave it out of the baseline")
            passed = result["passed"]
            wrong = [t for t in bug.tests if passed[t] != want]
            if wrong:
                raise SpecSnapError(f"in the tree scoring uses, {wrong[0]} {'fails with the fix' if want else 'passes on the pin'}"
                                    " (scoring copies only the source files and the tests: does it need another file?)")
            if want:
                lost = [t for t in draft.baseline_tests if not passed[t]]
                if lost:
                    raise SpecSnapError(f"in the tree scoring uses, the fix breaks the baseline test {lost[0]}")


def _write_bug(root: Path, workload: Workload, entry: dict[str, Any], patch: str, hidden: dict[str, str]) -> None:
    hidden_dir = root / workload.hidden_dir.relative_to(workload.root)
    for rel, text in hidden.items():
        path = hidden_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    gold = root / entry["gold"]
    gold.parent.mkdir(parents=True, exist_ok=True)
    gold.write_text(f"# {workload.canary}\n{patch}")
    bugs = root / "bugs.yaml"
    text = bugs.read_text() if bugs.is_file() else ""
    text = re.sub(r"(?m)^\[\]\s*$", "", text).rstrip("\n")
    drafted = yaml.safe_dump([entry], sort_keys=False, width=100, allow_unicode=True)
    drafted = drafted.replace("  behaviour:", "  # drafted from the commit message: say what is wrong, as a user "
                                              "would report it\n  behaviour:", 1)
    bugs.write_text((text + "\n" if text else "") + drafted)


def _behaviour(message: str) -> str:
    subject = message.strip().splitlines()[0] if message.strip() else "the behaviour its upstream fix changed"
    return re.sub(r"\s*\((?:#\d+|[^)]*pull[^)]*)\)\s*$", "", subject).strip() or subject


def _next_id(workload: Workload, known: list[str]) -> str:
    prefix = re.sub(r"[^A-Z0-9]+", "_", workload.id.upper()).strip("_")
    n = len(known) + 1
    while f"{prefix}-{n}" in known:
        n += 1
    return f"{prefix}-{n}"
