"""``specsnap validate-workload`` (docs/protocol.md): the checks SWE-bench runs on gold and empty patches,
plus the data the reference policies rely on."""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sdcs_bench.sandbox.leakcheck import secret_file_hashes
from sdcs_bench.sandbox import Backend
from sdcs_bench.sandbox.base import base_env
from sdcs_bench.sandbox.environment import environment_access, with_environment
from sdcs_bench.scoring.junit import junit_key
from sdcs_bench.scoring.scorer import evaluate_tree, first_errors
from sdcs_bench.trial.standards import write_layout
from sdcs_bench.trial.workload_model import Workload


class Checks:
    """What a validation found. A test that fails is said once, with every tree it fails on, its
    first error line and the log of the run that showed it (``logs``: where each scoring run's
    output is kept, one file per tree)."""

    def __init__(self, progress: Callable[[str], None] | None = None, logs: Path | None = None) -> None:
        self.failures: list[str] = []
        self.passed = 0
        self.progress = progress or (lambda _msg: None)
        self.logs = logs
        self.errors: dict[str, dict[str, str]] = {}  # tree -> test file -> its first error line
        self.failing: dict[str, list[str]] = {}  # test -> the trees it fails on
        self.first: dict[str, tuple[str, str]] = {}  # test -> (its first error line, the tree's log)

    def expect(self, ok: bool, message: str) -> bool:
        if ok:
            self.passed += 1
        else:
            self.failures.append(message)
        return ok

    def expect_passes(self, ok: bool, test: str, where: str, tree: str) -> bool:
        """A test that must pass on ``tree`` (said ``where``); its failures are gathered per test."""
        if ok:
            self.passed += 1
            return True
        self.failing.setdefault(test, []).append(where)
        if test not in self.first:
            from sdcs_bench.scoring.junit import HIDDEN_PREFIX

            why = self.errors.get(tree, {}).get(f"{HIDDEN_PREFIX}/{test.partition('::')[0]}", "")
            log = str(self.logs / f"{tree}.log") if self.logs is not None else ""
            self.first[test] = (why, log)
        return False

    def evaluate(self, workload: Workload, tree: Path, backend: Backend) -> dict:
        """The scorer on ``tree``; its output kept (``logs``) and its first error lines read."""
        result = evaluate_tree(workload, tree, backend)
        output = result["run"]["output"]
        self.errors[tree.name] = first_errors(output)
        if self.logs is not None:
            self.logs.mkdir(parents=True, exist_ok=True)
            (self.logs / f"{tree.name}.log").write_text(output)
        return result

    def finish(self) -> Checks:
        for test, where in self.failing.items():
            why, log = self.first[test]
            self.failures.append(f"{test} fails ({', '.join(where)})" + (f": {why}" if why else "")
                                 + (f" (log: {log})" if log else ""))
        self.failing.clear()
        return self


