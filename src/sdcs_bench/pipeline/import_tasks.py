"""``specsnap import-tasks``: SWE-bench-format task instances as real-repository workloads
(docs/real_repos.md#swe-bench-format-tasks-import-tasks).

The instance format SWE-bench and its successors share (SWE-Gym, SWE-smith, Multi-SWE-bench, SWE-bench
Pro): one JSON object per line with ``instance_id``, ``repo`` (owner/name), ``base_commit``,
``patch`` (the fix), ``test_patch`` (its tests), ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (pytest node
ids, as lists or as JSON text) and ``problem_statement``. Instances that share a repository and a
base commit become one workload (``add-repository`` on that commit) with one bug each
(``add-bug``'s checks on the instance's patch pair): its FAIL_TO_PASS are the bug's hidden tests,
and the workload's baseline is the union of its instances' PASS_TO_PASS that pass here. Each
workload is then validated like any other. An instance that cannot be built or validated here is
reported with its reason (and in ``results/import/<file>.json``), never silently dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.sandbox.base import Backend
from sdcs_bench.trial.repo import SourcePin

FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS",
          "problem_statement")
MAX_FILE_BYTES = 512 << 20
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
NOT_IN_PASS_TO_PASS = "not in any imported instance's PASS_TO_PASS"


@dataclass(frozen=True)
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    problem_statement: str


def _tests(value: Any, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):  # (SWE-bench's own files hold these lists as JSON text)
        try:
            value = json.loads(value)
        except ValueError:
            raise SpecSnapError(f"{where}: {key} is neither a list nor JSON text of one") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecSnapError(f"{where}: {key} must be a list of test ids")
    return tuple(value)


def read_instances(path: Path) -> list[Instance]:
    """Every instance of a JSON-lines file (or a JSON list), checked before any work: a missing or
    malformed field is one line naming the line, the instance and the field."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SpecSnapError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB")
        text = path.read_text()
    except OSError as exc:
        raise SpecSnapError(f"{path}: {exc.strerror or exc}") from None
    stripped = text.lstrip()
    try:
        rows = (list(enumerate(json.loads(text), start=1)) if stripped.startswith("[") else
                [(n, json.loads(line)) for n, line in enumerate(text.splitlines(), start=1) if line.strip()])
    except ValueError as exc:
        raise SpecSnapError(f"{path}: not JSON lines ({exc})") from None
    out, seen = [], set()
    for n, raw in rows:
        where = f"{path.name}:{n}"
        if not isinstance(raw, dict):
            raise SpecSnapError(f"{where}: an instance is a JSON object")
        missing = [k for k in FIELDS if k not in raw]
        if missing:
            raise SpecSnapError(f"{where} ({raw.get('instance_id', 'no instance_id')}): missing {', '.join(missing)}",
                                FIELDS)
        iid = str(raw["instance_id"])
        if iid in seen:
            raise SpecSnapError(f"{where}: instance {iid} appears twice")
        seen.add(iid)
        if not _REPO.match(str(raw["repo"])):
            raise SpecSnapError(f"{where} ({iid}): repo {raw['repo']!r} is not owner/name")
        if not re.fullmatch(r"[0-9a-f]{40}", str(raw["base_commit"])):
            raise SpecSnapError(f"{where} ({iid}): base_commit {raw['base_commit']!r} is not a full 40-digit commit id")
        for key in ("patch", "test_patch", "problem_statement"):
            if not isinstance(raw[key], str):
                raise SpecSnapError(f"{where} ({iid}): {key} must be text")
        f2p = _tests(raw["FAIL_TO_PASS"], f"{where} ({iid})", "FAIL_TO_PASS")
        if not f2p:
            raise SpecSnapError(f"{where} ({iid}): FAIL_TO_PASS is empty: an instance without a failing test finds no bug")
        out.append(Instance(iid, str(raw["repo"]), str(raw["base_commit"]), raw["patch"], raw["test_patch"], f2p,
                            _tests(raw["PASS_TO_PASS"], f"{where} ({iid})", "PASS_TO_PASS"), raw["problem_statement"]))
    if not out:
        raise SpecSnapError(f"{path}: no instance")
    return out


def source_pin(repo: str, commit: str, mirror: Path | None) -> SourcePin:
    """The pin of an instance's repository at its base commit: a clone under ``mirror`` (named
    ``owner__name``, ``owner/name`` or ``name``, bare or not), else its GitHub URL."""
    owner, name = repo.split("/")
    if mirror is not None:
        for candidate in (mirror / f"{owner}__{name}", mirror / owner / name, mirror / name,
                          mirror / f"{owner}__{name}.git", mirror / f"{name}.git"):
            if candidate.is_dir():
                return SourcePin.from_config({"kind": "git", "url": candidate.resolve().as_uri(), "commit": commit,
                                              "name": repo}, f"--mirror {mirror}")
        raise SpecSnapError(f"--mirror {mirror} holds no clone of {repo} (looked for {owner}__{name}, {owner}/{name}, "
                            f"{name})")
    return SourcePin.from_config({"kind": "git", "url": f"https://github.com/{repo}.git", "commit": commit, "name": repo},
                                 "import-tasks")


def workload_name(repo: str, commit: str) -> str:
    return f"{re.sub(r'[^a-z0-9]+', '_', repo.split('/')[1].lower()).strip('_') or 'repo'}_{commit[:7]}"


