"""Score a finished sandbox. A pure function of the sandbox's source files, the workload's hidden
tests and the reported tokens: nothing the agent left in tests, configs or caches can vote."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import random
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from sdcs_bench.core import safefs
from sdcs_bench.trial.arms import Arm
from sdcs_bench.scoring.notes import notes_size
from sdcs_bench.sandbox.base import Backend, base_env
from sdcs_bench.sandbox.environment import environment_access, with_environment
from sdcs_bench.sandbox.records import sandbox_meta, session_records
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.trial.workload_model import Workload
from sdcs_bench.scoring.boundaries import check_boundaries, load_wiring
from sdcs_bench.scoring.junit import HIDDEN_PREFIX, junit_key
from sdcs_bench.scoring.collection import Rules
from sdcs_bench.scoring.sentinels import SentinelSettings, judge, plant
from sdcs_bench.scoring.standards import standards_report
from sdcs_bench.scoring.suspicious import scan_source
from sdcs_bench.trial.standards import Layout
from sdcs_bench.scoring.verdicts import StreamReader, cross_check, parse
from sdcs_bench.core.paths import default_work_root
from sdcs_bench.core.timing import span, timed

PROBE = Path(__file__).with_name("probe_conftest.py")
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".tox", ".nox", ".venv", "venv", "node_modules", ".eggs"}
SKIP_NAMES = {"conftest.py", "sitecustomize.py", "usercustomize.py", "setup.py", "noxfile.py"}
# A top-level module of the sandbox must not shadow the runner or the standard library.
SHADOW_NAMES = set(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", HIDDEN_PREFIX}


def _glob(rel: str, pattern: str) -> bool:
    pattern = pattern.replace("**/", "").replace("**", "*")
    return fnmatch.fnmatchcase(rel, pattern)


@timed("scoring copy")
def scoring_copy(sandbox: Path, workload: Workload, dest: Path) -> list[str]:
    """Copy only the sandbox's source files into ``dest``; return what was left out and why."""
    excluded = []
    for path in sorted(sandbox.rglob("*")):
        rel = path.relative_to(sandbox)
        relp = rel.as_posix()
        if not path.is_file() or path.is_symlink() or SKIP_DIRS & set(rel.parts):
            continue
        if any(_glob(relp, pat) for pat in workload.protected) or rel.parts[0] in workload.visible_tests:
            reason = "visible test"
        elif path.name in SKIP_NAMES:
            reason = "runner configuration"
        elif not any(_glob(relp, pat) for pat in workload.source_globs):
            continue  # not source (docs, notes, configs, .pth, compiled files): silently not copied
        elif rel.parts[0].removesuffix(".py") in SHADOW_NAMES:
            reason = "shadows a standard or test-runner module"
        else:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            continue
        excluded.append(f"{relp} ({reason})")
    hidden_dest = dest / HIDDEN_PREFIX
    if workload.source_tests:  # a real repository's own tests, as the pinned source has them
        shutil.copytree(workload.baseline_dir / workload.source_tests, hidden_dest / workload.source_tests,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(workload.hidden_dir, hidden_dest, ignore=shutil.ignore_patterns("__pycache__"),
                    dirs_exist_ok=True)
    (hidden_dest / workload.hidden_ini.relative_to(workload.hidden_dir)).unlink(missing_ok=True)
    shutil.copyfile(workload.hidden_ini, dest / "pytest.ini")
    shutil.copyfile(PROBE, dest / "conftest.py")
    return excluded


RUNNER_PACKAGES = ("pytest", "_pytest", "pluggy")


def _runner_dirs(python: str, backend: Backend, readable: list[Path], workdir: Path, home: Path) -> list[Path]:
    """Where ``python`` finds the test runner's packages (protected for the run). A repository's
    own environment is asked inside the sandbox, where it may be the image's copy, not the host's."""
    if not readable:
        return list(host_runner_dirs(python) or ())
    _, out, _ = backend.run([python, "-I", "-c", _FIND_RUNNER], workdir=workdir, home=home, env=base_env(home),
                            timeout=60, ro_binds=readable)
    return _origins(out.decode(errors="replace"))


_FIND_RUNNER = ("import importlib.util as u\nfor n in %r:\n    s = u.find_spec(n)\n"
                "    print(s.origin if s and s.origin else '')" % (RUNNER_PACKAGES,))
_HOST_RUNNER: dict[str, tuple[Path, ...]] = {}


def host_runner_dirs(python: str | None = None) -> tuple[Path, ...] | None:
    """:func:`_runner_dirs` of an interpreter of the host (ours by default), asked once per process
    (the warm server asks for its jobs: ``WARM_UP``); None when it found no test runner (not kept)."""
    python = python or sys.executable
    if python not in _HOST_RUNNER:
        found = _origins(subprocess.run([python, "-I", "-c", _FIND_RUNNER], capture_output=True, text=True,
                                        timeout=60).stdout)
        if not found:
            return None
        _HOST_RUNNER[python] = tuple(found)
    return _HOST_RUNNER[python]


def _origins(stdout: str) -> list[Path]:
    found = []
    for line in stdout.splitlines():
        if line:
            origin = Path(line).resolve()
            found.append(origin.parent if origin.name == "__init__.py" else origin)
    return found


def scoring_python(workload: Workload) -> tuple[str, list[Path]]:
    """The interpreter the hidden tests run with (a real repository's own environment, else ours)
    and what the sandbox must let it read."""
    python, readable = environment_access(workload.environment_dir)
    return python or sys.executable, readable


def _scratch() -> Path:
    """Where scoring copies are made: the work root, beside the live sandboxes (``SPECSNAP_WORK_ROOT``
    moves both, to a RAM-backed file system say: docs/pipeline.md)."""
    root = default_work_root()
    root.mkdir(parents=True, exist_ok=True)
    return root


@timed("test tree digest")
def tree_digest(paths: list[Path]) -> dict[str, str]:
    """sha256 of every file under ``paths`` (a file's absence is part of the digest)."""
    digest = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            digest[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return digest


def run_hidden_tests(copy: Path, workload: Workload, backend: Backend, timeout_s: float,
                     deselect: list[str] = ()) -> dict[str, Any]:
    """Run the hidden tests (and the sentinels planted among them) on the scoring copy. The test
    tree, its configuration and the probe are read-only for the run where the backend can enforce
    it and hashed before and after everywhere; the verdicts come through a pipe (``verdicts.py``)."""
    out_dir = copy / ".specsnap"
    out_dir.mkdir()
    junit = out_dir / "junit.xml"
    home = out_dir / "home"
    home.mkdir()
    test_tree = [copy / HIDDEN_PREFIX, copy / "pytest.ini", copy / "conftest.py"]
    before = tree_digest(test_tree)
    python, readable = scoring_python(workload)
    stream = StreamReader()
    probe = {
        "fd": stream.write_fd, "copy": str(copy.resolve()), "roots": list(workload.packages), "hidden": HIDDEN_PREFIX,
        "import_root": workload.import_root,
        "protected": [str(p) for p in [*test_tree, junit, *_runner_dirs(python, backend, readable, copy, home)]],
    }
    env = with_environment({**base_env(home), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "SPECSNAP_PROBE": json.dumps(probe)},
                           python if readable else None)
    plugins = [arg for name in workload.pytest_plugins for arg in ("-p", name)]
    argv = [
        python, "-I", "-B", "-m", "pytest", "-c", "pytest.ini", "--rootdir", ".",
        "-p", "no:cacheprovider", *plugins, f"--import-mode={workload.import_mode}", "-o", "addopts=", "-q",
        "--tb=line",  # a failure costs one line, not a formatted traceback (twins fail by design)
        # pass or fail is all a verdict needs: no rewriting of the test modules' asserts for their
        # introspected messages (with -B it was redone every run: a fifth of a tier's pytest time)
        "--assert=plain",
        f"--junitxml={junit}", *(arg for nid in deselect for arg in ("--deselect", nid)), HIDDEN_PREFIX,
    ]
    try:
        with span("pytest (sandboxed)"):
            code, out, err = backend.run(argv, workdir=copy, home=home, env=env, timeout=timeout_s, network=False,
                                         ro_binds=readable, read_only=test_tree, pass_fds=(stream.write_fd,))
    finally:
        lines = stream.lines()
    result = parse(lines)
    after = tree_digest(test_tree)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    result.evidence += [f"test tree changed during the run: {Path(k).relative_to(copy)}" for k in changed]
    trusted, contradictions = cross_check(result, junit, code, lambda nid: junit_key(nid.removeprefix(f"{HIDDEN_PREFIX}/")))
    result.evidence += contradictions
    return {
        "exit_code": code,
        "stream": result,
        "report_trusted": trusted,
        "output": (out + err).decode(errors="replace")[-20000:],
    }


def first_errors(output: str) -> dict[str, str]:
    """Per test file, the first error line of a :func:`run_hidden_tests` run's failures. Under
    ``--tb=line`` each failure is one block ending in its location line (``path:N: message``;
    pytest 9 puts its ``E`` lines before it); the blocks come in the order of the ``FAILED <node
    id>`` summary lines (the names there may be the scorer's own, the files are the tests')."""
    lines = output.splitlines()
    section = lines
    if any(ln.startswith("=") and " FAILURES " in ln for ln in lines):
        first = next(i for i, ln in enumerate(lines) if ln.startswith("=") and " FAILURES " in ln)
        rest = lines[first + 1:]
        section = rest[:next((i for i, ln in enumerate(rest) if ln.startswith("=")), len(rest))]
    errors, block = [], []
    for ln in section:
        located = _LOCATION.match(ln)
        if located:
            said = next((e[1:].strip() for e in block if e.startswith("E ")), located.group(1).strip())
            errors.append(" ".join(said.split()))
            block = []
        else:
            block.append(ln)
    failed = [ln.split()[1].partition("::")[0] for ln in lines if ln.startswith("FAILED ") and len(ln.split()) > 1]
    out: dict[str, str] = {}
    for path, error in zip(failed, errors):
        out.setdefault(path, error)
    return out


_LOCATION = re.compile(r"^\S[^\s:]*(?:\s[^:]*)?:\d+: (.*)$")


def _read(sandbox: Path, rel: str) -> bytes | None:
    """A regular file the agent left, read without following a link (a link, a FIFO, a file
    beyond the read limit or under a linked directory: None)."""
    try:
        return safefs.read_file(sandbox, rel)
    except (safefs.Unsafe, ValueError):
        return None


def protected_changes(sandbox: Path, workload: Workload) -> list[str]:
    """Protected files (the visible tests) that are no longer byte-identical to the scaffold."""
    changed = []
    base = workload.baseline_dir
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base).as_posix()
        if path.is_file() and any(_glob(rel, pat) for pat in workload.protected):
            mine = _read(sandbox, rel)  # a link the agent put in its place is not followed: it is a change
            if mine is None:
                changed.append(f"{rel} (deleted)")
            elif hashlib.sha256(mine).digest() != hashlib.sha256(path.read_bytes()).digest():
                changed.append(f"{rel} (modified)")
    return changed


def trial_integrity(records: list[dict]) -> dict[str, Any]:
    """The protocol's own guarantees, checked per session after the fact: a cleaved edit was never
    committed, and no qualifying edit went unseen by the watcher. Any problem makes the trial
    invalid (``valid: false`` on the scorecard, counted apart on the leaderboard)."""
    problems = []
    for r in records:
        check = (r.get("cleave") or {}).get("integrity")
        if check is not None and not check.get("ok"):
            problems.append(f"{r['session']}: {check.get('problem', 'integrity check failed')}")
        if r.get("credential_leak"):  # a credential reached what the agent wrote (redacted from the results)
            problems.append(f"{r['session']}: a credential was found in what the agent wrote "
                            f"({', '.join(map(str, r['credential_leak'][:5]))}); redacted")
    return {"ok": not problems, "problems": problems, "sessions_checked": len(records)}


def trial_limit(records: list[dict]) -> str | None:
    """``<session>: <reason>`` of the first session a limit ended (docs/sandboxes.md), else None: such a
    trial is neither a result nor invalid, counted apart (``limit_exceeded``) and in no mean."""
    for r in records:
        if r.get("limit"):
            return f"{r['session']}: {r['limit'].get('reason')}"
    return None


def s1_edit_survived(sandbox: Path, records: list[dict]) -> bool | None:
    """Did the hunk left uncommitted at the first cleave survive to the end? Every line it added
    must still be in its file. ``None`` when no session was cleaved."""
    cut = next((r["cleave"] for r in records if r.get("cleave", {}).get("fired")), None)
    if cut is None or not cut.get("path"):
        return None  # (a token or turn rule cuts no edit: there is no hunk to follow)
    added: dict[str, list[str]] = {}
    current = None
    for line in cut.get("diff", "").splitlines():
        if line.startswith("+++ "):
            current = line[4:].removeprefix("b/") if line[4:] != "/dev/null" else None
        elif line.startswith("+") and current and line[1:].strip():
            added.setdefault(current, []).append(line[1:].strip())
    for rel, lines in added.items():
        data = _read(sandbox, rel)
        present = {ln.strip() for ln in data.decode(errors="replace").splitlines()} if data is not None else set()
        if not set(lines) <= present:
            return False
    return True


def evaluate_tree(workload: Workload, tree: Path, backend: Backend, timeout_s: float = 600,
                  sentinels: SentinelSettings | None = None, rng: random.Random | None = None) -> dict[str, Any]:
    """Run the hidden tests and the boundary rules on a clean scoring copy of ``tree``. A run in
    which any witness contradicts another (``tampered``) passes nothing."""
    settings = sentinels or SentinelSettings.default()
    with tempfile.TemporaryDirectory(prefix="specsnap-score-", dir=_scratch()) as tmp:
        copy = Path(tmp) / "copy"
        copy.mkdir()
        excluded = scoring_copy(tree, workload, copy)
        # A real repository's excluded tests (each with its reason in workload.yaml) are not run.
        not_run = {f"{HIDDEN_PREFIX}/{t}" for t, _ in workload.excluded_tests}
        planted, renamed = plant(copy / HIDDEN_PREFIX, HIDDEN_PREFIX, settings,
                                 rng or random.Random(secrets.randbits(64)),
                                 untwinned=frozenset(t.partition("[")[0] for t in not_run),
                                 rules=Rules.from_ini(copy / "pytest.ini"))
        deselect = sorted(renamed.get(b, b) + sep + p for b, sep, p in (t.partition("[") for t in not_run))
        run = run_hidden_tests(copy, workload, backend, timeout_s, deselect)
        stream = run.pop("stream")
        verdicts = stream.verdicts()
        evidence = stream.evidence + judge(planted, verdicts)
        tampered = bool(evidence)
        counted = run["report_trusted"] and not tampered

        # Every collected test, inherited ones under each class that collects them, has its own
        # entry in ``renamed`` (pytest's collection rules: scoring/collection.py).
        def as_run(nid: str) -> str:  # a workload's node id as this run named it
            base, sep, params = f"{HIDDEN_PREFIX}/{nid}".partition("[")
            return renamed.get(base, base) + sep + params

        all_ids = list(workload.baseline_tests) + [t for r in workload.requirements for t in r.tests]
        passed = {nid: counted and verdicts.get(as_run(nid), False) for nid in all_ids}
        own_name = {new: old for old, new in renamed.items()}
        twins = {t.nodeid for t in planted}

        def own(base: str) -> str | None:  # a reported test's own node id (None: a sentinel twin)
            # (a test collected but not seen by our rules, say one inheriting from another module's
            # class, ran under its own name)
            return own_name.get(base) or (base if base not in twins and base not in renamed else None)

        run["reported"] = sorted(junit_key(own(b).removeprefix(f"{HIDDEN_PREFIX}/") + sep + p)
                                 for b, sep, p in (n.partition("[") for n in verdicts) if own(b))
        found = scan_source(copy, workload)
        dynamic = [(a, b) for a, b, _ in stream.edges] + found["edges"]
        boundary = check_boundaries(copy / workload.import_root, load_wiring(workload.wiring_path), dynamic)
    return {
        "passed": passed, "run": run, "boundaries": boundary, "excluded": excluded,
        "tampered": tampered, "tamper_evidence": evidence,
        "sentinels": {"planted": len(planted), "failing_twins": sum(s.kind == "failing_twin" for s in planted),
                      "same_twins": sum(s.kind == "same_twin" for s in planted),
                      "list": [s.to_dict() for s in planted]},
        "suspicious": found["findings"] + sorted(({"file": x["by"], "line": None, "what": f"at run time: {x['what']}"}
                                                  for x in stream.suspicious), key=lambda f: (f["file"], f["what"])),
    }


def poison_report(workload: Workload, injection: dict[str, Any], passed: dict[str, bool],
                  boundary: dict[str, Any]) -> dict[str, Any]:
    """Which planted defect survived to the end, judged by behaviour: the hidden tests a defect
    turns red are still red (all of them), or the forbidden import it added is still there."""
    edges = {(v["importer"], v["imported"]) for v in boundary["details"]}
    survived, evidence = {}, {}
    for d in workload.poison:
        if d.fails:
            red = [t for t in d.fails if not passed.get(t, False)]
            survived[d.id] = len(red) == len(d.fails)
            evidence[d.id] = {"failing": red}
        else:
            survived[d.id] = d.forbidden_import in edges
            evidence[d.id] = {"import": list(d.forbidden_import)}
    return {"version": injection["version"], "planted": [d["id"] for d in injection["defects"]],
            "survived": survived, "evidence": evidence, "in_head": injection.get("in_head"),
            "marked": injection.get("marked")}


def repository_report(workload: Workload, arm: str | None, per_req: dict[str, bool], baseline_failures: list[str],
                      records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A real repository's scorecard section (docs/real_repos.md): bugs resolved by their hidden
    tests, the repository's own tests kept, turns and tokens per session, and what was predicted
    for the arm before the run. ``None`` for other workloads."""
    if not workload.is_real_repo:
        return None
    return {
        "source": workload.source.describe(),
        "bugs": len(per_req),
        "bugs_resolved": sum(per_req.values()),
        "resolved": sorted(b for b, ok in per_req.items() if ok),
        "baseline_kept": not baseline_failures,
        "baseline_tests": len(workload.baseline_tests),
        "baseline_failed": len(baseline_failures),
        "predicted_resolved": workload.predicted(arm) if arm else None,
        "turns": [r["turns"] for r in records],
        "tokens": [r["tokens"]["total"] for r in records],
    }


def score_sandbox(
    workload: Workload,
    sandbox: Path,
    *,
    tokens: TokenUsage,
    backend: Backend,
    timeout_s: float = 600,
    arm: Arm | None = None,
    injection: dict[str, Any] | None = None,
    sessions: list[dict[str, Any]] | None = None,
    sentinels: SentinelSettings | None = None,
    layout: Layout | None = None,
) -> dict[str, Any]:
    """Score ``sandbox``. ``sessions`` are the session records kept outside the sandbox (the
    pipeline's stage records); without them (a sandbox scored by hand) the copies the session
    runner left in the sandbox's ``.git`` are read. ``layout`` is a standards trial's layout (from
    its variant); without it (by hand) the one the scaffold recorded in the sandbox is used.
    ``arm`` is the trial's arm (the pipeline's, from the trial file): given, nothing about the arm
    is read from the sandbox, whose scaffold record an agent can rewrite; without it (by hand) the
    record is used."""
    sandbox = sandbox.resolve()
    if arm is None:
        meta = sandbox_meta(sandbox)
    else:  # the trial's own, not the sandbox's word for it (an agent that deleted the record is scored too)
        meta = {"arm": arm.name, "notes_file": arm.notes_file, "notes_cap_tokens": arm.notes_cap(workload.id)}
    if layout is None and workload.standards is not None:
        layout = workload.standards.layout(meta.get("standards_layout") or {}, "the sandbox's recorded layout: ")
    records = session_records(sandbox) if sessions is None else sessions
    result = evaluate_tree(workload, sandbox, backend, timeout_s, sentinels)
    passed, boundary, run, excluded = result["passed"], result["boundaries"], result["run"], result["excluded"]
    tampered = result["tampered"]
    trusted = run["report_trusted"]
    per_req = {r.id: all(passed[t] for t in r.tests) for r in workload.requirements}
    tests = {t: passed[t] for r in workload.requirements for t in r.tests}
    baseline_failures = [t for t in workload.baseline_tests if not passed[t]]
    protected = protected_changes(sandbox, workload)
    raw = sum(per_req.values())
    net = raw if not tampered and not baseline_failures and not protected and boundary["violations"] == 0 else 0
    budget = workload.budget_tokens
    tes = net * min(1.0, budget / tokens.total) if tokens.total else float(net)
    notes_file = meta.get("notes_file")
    cleaves = [r["cleave"] for r in records if r.get("cleave", {}).get("rule", "none") != "none"]
    integrity = trial_integrity(records)
    return {
        "workload": workload.id,
        "family": workload.family,
        "arm": meta.get("arm"),
        "n_requirements": len(workload.requirements),
        "raw": raw,
        "baseline_ok": not baseline_failures,
        "protected_ok": not protected,
        "violations": boundary["violations"],
        "net": net,
        "tes": round(tes, 4),
        "valid": integrity["ok"],
        "integrity": integrity,
        "tampered": tampered,
        "tamper_evidence": result["tamper_evidence"],
        "sentinels": result["sentinels"],
        "budget_tokens": budget,
        "tokens": tokens.to_dict(),
        "requirements": per_req,
        # requirement tests passed (the coherence workloads score in tests: 4 per motif, 32 in all)
        "tests_passed": sum(tests.values()),
        "tests_total": len(tests),
        "tests": tests,
        "baseline_failures": baseline_failures,
        "protected_changed": protected,
        "boundaries": boundary,
        "hidden_run": {"exit_code": run["exit_code"], "report_trusted": trusted, "tail": run["output"][-4000:]},
        "excluded_from_scoring_copy": excluded,
        "repository": repository_report(workload, meta.get("arm"), per_req, baseline_failures, records),
        "standards": standards_report(workload.standards, layout, sandbox) if layout is not None else None,
        "poison": (None if not injection else poison_report(workload, injection, passed, boundary) if not tampered
                   else {"version": injection["version"], "survived": None,
                         "untrusted": "the hidden-test run was tampered with; no survival is claimed"}),
        "diagnostics": {
            "s1_edit_survived": s1_edit_survived(sandbox, records),
            "no_cleave": any(c.get("no_cleave") for c in cleaves),
            "cleave_missed": any(c.get("missed") for c in cleaves),
            "notes": notes_size(sandbox, notes_file, meta.get("notes_cap_tokens")),
            "suspicious_source": result["suspicious"],
            "sessions": [
                {
                    "session": r["session"],
                    "agent": r.get("agent"),
                    "harness": r.get("harness"),
                    "status": r["status"],
                    "wall_s": r["wall_s"],
                    "turns": r["turns"],
                    "tokens": r["tokens"]["total"],
                    "cleave_rule": r["cleave"].get("rule"),
                    "cleave_path": r["cleave"].get("path"),
                    "cut_by": r["cleave"].get("by") if r["cleave"].get("fired") else None,
                    "cut_at_turns": r["cleave"].get("at_turns"),
                    "cut_at_tokens": r["cleave"].get("at_tokens"),
                    "cut_share": r["cleave"].get("share"),
                    "meter_tokens": (r["cleave"].get("counted") or {}).get("tokens")
                    if (r["cleave"].get("counted") or {}).get("by") == "meter" else None,
                    "edit_uncommitted": r["cleave"].get("edit_uncommitted"),
                    "stopped_by": r["cleave"].get("stopped_by"),
                    "tokens_source": r["tokens"].get("source"),
                    "tokens_native": (r.get("tokens_native") or {}).get("total"),
                    "model_calls": r.get("model_calls"),
                    "context_exposure": r.get("context_exposure"),
                    "repo_memory_files": r.get("repo_memory_files"),
                    "git_configuration": r.get("git_configuration"),
                    "guard_repaired": (r.get("guard") or {}).get("repaired"),
                    "redacted_files": r.get("redacted_files", []),
                }
                for r in records
            ],
        },
    }