def _tree(workload: Workload, tmp: Path, name: str, patches: list[Path], *, skeleton: bool = False) -> Path:
    """The baseline (with the tier-1 baseline implementation, unless ``skeleton``) plus patches."""
    tree = tmp / name
    shutil.copytree(workload.baseline_dir, tree, ignore=shutil.ignore_patterns("__pycache__"))
    if workload.standards is not None:  # the generic checks run on the workload's default layout
        write_layout(workload.standards, workload.standards.default_layout, tree)
    if workload.baseline_gold is not None and not skeleton:
        patches = [workload.baseline_gold, *patches]
    for patch in patches:
        proc = subprocess.run(["git", "apply", str(patch)], cwd=tree, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{patch.name} does not apply: {proc.stderr.strip()}")
    return tree


def _apply_problem(tree: Path, patch: Path) -> str | None:
    """Why ``patch`` does not apply to ``tree`` (git's own words), or None when it does."""
    proc = subprocess.run(["git", "apply", "--check", str(patch)], cwd=tree, capture_output=True, text=True)
    return None if proc.returncode == 0 else " ".join(proc.stderr.split()) or f"git apply exited {proc.returncode}"


def _applies(tree: Path, patch: Path) -> bool:
    return _apply_problem(tree, patch) is None


def _check_patches_apply(c: Checks, workload: Workload, tmp: Path) -> None:
    """Each gold patch applies alone to the baseline (a real repository's pinned source), and all of
    them apply one after another in the order listed: each failure names the requirement (bug) and
    its ``gold`` file."""
    base = _tree(workload, tmp, "apply-check", [])
    what = "the pinned source" if workload.is_real_repo else "the baseline"
    together = True
    for r in workload.requirements:
        shown = r.gold.relative_to(workload.root).as_posix()
        problem = _apply_problem(base, r.gold)
        c.expect(problem is None, f"{r.id}: its gold ({shown}) does not apply to {what}: {problem}")
        if problem is None and together:
            proc = subprocess.run(["git", "apply", str(r.gold)], cwd=base, capture_output=True, text=True)
            together = c.expect(proc.returncode == 0, f"{r.id}: its gold ({shown}) does not apply after the golds "
                                                      f"listed before it: {' '.join(proc.stderr.split())}")


def _visible_tests_pass(workload: Workload, tree: Path, backend: Backend) -> bool:
    """The tests an agent sees pass on ``tree``, run the way an agent would run them (a real
    repository's in its own environment, its excluded tests deselected)."""
    home = tree / ".home"
    home.mkdir(exist_ok=True)
    python, readable = environment_access(workload.environment_dir)
    env = with_environment(base_env(home), python)
    if python is None:
        argv = [sys.executable, "-I", "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "pythonpath=.",
                "--rootdir", ".", *workload.visible_tests]
    else:  # as its own developers run it: the package importable from its import root
        env["PYTHONPATH"] = workload.import_root
        deselect = [arg for test, _ in workload.excluded_tests for arg in ("--deselect", test)]
        argv = [python, "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider", *deselect,
                workload.source_tests or "."]
    code, _, _ = backend.run(argv, workdir=tree, home=home, env=env, timeout=600, ro_binds=readable)
    return code == 0


def _check_requirement(c: Checks, workload: Workload, r, tmp: Path, backend: Backend) -> list[tuple]:
    """Its gold alone turns exactly its own tests green; its summary and superseded patches
    apply, conflict with the gold both ways and fail its tests. (Results as (ok, message), or
    (ok, test, where, tree) for a test that must pass: said once per test by :class:`Checks`.)"""
    out: list[tuple] = []
    tree = _tree(workload, tmp, f"gold-{r.id}", [r.gold])
    passed = c.evaluate(workload, tree, backend)["passed"]
    for other in workload.requirements:
        for t in other.tests:
            if other.id == r.id:
                out.append((passed[t], t, f"with {r.id}'s gold alone", tree.name))
            else:
                out.append((not passed[t], f"gold {r.id} alone: {t} passes"))
    for t in workload.baseline_tests:
        out.append((passed[t], t, f"with {r.id}'s gold alone", tree.name))
    for kind, patch in (("summary patch", r.from_summary), ("superseded gold", r.superseded_gold)):
        if patch is None:
            continue
        out.append((not _applies(tree, patch), f"{r.id}: the {kind} still applies on top of the gold (it must conflict)"))
        wrong = _tree(workload, tmp, f"{kind.replace(' ', '-')}-{r.id}", [patch])
        out.append((not _applies(wrong, r.gold), f"{r.id}: the gold still applies on top of the {kind} (it must conflict)"))
        passed = c.evaluate(workload, wrong, backend)["passed"]
        out.append((not all(passed[t] for t in r.tests), f"{r.id}: the {kind} passes every test of its requirement"))
        out.append((all(passed[t] for t in workload.baseline_tests), f"{r.id}: the {kind} breaks a baseline test"))
    return out


def _check_poison(c: Checks, workload: Workload, tmp: Path, backend: Backend) -> None:
    """Each defect, marked and unmarked, planted on the baseline and on the full gold: every visible
    test stays green; exactly the hidden tests it names turn red (and nothing else does), or
    exactly the forbidden import it names appears; its patch leaves every gold patch applicable
    (the sprint can still be done around it); it carries no canary."""
    reqs = workload.requirements
    for d in workload.poison:
        for version, patch in (("v1", d.marked_patch), ("v2", d.patch)):
            where = f"poison {d.id} ({version})"
            c.expect(workload.canary not in patch.read_text(), f"{where}: the patch contains the canary")
            for base_name, base_patches in (("baseline", []), ("full gold", [r.gold for r in reqs])):
                try:
                    tree = _tree(workload, tmp, f"poison-{d.id}-{version}-{base_name.replace(' ', '-')}",
                                 [*base_patches, patch])
                except RuntimeError as exc:
                    c.expect(False, f"{where} on the {base_name}: {exc}")
                    continue
                c.expect(_visible_tests_pass(workload, tree, backend),
                         f"{where} on the {base_name}: a visible test fails (a planted defect must pass them)")
                result = evaluate_tree(workload, tree, backend)
                if base_name == "full gold":
                    red = sorted(t for t, ok in result["passed"].items() if not ok)
                    c.expect(red == sorted(d.fails), f"{where} on the full gold: failing hidden tests {red}, "
                                                     f"workload.yaml says {sorted(d.fails)}")
                edges = {(v["importer"], v["imported"]) for v in result["boundaries"]["details"]}
                want = {d.forbidden_import} if d.forbidden_import else set()
                c.expect(edges == want, f"{where} on the {base_name}: boundary violations {sorted(edges)}, "
                                        f"workload.yaml says {sorted(want)}")
            for r in reqs:
                planted = _tree(workload, tmp, f"poison-{d.id}-{version}-{r.id}", [patch])
                c.expect(_applies(planted, r.gold), f"{where}: the gold of {r.id} no longer applies on top of it")


_NUMBER = re.compile(r"(?<![0-9A-Za-z_.])[0-9]+(?![0-9A-Za-z_])")


def _secret_value(path: Path, name: str) -> int | None:
    """The integer ``path`` assigns to ``name`` at its top level, as a literal (None: it does not)."""
    try:
        body = ast.parse(path.read_bytes()).body
    except (OSError, SyntaxError):
        return None
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                return node.value.value
    return None


def _check_facts(c: Checks, workload: Workload, tmp: Path, backend: Backend) -> None:
    """A coherence workload (docs/coherence.md): generated exactly from its seed; its salts distinct,
    above every motif index and readable nowhere an agent looks but in their own file (the hidden
    tests state them, which is why they stay hidden); each stub as long as its secret and defining
    nothing; each withheld set of the right size and never simply the first k motifs; secrets kept
    out of every commit and forbidden to import; the policies' templates equal to the gold; and the
    full gold still passing every test, with no boundary violation, once every secret is deleted or
    stubbed."""
    facts = workload.facts
    motifs = facts.motifs
    if workload.generated is not None:
        from sdcs_bench.trial.generated import differences

        family, seed = workload.generated
        for problem in differences(workload.root, workload.id, family, seed):
            c.expect(False, f"{workload.root.name}: {problem} (regenerate it: delete the directory)")
    values = {m.id: _secret_value(workload.baseline_dir / m.secret, m.name) for m in motifs}
    for m in motifs:
        c.expect(values[m.id] is not None, f"{m.id}: {m.secret} assigns no integer literal to {m.name}")
    salts = [v for v in values.values() if v is not None]
    c.expect(len(set(salts)) == len(salts), f"the motifs' salts collide: {sorted(salts)}")
    top = max(m.index for m in motifs)
    for m in motifs:
        value = values[m.id]
        if value is None:
            continue
        c.expect(value > top, f"{m.id}: its salt {value} does not exceed the motif indices (1-{top})")
        visible = [p for p in workload.baseline_dir.rglob("*") if p.is_file() and p.relative_to(workload.baseline_dir).as_posix() != m.secret]
        visible += [p for p in (workload.root / "prompts").rglob("*") if p.is_file()]
        visible += [e.template for other in motifs for e in other.edits]
        for path in visible:
            c.expect(str(value) not in _NUMBER.findall(path.read_text(errors="replace")),
                     f"{m.id}: its secret {value} is readable in {path.relative_to(workload.root)}")
        tests = {t.split("::")[0] for t in workload.requirement(m.id).tests}
        stated = any(str(value) in _NUMBER.findall((workload.hidden_dir / t).read_text()) for t in tests)
        c.expect(stated, f"{m.id}: no hidden test states its secret {value}")
        secret, stub = (workload.baseline_dir / m.secret).read_bytes(), m.stub.read_bytes()
        c.expect(len(stub) == len(secret), f"{m.id}: its stub is {len(stub)} bytes, its secret {len(secret)}")
        try:
            defines = [type(n).__name__ for n in ast.parse(stub).body]
        except SyntaxError as exc:
            defines = [f"a syntax error ({exc.msg})"]
        c.expect(not defines, f"{m.id}: its stub is not empty of definitions: {defines}")
    for k, paths in facts.withheld:
        c.expect(len(set(paths)) == k, f"withheld k{k} names {len(set(paths))} distinct secrets")
        first = {m.secret for m in sorted(motifs, key=lambda m: m.index)[:k]}
        if 0 < k < len(motifs):
            c.expect(set(paths) != first, f"withheld k{k} is the first {k} motifs: it must be drawn at random")
    levels = sorted(k for k, _ in facts.withheld)
    c.expect(levels == list(range(len(motifs) + 1)), f"withheld sets are given for k in {levels}, not for every k "
                                                      f"from 0 to {len(motifs)}")
    for path, deps in facts.neighbourhood:
        for rel in (path, *deps):
            c.expect((workload.baseline_dir / rel).is_file(), f"neighbourhood: {rel} is no file of the baseline")
    # Secrets never enter a sandbox's history, and importing one breaks the wiring rules.
    repo = _tree(workload, tmp, "facts-ignored", [])
    subprocess.run(["git", "init", "-q"], cwd=repo, capture_output=True)
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *facts.secrets], cwd=repo, capture_output=True,
                             text=True).stdout.split()
    for secret in facts.secrets:
        c.expect(secret in ignored, f"{secret} is not ignored by the baseline's .gitignore: it would be committed")
    from sdcs_bench.scoring.boundaries import load_wiring

    forbidden = {m for contract in load_wiring(workload.wiring_path).get("contracts", [])
                 if contract.get("type") == "forbidden" for m in contract.get("forbidden_modules", [])}
    for m in motifs:
        module = m.secret.removesuffix(".py").replace("/", ".")
        c.expect(module in forbidden, f"{m.id}: wiring.yaml does not forbid importing {module}")
    gold = _tree(workload, tmp, "facts-gold", [r.gold for r in workload.requirements])
    for m in motifs:
        for e in m.edits:
            want = e.template.read_text().replace("{value}", str(values[m.id]))
            c.expect((gold / e.path).read_text() == want,
                     f"{m.id}: the template {e.template.relative_to(workload.root)} filled with its secret is not "
                     f"the gold's {e.path}")
    n_tests = sum(len(r.tests) for r in workload.requirements)
    for mode in ("delete", "stub"):
        tree = _tree(workload, tmp, f"facts-gold-{mode}", [r.gold for r in workload.requirements])
        for m in motifs:
            if mode == "delete":
                (tree / m.secret).unlink()
            else:
                (tree / m.secret).write_bytes(m.stub.read_bytes())
        result = evaluate_tree(workload, tree, backend)
        passed = sum(ok for t, ok in result["passed"].items() if t not in workload.baseline_tests)
        c.expect(passed == n_tests, f"full gold with every secret {mode}d: {passed} of {n_tests} tests pass")
        c.expect(result["boundaries"]["violations"] == 0,
                 f"full gold with every secret {mode}d breaks wiring.yaml: {result['boundaries']['details']}")


