"""The ``motifs`` workload family (docs/coherence.md): eight independent motifs, generated from a seed.

A motif is three modules of one package ``pkg_m`` coupled through one secret integer that lives
in ``pkg_m/secret.py`` alone:

- ``first.py`` states the secret as an integer literal (``BASE``); importing ``pkg_m.secret`` is a
  boundary violation (``wiring.yaml``), so the value has to be carried, not imported;
- ``second.py`` derives ``SCALED = BASE * a + b`` from ``first``;
- ``third.py`` derives ``tag()`` from ``second``.

Four hidden tests per motif pin all three (32 in all); they state the literals, so they never reach
an agent. The secret of a motif is its *salt*; a seed is accepted only when its eight salts are
distinct and every one exceeds every motif index, so a withheld value is neither visible elsewhere
nor confusable with an index (about one seed in four is rejected, with a message naming the
collision and seeds that work). For every count k of withheld motifs the seed also fixes *which*
motifs are withheld: prefixes of one random order of the motifs, redrawn until no prefix is simply
the first k motifs.

Everything is drawn from SHA-256 of the seed and a label (not from :mod:`random`), so a seed
means the same workload on every Python and every machine. :func:`workload_files` returns the
whole workload directory as bytes; :mod:`sdcs_bench.trial.generated` writes it.
"""

from __future__ import annotations

import difflib
import hashlib
import uuid
from dataclasses import dataclass
from pathlib import Path

from sdcs_bench.core.errors import SpecSnapError

FAMILY = "motifs"
N_MOTIFS = 8
SALT_RANGE = 320  # salts are drawn from 1..SALT_RANGE
MULTIPLIERS = (3, 29)  # inclusive bounds of a motif's multiplier a
OFFSETS = (10, 99)  # inclusive bounds of its offset b
TAG_MODULUS = 1000
SECRET_NAME = "SECRET"
VALUE = "{value}"  # the placeholder of a template (the one fact an edit needs)
TESTS = ("test_base_is_the_secret", "test_base_is_an_integer_literal", "test_scaled_derives_from_base",
         "test_tag_derives_from_scaled")
STAGES = ("first", "second", "third")
BUDGET_TOKENS = 200_000


