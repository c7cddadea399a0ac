"""Score a finished sandbox. A pure function of the sandbox's source files, the workload's hidden
tests and the reported tokens: nothing the agent left in tests, configs or caches can vote."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from sdcs_bench.trial.arms import Arm
from sdcs_bench.scoring.notes import notes_size
from sdcs_bench.sandbox.base import Backend, base_env
from sdcs_bench.sandbox.records import sandbox_meta, session_records
from sdcs_bench.core.tokens import TokenUsage
from sdcs_bench.trial.workload import Workload
from sdcs_bench.scoring.boundaries import check_boundaries, load_wiring
from sdcs_bench.scoring.junit import HIDDEN_PREFIX, passed_nodeids, read_outcomes

PROBE = Path(__file__).with_name("probe_conftest.py")
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".tox", ".nox", ".venv", "venv", "node_modules", ".eggs"}
SKIP_NAMES = {"conftest.py", "sitecustomize.py", "usercustomize.py", "setup.py", "noxfile.py"}
# A top-level module of the sandbox must not shadow the runner or the standard library.
SHADOW_NAMES = set(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", HIDDEN_PREFIX}


def _glob(rel: str, pattern: str) -> bool:
    pattern = pattern.replace("**/", "").replace("**", "*")
    return fnmatch.fnmatchcase(rel, pattern)


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
    shutil.copytree(workload.hidden_dir, hidden_dest, ignore=shutil.ignore_patterns("__pycache__"))
    (hidden_dest / workload.hidden_ini.relative_to(workload.hidden_dir)).unlink(missing_ok=True)
    shutil.copyfile(workload.hidden_ini, dest / "pytest.ini")
    shutil.copyfile(PROBE, dest / "conftest.py")
    return excluded


def run_hidden_tests(copy: Path, workload: Workload, backend: Backend, timeout_s: float) -> dict[str, Any]:
    out_dir = copy / ".specsnap"
    out_dir.mkdir()
    junit, imports = out_dir / "junit.xml", out_dir / "imports.json"
    home = copy / ".specsnap" / "home"
    home.mkdir()
    env = {
        **base_env(home),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "SPECSNAP_ROOT_PACKAGES": json.dumps(list(workload.packages)),
        "SPECSNAP_IMPORTS_OUT": str(imports),
    }
    argv = [
        sys.executable, "-I", "-B", "-m", "pytest", "-c", "pytest.ini", "--rootdir", ".",
        "-p", "no:cacheprovider", "--import-mode=importlib", "-o", "addopts=", "-q",
        f"--junitxml={junit}", HIDDEN_PREFIX,
    ]
    code, out, err = backend.run(argv, workdir=copy, home=home, env=env, timeout=timeout_s, network=False)
    return {
        "exit_code": code,
        "junit": junit,
        "dynamic_imports": [tuple(e) for e in json.loads(imports.read_text())] if imports.is_file() else [],
        "output": (out + err).decode(errors="replace")[-20000:],
    }


def protected_changes(sandbox: Path, workload: Workload) -> list[str]:
    """Protected files (the visible tests) that are no longer byte-identical to the scaffold."""
    changed = []
    base = workload.baseline_dir
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base).as_posix()
        if path.is_file() and any(_glob(rel, pat) for pat in workload.protected):
            mine = sandbox / rel
            if not mine.is_file():
                changed.append(f"{rel} (deleted)")
            elif hashlib.sha256(mine.read_bytes()).digest() != hashlib.sha256(path.read_bytes()).digest():
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
    return {"ok": not problems, "problems": problems, "sessions_checked": len(records)}


def s1_edit_survived(sandbox: Path, records: list[dict]) -> bool | None:
    """Did the hunk left uncommitted at the first cleave survive to the end? Every line it added
    must still be in its file. ``None`` when no session was cleaved."""
    cut = next((r["cleave"] for r in records if r.get("cleave", {}).get("fired")), None)
    if cut is None:
        return None
    added: dict[str, list[str]] = {}
    current = None
    for line in cut.get("diff", "").splitlines():
        if line.startswith("+++ "):
            current = line[4:].removeprefix("b/") if line[4:] != "/dev/null" else None
        elif line.startswith("+") and current and line[1:].strip():
            added.setdefault(current, []).append(line[1:].strip())
    for rel, lines in added.items():
        path = sandbox / rel
        present = {ln.strip() for ln in path.read_text(errors="replace").splitlines()} if path.is_file() else set()
        if not set(lines) <= present:
            return False
    return True


def evaluate_tree(workload: Workload, tree: Path, backend: Backend, timeout_s: float = 600) -> dict[str, Any]:
    """Run the hidden tests and the boundary rules on a clean scoring copy of ``tree``."""
    with tempfile.TemporaryDirectory(prefix="specsnap-score-") as tmp:
        copy = Path(tmp) / "copy"
        copy.mkdir()
        excluded = scoring_copy(tree, workload, copy)
        run = run_hidden_tests(copy, workload, backend, timeout_s)
        all_ids = list(workload.baseline_tests) + [t for r in workload.requirements for t in r.tests]
        passed, trusted = passed_nodeids(all_ids, run["junit"], run["exit_code"])
        run["report_trusted"] = trusted
        run["reported"] = sorted(read_outcomes(run.pop("junit")))
        boundary = check_boundaries(copy, load_wiring(workload.baseline_dir / "wiring.yaml"), run["dynamic_imports"])
    return {"passed": passed, "run": run, "boundaries": boundary, "excluded": excluded}


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
) -> dict[str, Any]:
    """Score ``sandbox``. ``sessions`` are the session records kept outside the sandbox (the
    pipeline's stage records); without them (a sandbox scored by hand) the copies the session
    runner left in the sandbox's ``.git`` are read."""
    sandbox = sandbox.resolve()
    meta = sandbox_meta(sandbox)
    records = session_records(sandbox) if sessions is None else sessions
    result = evaluate_tree(workload, sandbox, backend, timeout_s)
    passed, boundary, run, excluded = result["passed"], result["boundaries"], result["run"], result["excluded"]
    trusted = run["report_trusted"]
    per_req = {r.id: all(passed[t] for t in r.tests) for r in workload.requirements}
    baseline_failures = [t for t in workload.baseline_tests if not passed[t]]
    protected = protected_changes(sandbox, workload)
    raw = sum(per_req.values())
    net = raw if not baseline_failures and not protected and boundary["violations"] == 0 else 0
    budget = workload.budget_tokens
    tes = net * min(1.0, budget / tokens.total) if tokens.total else float(net)
    notes_file = meta.get("notes_file") or (arm.notes_file if arm else None)
    cleaves = [r["cleave"] for r in records if r.get("cleave", {}).get("rule", "none") != "none"]
    integrity = trial_integrity(records)
    return {
        "workload": workload.id,
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
        "budget_tokens": budget,
        "tokens": tokens.to_dict(),
        "requirements": per_req,
        "baseline_failures": baseline_failures,
        "protected_changed": protected,
        "boundaries": boundary,
        "hidden_run": {"exit_code": run["exit_code"], "report_trusted": trusted, "tail": run["output"][-4000:]},
        "excluded_from_scoring_copy": excluded,
        "poison": poison_report(workload, injection, passed, boundary) if injection else None,
        "diagnostics": {
            "s1_edit_survived": s1_edit_survived(sandbox, records),
            "no_cleave": any(c.get("no_cleave") for c in cleaves),
            "cleave_missed": any(c.get("missed") for c in cleaves),
            "notes": notes_size(sandbox, notes_file, meta.get("notes_cap_tokens")),
            "sessions": [
                {
                    "session": r["session"],
                    "status": r["status"],
                    "wall_s": r["wall_s"],
                    "turns": r["turns"],
                    "tokens": r["tokens"]["total"],
                    "cleave_path": r["cleave"].get("path"),
                    "edit_uncommitted": r["cleave"].get("edit_uncommitted"),
                    "stopped_by": r["cleave"].get("stopped_by"),
                    "tokens_source": r["tokens"].get("source"),
                    "tokens_native": (r.get("tokens_native") or {}).get("total"),
                    "model_calls": r.get("model_calls"),
                    "context_exposure": r.get("context_exposure"),
                    "repo_memory_files": r.get("repo_memory_files"),
                    "redacted_files": r.get("redacted_files", []),
                }
                for r in records
            ],
        },
    }