def validate_workload(workload: Workload, backend: Backend, progress: Callable[[str], None] | None = None,
                      logs: Path | None = None) -> Checks:
    """Every check of the workload; ``logs``: where each scoring run's output is kept."""
    c = Checks(progress, logs)
    reqs = workload.requirements
    ids = [r.id for r in reqs]
    c.expect(len(ids) == len(set(ids)), f"requirement ids are not unique: {ids}")
    listed = list(workload.baseline_tests) + [t for r in reqs for t in r.tests]
    c.expect(len(listed) == len(set(listed)), "a hidden test is listed twice")
    canary = workload.canary
    secret_hashes = secret_file_hashes(workload)
    for root in workload.secret_dirs():
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            c.expect(canary in path.read_text(errors="replace"), f"{path.relative_to(workload.root)} lacks the canary")
    visible = [workload.baseline_dir, workload.root / "prompts", *(workload.root / h.path for h in workload.hints)]
    for root in (r for r in visible if r.exists()):
        for path in (p for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file()):
            shown = f"{root.name}/{path.relative_to(root)}" if root.is_dir() else path.relative_to(workload.root).as_posix()
            c.expect(canary not in path.read_text(errors="replace"),
                     f"{shown} contains the canary: hidden content leaked into what agents see")
            c.expect(hashlib.sha256(path.read_bytes()).hexdigest() not in secret_hashes,
                     f"{shown} is a copy of a hidden test or gold file")
    if workload.standards is not None:
        c.progress("standards: predicates, layouts, the sealed queue, the reference policies' decisions")
        check_standards(c, workload)
    if c.failures:  # (that every named file exists was checked when the workload was loaded)
        return c

    with tempfile.TemporaryDirectory(prefix="specsnap-validate-") as tmpdir:
        tmp = Path(tmpdir)
        c.progress("patches")
        _check_patches_apply(c, workload, tmp)
        if c.failures:
            return c
        c.progress("baseline")
        base = _tree(workload, tmp, "baseline", [])
        c.expect(_visible_tests_pass(workload, base, backend), "baseline: the visible tests do not pass")
        result = c.evaluate(workload, base, backend)
        c.expect(not result["tampered"], f"baseline: an honest run was marked tampered: {result['tamper_evidence'][:3]}")
        passed = result["passed"]
        for t in workload.baseline_tests:
            c.expect_passes(passed[t], t, "on the pinned source" if workload.is_real_repo else "on the baseline", base.name)
        for r in reqs:
            for t in r.tests:
                c.expect(not passed[t], f"{r.id}: its test {t} (tests:) already passes on the pinned source, so it "
                                        "finds no bug" if workload.is_real_repo else f"baseline: {r.id} test {t} already passes")
        c.expect(result["boundaries"]["violations"] == 0, f"baseline breaks wiring.yaml: {result['boundaries']['details']}")

        if workload.baseline_gold is not None:
            c.progress("skeleton (before the agent implements the baseline)")
            skeleton = _tree(workload, tmp, "skeleton", [], skeleton=True)
            c.expect(not _visible_tests_pass(workload, skeleton, backend),
                     "skeleton: the visible tests already pass before the baseline is implemented")
            passed = evaluate_tree(workload, skeleton, backend)["passed"]
            c.expect(not all(passed[t] for t in workload.baseline_tests),
                     "skeleton: every hidden baseline test already passes before the baseline is implemented")

        c.progress("full gold")
        gold = _tree(workload, tmp, "gold", [r.gold for r in reqs])
        c.expect(_visible_tests_pass(workload, gold, backend), "full gold: the visible tests do not pass")
        result = c.evaluate(workload, gold, backend)
        c.expect(not result["tampered"], f"full gold: an honest run was marked tampered: {result['tamper_evidence'][:3]}")
        c.expect(result["sentinels"]["failing_twins"] > 0,
                 "full gold: no hidden test has a top-level `assert X == <literal>`, so no failing sentinel can be planted")
        for t, ok in result["passed"].items():
            c.expect_passes(ok, t, "with every gold", gold.name)
        c.expect(result["boundaries"]["violations"] == 0, f"full gold breaks wiring.yaml: {result['boundaries']['details']}")
        reported = {tuple(k) for k in result["run"]["reported"]}
        expected = {junit_key(t) for t in listed}
        excluded = {junit_key(t) for t, _ in workload.excluded_tests}  # a real repository's, with reasons
        c.expect(not excluded & expected, "a test is both in the baseline and excluded from it")
        # (an excluded id is a prefix, as pytest's --deselect reads it: one whose id holds an address)
        reported = {k for k in reported if not any(k[0] == e[0] and k[1].startswith(e[1]) for e in excluded)}
        for key in sorted(reported - expected):
            c.expect(False, f"hidden test {'::'.join(key)} is not listed in workload.yaml")
        for t in listed:
            c.expect(junit_key(t) in reported, f"listed hidden test {t} was not collected")

        if workload.poison:
            c.progress("poison pill")
            _check_poison(c, workload, tmp, backend)

        if workload.facts is not None:
            c.progress("authored facts (seed, salts, stubs, withheld sets, withholding)")
            _check_facts(c, workload, tmp, backend)

        # Requirements are independent: check them side by side, one per core.
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for r, results in zip(reqs, pool.map(lambda r: _check_requirement(c, workload, r, tmp, backend), reqs)):
                c.progress(f"requirement {r.id}")
                for ok, *said in results:
                    c.expect_passes(ok, *said) if len(said) == 3 else c.expect(ok, said[0])
    return c.finish()