def import_tasks(path: Path, *, mirror: Path | None, python: str, results: Path, backend: Backend,
                 say: Callable[[str], None] = print) -> dict[str, Any]:
    """Import every instance (module docstring); the report: per workload, the instances imported
    and the ones refused with their reasons, and its validation."""
    from sdcs_bench.pipeline.add_bug import add_bug, fix_from_patches
    from sdcs_bench.pipeline.add_repo import add_repository
    from sdcs_bench.pipeline.repos import prepare_workload
    from sdcs_bench.pipeline.validate import validate_workload
    from sdcs_bench.trial.workload import load_draft_repository
    from sdcs_bench.trial.workload_registry import workload_dir

    instances = read_instances(path)
    if mirror is not None and not mirror.is_dir():
        raise SpecSnapError(f"--mirror {mirror}: no such directory")
    groups: dict[tuple[str, str], list[Instance]] = {}
    for inst in instances:
        groups.setdefault((inst.repo, inst.base_commit), []).append(inst)
    report: dict[str, Any] = {"file": path.name, "instances": len(instances), "workloads": []}
    for (repo, commit), group in groups.items():
        name = workload_name(repo, commit)
        entry: dict[str, Any] = {"workload": name, "repo": repo, "base_commit": commit, "imported": [], "refused": []}
        report["workloads"].append(entry)
        say(f"{repo} at {commit[:12]}: {len(group)} instance(s) as workload {name}")
        try:
            root = workload_dir(name) if _registered(name) else None
            if root is None:
                made = add_repository(name, source_pin(repo, commit, mirror), python=python, test_deps=[],
                                      results=results, backend=backend, display=repo, say=say)
                root = made["workload_dir"]
                _baseline_from_pass_to_pass(root, {t for i in group for t in i.pass_to_pass})
            wl = prepare_workload(load_draft_repository(root), results)
        except SpecSnapError as exc:
            for inst in group:
                entry["refused"].append({"instance_id": inst.instance_id, "reason": f"the repository could not be "
                                                                                      f"added here: {exc}"})
            say(f"refused {len(group)} instance(s) of {repo}: the repository could not be added here: {exc}")
            continue
        done = {r.id for r in wl.requirements}
        for inst in group:
            if inst.instance_id in done:
                entry["imported"].append({"instance_id": inst.instance_id, "already": True})
                continue
            try:
                fix = fix_from_patches(wl, inst.patch, inst.test_patch, {"upstream": inst.instance_id},
                                       inst.problem_statement)
                bug = add_bug(wl, fix, backend=backend, bug_id=inst.instance_id, wanted=list(inst.fail_to_pass),
                              behaviour=_first_line(inst.problem_statement), say=say)
            except SpecSnapError as exc:
                entry["refused"].append({"instance_id": inst.instance_id, "reason": str(exc)})
                say(f"refused {inst.instance_id}: {exc}")
                continue
            got = set(bug["upstream_tests"]) | {t.partition("[")[0] for t in bug["upstream_tests"]}
            missing = sorted(t for t in inst.fail_to_pass if t not in got)
            entry["imported"].append({"instance_id": inst.instance_id, "tests": bug["tests"],
                                      **({"fail_to_pass_left_out": missing} if missing else {})})
            say(f"imported {inst.instance_id}: {len(bug['tests'])} hidden test(s)"
                + (f"; left out of its FAIL_TO_PASS: {', '.join(missing)}" if missing else ""))
            wl = prepare_workload(load_draft_repository(root), results)
        if wl.requirements:
            say(f"validating {name}")
            checks = validate_workload(wl, backend, logs=results / "validate" / name)
            entry["validation"] = {"ok": not checks.failures, "passed": checks.passed, "failures": checks.failures}
            if checks.failures:
                say(f"workload {name}: {len(checks.failures)} check(s) failed: {checks.failures[0]}")
    out = results / "import" / f"{path.stem}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    report["report"] = str(out)
    return report


def _registered(name: str) -> bool:
    from sdcs_bench.trial.workload_registry import registered_workloads

    return name in registered_workloads()


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return (line[:300] or "the behaviour its instance's patch fixes")


def _baseline_from_pass_to_pass(root: Path, pass_to_pass: set[str]) -> None:
    """The workload's baseline: its instances' PASS_TO_PASS that pass here (as add-repository found
    them); a passing test no instance lists is left out, with that reason."""
    path = root / "baseline_tests.txt"
    lines = path.read_text().splitlines()
    header = [ln for ln in lines if ln.startswith("#")]
    tests = [ln for ln in lines if ln and not ln.startswith("#")]
    keep = [t for t in tests if t in pass_to_pass]
    dropped = [t for t in tests if t not in pass_to_pass]
    if not keep:
        raise SpecSnapError("none of the instances' PASS_TO_PASS tests passes here (add-repository's baseline has "
                            f"{len(tests)} others): the environment differs from the one the instances were made in")
    path.write_text("\n".join([*header, "# (those its imported instances list in PASS_TO_PASS)", *keep]) + "\n")
    if dropped:
        excluded_path = root / "baseline_excluded.yaml"
        head = "".join(ln + "\n" for ln in excluded_path.read_text().splitlines() if ln.startswith("#"))
        groups = yaml.safe_load(excluded_path.read_text()) or []
        groups.append({"tests": dropped, "reason": NOT_IN_PASS_TO_PASS})
        excluded_path.write_text(head + yaml.safe_dump(groups, sort_keys=False, width=100, allow_unicode=True))