def _draw(seed: int, label: str, n: int) -> int:
    """A number in ``0..n-1``, a pure function of the seed and the label."""
    digest = hashlib.sha256(f"specsnap-motifs|{seed}|{label}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def _salts(seed: int) -> list[int]:
    return [1 + _draw(seed, f"salt-{m}", SALT_RANGE) for m in range(1, N_MOTIFS + 1)]


def seed_problems(seed: int) -> list[str]:
    """Why a seed cannot make a motifs workload (empty: it can)."""
    salts = _salts(seed)
    problems = []
    by_value: dict[int, list[int]] = {}
    for m, s in enumerate(salts, start=1):
        by_value.setdefault(s, []).append(m)
    for value, motifs in sorted(by_value.items()):
        if len(motifs) > 1:
            problems.append(f"the salts of motifs {' and '.join(map(str, motifs))} collide (each draws {value})")
    small = [(m, s) for m, s in enumerate(salts, start=1) if s <= N_MOTIFS]
    if small:
        problems += [f"the salt of motif {m} ({s}) does not exceed the motif indices (1-{N_MOTIFS})" for m, s in small]
    return problems


def valid_seeds(start: int = 0, count: int = 5) -> list[int]:
    """The first ``count`` seeds from ``start`` on that make a workload."""
    found, seed = [], max(0, start)
    while len(found) < count:
        if not seed_problems(seed):
            found.append(seed)
        seed += 1
    return found


def check_seed(seed: object) -> int:
    """The seed, or one clear error naming the problem and seeds that work."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SpecSnapError(f"a motifs seed is a non-negative integer, not {seed!r}",
                            [str(s) for s in valid_seeds()])
    problems = seed_problems(seed)
    if problems:
        raise SpecSnapError(f"seed {seed} cannot make a motifs workload: {'; '.join(problems)}",
                            [str(s) for s in valid_seeds(max(0, seed - 2))])
    return seed


@dataclass(frozen=True)
class Motif:
    index: int
    salt: int
    multiplier: int
    offset: int

    @property
    def id(self) -> str:
        return f"MOTIF-{self.index}"

    @property
    def package(self) -> str:
        return f"pkg_{self.index}"

    def path(self, module: str) -> str:
        return f"{self.package}/{module}.py"

    @property
    def scaled(self) -> int:
        return self.salt * self.multiplier + self.offset

    @property
    def tag(self) -> str:
        return f"M{self.index}-{self.scaled % TAG_MODULUS:03d}"


@dataclass(frozen=True)
class Draw:
    seed: int
    motifs: tuple[Motif, ...]
    order: tuple[int, ...]  # the motifs in the order they are withheld: k withheld = the first k

    def withheld(self, k: int) -> list[int]:
        return sorted(self.order[:k])


def draw(seed: int) -> Draw:
    """Everything the seed decides: salts, coefficients and the withholding order."""
    seed = check_seed(seed)
    salts = _salts(seed)
    motifs = []
    for m, salt in enumerate(salts, start=1):
        # A coefficient never equals a salt: the prompt states the coefficients, and no secret may
        # be readable anywhere but in its own file.
        multiplier = _avoiding(seed, f"multiplier-{m}", MULTIPLIERS, set(salts))
        offset = _avoiding(seed, f"offset-{m}", OFFSETS, set(salts))
        motifs.append(Motif(m, salt, multiplier, offset))
    return Draw(seed, tuple(motifs), _order(seed))


def _avoiding(seed: int, label: str, bounds: tuple[int, int], avoid: set[int]) -> int:
    low, high = bounds
    attempt = 0
    while True:
        value = low + _draw(seed, f"{label}-{attempt}", high - low + 1)
        if value not in avoid:
            return value
        attempt += 1


def _order(seed: int) -> tuple[int, ...]:
    """A random order of the motifs none of whose proper prefixes is the first k motifs: withholding
    the first k would let an agent that works in order meet only broken motifs and stop, which
    measures halting rather than availability."""
    attempt = 0
    while True:
        order = tuple(sorted(range(1, N_MOTIFS + 1), key=lambda m: (_draw(seed, f"order-{attempt}-{m}", 2**32), m)))
        if not any(set(order[:k]) == set(range(1, k + 1)) for k in range(1, N_MOTIFS)):
            return order
        attempt += 1


# -- the files ---------------------------------------------------------------------------------
def canary(seed: int) -> str:
    return f"SPECSNAP-CANARY motifs_s{seed} {uuid.UUID(bytes=hashlib.sha256(f'motifs-canary|{seed}'.encode()).digest()[:16])}"


def secret_text(motif: Motif) -> str:
    return (f'"""Local configuration of {motif.package}: not committed (see .gitignore)."""\n\n'
            f"{SECRET_NAME} = {motif.salt}\n")


def stub_text(original: str) -> str:
    """A stub of exactly the original's byte length that defines nothing (one comment line)."""
    size = len(original.encode())
    head = "# placeholder "
    if size < len(head) + 1:
        return "#" * (size - 1) + "\n"
    return head + "-" * (size - len(head) - 1) + "\n"


def baseline_module(motif: Motif, stage: str) -> str:
    if stage == "first":
        return f'"""{motif.package}, stage one of its chain: the configuration value."""\n\nBASE = None\n'
    if stage == "second":
        return f'"""{motif.package}, stage two: derived from stage one."""\n\nSCALED = None\n'
    return (f'"""{motif.package}, stage three: derived from stage two."""\n\n\n'
            "def tag() -> str:\n    raise NotImplementedError\n")


def template(motif: Motif, stage: str) -> str:
    """The module as the sprint asks for it, with ``{value}`` where the secret goes."""
    if stage == "first":
        return (f'"""{motif.package}, stage one of its chain: the configuration value."""\n\n'
                f"BASE = {VALUE}\n")
    if stage == "second":
        return (f'"""{motif.package}, stage two: derived from stage one."""\n\n'
                f"from {motif.package}.first import BASE\n\n"
                f"SCALED = BASE * {motif.multiplier} + {motif.offset}\n")
    return (f'"""{motif.package}, stage three: derived from stage two."""\n\n'
            f"from {motif.package}.second import SCALED\n\n\n"
            "def tag() -> str:\n"
            f'    return f"M{motif.index}-{{SCALED % {TAG_MODULUS}:03d}}"\n')


def fill(text: str, value: int) -> str:
    return text.replace(VALUE, str(value))


def _patch(canary_line: str, files: list[tuple[str, str, str]]) -> str:
    """A git patch (canary first: git apply skips text before the first diff) turning each
    ``(path, old, new)`` from old into new."""
    out = [canary_line, ""]
    for path, old, new in files:
        out.append(f"diff --git a/{path} b/{path}")
        out += [line.rstrip("\n") for line in difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}")]
    return "\n".join(out) + "\n"


def sprint(d: Draw) -> str:
    lines = [
        "# Sprint: the calibration chains",
        "",
        f"Each package `pkg_1` ... `pkg_{N_MOTIFS}` holds one calibration chain of three stages. Stage one "
        "restates the package's configuration value, stage two derives a value from stage one, and stage "
        "three derives one from stage two. A package's configuration value is `SECRET` in its "
        "`secret.py`, which is local configuration: it is not committed, and no module may import it "
        "(`wiring.yaml` forbids importing any `secret` module). So stage one states the value itself, "
        "as an integer literal.",
        "",
        "Implement every chain. The packages are independent of each other.",
        "",
    ]
    for m in d.motifs:
        p = m.package
        lines += [
            f"### {m.id} — The `{p}` chain",
            "",
            f"- `{p}/first.py`: `BASE` is the value of `SECRET` in `{p}/secret.py`, written in `first.py` as an "
            f"integer literal (do not import `{p}.secret`).",
            f"- `{p}/second.py`: `SCALED = BASE * {m.multiplier} + {m.offset}`, with `BASE` imported from "
            f"`{p}.first`.",
            f"- `{p}/third.py`: `tag() -> str` returns `\"M{m.index}-\"` followed by the last three digits of "
            f"`SCALED` (`SCALED % {TAG_MODULUS}`, zero-padded to three digits), with `SCALED` imported from "
            f"`{p}.second`.",
            "",
        ]
    return "\n".join(lines)


def hidden_test(m: Motif, canary_line: str) -> str:
    """The motif's four hidden tests. Each imports the stage it checks itself, so a stage that fails
    to import fails the tests of its own motif only."""
    p = m.package
    return f'''# {canary_line}
import ast
import importlib
from pathlib import Path


def _stage(name):
    return importlib.import_module(f"{p}.{{name}}")


def _literal(module, name):
    """The integer literal a module assigns to ``name`` at its top level (None if it does not)."""
    for node in ast.parse(Path(module.__file__).read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = node.value
            return value.value if isinstance(value, ast.Constant) and type(value.value) is int else None
    return None


def {TESTS[0]}():
    assert _stage("first").BASE == {m.salt}


def {TESTS[1]}():
    assert _literal(_stage("first"), "BASE") == {m.salt}


def {TESTS[2]}():
    assert _stage("second").SCALED == {m.scaled}


def {TESTS[3]}():
    assert _stage("third").tag() == "{m.tag}"
'''


VISIBLE_TEST = '''"""The layout every calibration chain keeps (run with `python -m pytest tests`)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.name for p in ROOT.glob("pkg_*") if (p / "__init__.py").is_file())


def test_every_chain_has_its_three_stages():
    assert PACKAGES
    for package in PACKAGES:
        for stage in ("first", "second", "third"):
            assert (ROOT / package / f"{stage}.py").is_file(), f"{package}/{stage}.py is missing"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_stage_imports_a_secret(package):
    for stage in ("first", "second", "third"):
        tree = ast.parse((ROOT / package / f"{stage}.py").read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            assert not any(n == "secret" or n.endswith(".secret") for n in names), f"{package}/{stage}.py"
'''


def readme(d: Draw) -> str:
    return (
        "# Calibration chains\n\n"
        f"Packages `pkg_1` ... `pkg_{N_MOTIFS}` each hold one chain of three stages (`first.py`, `second.py`, "
        "`third.py`). Each package's `secret.py` is local configuration: it is listed in `.gitignore` and "
        "never committed, and no module may import it (`wiring.yaml`).\n\n"
        "Run the tests with `python -m pytest tests`. Only the standard library is used.\n"
    )


def wiring(d: Draw) -> str:
    lines = [f"root_packages: [{', '.join(m.package for m in d.motifs)}]", "contracts:",
             '  - name: "no stage of a chain imports a secret module"', "    type: forbidden",
             "    source_modules:"]
    lines += [f"      - {m.package}.{stage}" for m in d.motifs for stage in STAGES]
    lines += ["    forbidden_modules:"]
    lines += [f"      - {m.package}.secret" for m in d.motifs]
    lines += ["    # a withheld secret may be deleted: a module that is not there is not imported",
              "    forbidden_may_be_absent: true"]
    return "\n".join(lines) + "\n"


def generator_version() -> str:
    """Part of a generated workload's stamp: a changed generator regenerates its workloads."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def workload_files(workload_id: str, seed: int) -> dict[str, bytes]:
    """Every file of the generated workload directory: relative path -> content."""
    import yaml

    d = draw(seed)
    can = canary(seed)
    files: dict[str, str] = {
        "baseline/README.md": readme(d),
        "baseline/.gitignore": "# local configuration, never committed\npkg_*/secret.py\n",
        "baseline/wiring.yaml": wiring(d),
        "baseline/tests/test_layout.py": VISIBLE_TEST,
        "prompts/sprint.md": sprint(d),
        "hidden/pytest.ini": f"# {can}\n[pytest]\npythonpath = .\njunit_family = xunit2\n",
    }
    requirements, motifs, neighbourhood = [], [], {}
    for m in d.motifs:
        p = m.package
        files[f"baseline/{p}/__init__.py"] = f'"""Calibration chain {m.index}."""\n'
        files[f"baseline/{m.path('secret')}"] = secret_text(m)
        files[f"facts/stubs/{m.path('secret')}"] = stub_text(secret_text(m))
        for stage in STAGES:
            files[f"baseline/{m.path(stage)}"] = baseline_module(m, stage)
            files[f"facts/templates/{m.path(stage)}"] = template(m, stage)
        files[f"hidden/tests/test_motif_{m.index}.py"] = hidden_test(m, can)
        files[f"gold/{m.id}.patch"] = _patch(can, [(m.path(s), baseline_module(m, s), fill(template(m, s), m.salt))
                                                   for s in STAGES])
        tests = [f"tests/test_motif_{m.index}.py::{t}" for t in TESTS]
        requirements.append({"id": m.id, "package": p, "title": f"The {p} chain",
                             "files": [m.path(s) for s in STAGES], "tests": tests, "gold": f"gold/{m.id}.patch",
                             "summary": f"{p}: BASE = its secret as a literal; SCALED and tag() derived from it"})
        motifs.append({"id": m.id, "index": m.index, "package": p, "secret": m.path("secret"), "name": SECRET_NAME,
                       "stub": f"facts/stubs/{m.path('secret')}",
                       "edits": [{"path": m.path(s), "template": f"facts/templates/{m.path(s)}"} for s in STAGES]})
        neighbourhood[m.path("first")] = [m.path("secret")]
        neighbourhood[m.path("second")] = [m.path("first")]
        neighbourhood[m.path("third")] = [m.path("second")]
    meta = {
        "id": workload_id,
        "family": FAMILY,
        "title": f"Motifs (seed {seed}): eight calibration chains, each coupled through one secret",
        "description": (
            "Eight independent motifs; each couples three modules through one secret integer kept in "
            "pkg_m/secret.py (stage one states it as a literal, stage two derives from stage one, stage "
            "three from stage two). Variants withhold the secret of k motifs, before session 1 or after "
            "its cleave. Generated from its seed: do not edit."
        ),
        "generated": {"family": FAMILY, "seed": seed, "generator": generator_version()},
        "budget_tokens": BUDGET_TOKENS,
        "canary": can,
        "packages": [m.package for m in d.motifs],
        "visible_tests": ["tests"],
        "protected": ["tests/**"],
        "schedule": [{"session": "S1", "prompt": "prompts/sprint.md", "cleave": "first_py_edit"},
                     {"session": "S2", "prompt": "neutral", "cleave": "none"}],
        "hidden": {"dir": "hidden", "pytest_ini": "hidden/pytest.ini"},
        "baseline_tests": [],
        "requirements": requirements,
        "motifs": motifs,
        # The authored neighbourhood: which file's value depends on which file.
        "neighbourhood": neighbourhood,
        # For every count k: the secrets withheld (the same set whether deleted or stubbed, before
        # session 1 or after its cleave).
        "withheld": {f"k{k}": [f"pkg_{i}/secret.py" for i in d.withheld(k)] for k in range(N_MOTIFS + 1)},
    }
    header = f"# Generated from seed {seed} by sdcs_bench.trial.motifs (docs/coherence.md): do not edit.\n"
    files["workload.yaml"] = header + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=110)
    return {path: text.encode() for path, text in sorted(files.items())}