def check_standards(c: Checks, workload: Workload, counts: tuple[int, ...] | None = None) -> None:
    """The standards family's own checks (docs/coherence.md), none of which runs code: every predicate
    on its hand-written examples; every handler written either way on every surface classifies as
    written; each gold is its task's handler written the better way; each task's text names what its
    handler needs; and for every layout (``counts``: conflict counts, default all): STYLE.md states
    exactly the standard's forms, the existing handlers show exactly the code's forms, no layout file
    leaks hidden content, the queue opens only in order and issues a task only once the handlers
    before it exist, and the reference policies' handlers classify as their closed forms say."""
    import ast
    import json

    from sdcs_bench.scoring.standards import PREDICATES, classify, form_of, standards_report
    from sdcs_bench.trial import policy_rules
    from sdcs_bench.trial import standards as st
    from sdcs_bench.trial import standards_issuer as issuer

    spec = workload.standards
    for surface in spec.surfaces:
        c.expect(len({ex["expect"] for ex in surface.examples} & {"better", "worse"}) == 2,
                 f"standards: surface {surface.id} needs hand-written examples of both forms")
        for i, ex in enumerate(surface.examples, start=1):
            got = form_of(PREDICATES[surface.id](ast.parse(ex["source"]), spec.example_context)) or "absent"
            c.expect(got == ex["expect"], f"standards: surface {surface.id}, example {i}: the predicate finds "
                                          f"{got}, the example is {ex['expect']}: {ex['source']!r}")
    for h in (*spec.existing, *spec.tasks):
        pieces = st.handler_pieces(h)
        for base in st.FORMS:
            flip = "worse" if base == "better" else "better"
            for changed in (None, *st.SURFACES):
                forms = {s: flip if s == changed else base for s in st.SURFACES}
                got = classify(st.render(pieces, forms), h)
                c.expect(got == forms, f"standards: {h.id} written {base}"
                                       f"{f' but {changed} {flip}' if changed else ''} classifies as {got}")
    for task, req in zip(spec.tasks, workload.requirements):
        c.expect(req.gold.read_text() == st.gold_patch(task, workload.canary),
                 f"standards: {req.gold.name} is not {task.id}'s handler written the better way (trial.standards.gold_patch)")
        text = policy_rules.norm(task.text)
        needed = [task.module, task.rate_name, str(task.rate_bp), *task.fields, task.optional,
                  "*handle " + " ".join(task.words) + "*", *(f"*{words}*" for words, _ in task.respond)]
        missing = [n for n in needed if n not in text]
        c.expect(not missing, f"standards: task {task.id}'s text does not name {', '.join(missing)}")
    secrets = secret_file_hashes(workload)
    names = [t.module for t in spec.tasks] + [t.event for t in spec.tasks] + [t.rate_name for t in spec.tasks]
    for layout in spec.all_layouts(counts or tuple(range(len(st.SURFACES) + 1))):
        where = f"standards layout {layout.name}"
        files = spec.layout_files(layout)
        style = files.get(st.STYLE_FILE)
        c.expect((style is None) == (layout.standard == "none"), f"{where}: STYLE.md present is wrong")
        for surface in spec.surfaces:
            stated = {f for f in st.FORMS if style is not None and surface.rules[f] in policy_rules.norm(style)}
            want = {layout.standard_form(surface.id)} - {None}
            c.expect(stated == want, f"{where}: STYLE.md states {sorted(stated)} for {surface.id}, not {sorted(want)}")
        for h in spec.existing:
            got = classify(files[h.module], h)
            c.expect(got == layout.code_forms(), f"{where}: {h.module} shows {got}, not the code's forms")
        for rel, text in files.items():
            c.expect(workload.canary not in text and hashlib.sha256(text.encode()).hexdigest() not in secrets,
                     f"{where}: {rel} carries hidden content")
        queue_text = files[st.QUEUE_FILE]
        c.expect(not [n for n in names if n in queue_text], f"{where}: the sealed queue shows a task's name in clear")
        _check_queue(c, where, json.loads(queue_text), spec, issuer)
        with tempfile.TemporaryDirectory(prefix="specsnap-standards-") as tmpdir:
            tree = Path(tmpdir)
            shutil.copytree(workload.baseline_dir, tree, dirs_exist_ok=True)
            st.write_layout(spec, layout, tree)
            for k, task in enumerate(spec.tasks):  # the issuer hands out task k once the k handlers before it exist
                number, _, entry = issuer.current(tree)
                c.expect(number == k + 1 and entry and entry["text"] == spec.issued_text(task, k + 1),
                         f"{where}: with {k} handler(s) written the issuer gives task {number}, not {k + 1}")
                (tree / task.module).write_text(st.gold_source(task))
            c.expect(issuer.current(tree)[2] is None, f"{where}: the issuer does not say the queue is empty at the end")
            (tree / spec.tasks[0].module).unlink()  # a removed handler is issued again, before any later one
            c.expect(issuer.current(tree)[0] == 1, f"{where}: a removed first handler is not issued again")
            for mode in ("follow_standard", "follow_code", "gold"):
                forms = st.policy_forms(layout, mode)
                for task in spec.tasks:
                    (tree / task.module).write_text(st.render(st.handler_pieces(task), forms))
                report = standards_report(spec, layout, tree)
                want = st.expected_decisions(spec, layout, {t.id: forms for t in spec.tasks})
                c.expect(all(report[k] == want[k] for k in st.COMPARED) and not report["sources_modified"],
                         f"{where}: the {mode} handlers score {[report[k] for k in st.COMPARED]}, their closed "
                         f"form is {[want[k] for k in st.COMPARED]}")


def _check_queue(c: Checks, where: str, queue: dict, spec, issuer) -> None:
    """Each entry opens with the key chained through the plaintexts before it, and with no other key
    this queue can give (the first key, or one chained through any other entry)."""
    key = issuer.first_key(queue["salt"])
    keys, plains = [], []
    for box in queue["tasks"]:
        try:
            plain = issuer.unseal(box, key)
        except issuer.QueueError:
            c.expect(False, f"{where}: entry {len(keys) + 1} does not open in order")
            return
        keys.append(key)
        plains.append(plain)
        key = issuer.next_key(key, plain)
    wrong = [issuer.first_key(queue["salt"])] + [issuer.next_key(k, p) for k in keys for p in plains]
    for n, box in enumerate(queue["tasks"]):
        opened = []
        for k in wrong:
            if k == keys[n]:
                continue
            try:
                issuer.unseal(box, k)
                opened.append(k)
            except issuer.QueueError:
                pass
        c.expect(not opened, f"{where}: entry {n + 1} opens with a key other than its own")
