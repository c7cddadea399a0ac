"""What a workload is, as data: its sessions and their cut rules, its requirements, the poison-pill
defects, hint files and a coherence workload's authored facts (docs/protocol.md).

Only the model: reading ``conf/workload/`` is :mod:`sdcs_bench.trial.workload_registry`, reading a
workload's own directory into this model is :mod:`sdcs_bench.trial.workload`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.trial.repo import EnvironmentSpec, SourcePin

# The protocol's fixed continuation prompt (data, quoted verbatim from the original protocol).
NEUTRAL_PROMPT = (
    "Continue from the current workspace state, complete all remaining requirements across the "
    "packages, verify all tests pass, and commit your work."
)

CLEAVE_KINDS = ("none", "first_py_edit", "nth_py_edit", "first_py_edit_after_commit", "after_tokens", "after_turns",
                "after_token_share")
# Rules that count something else than .py edits: the session's model tokens or answered model
# calls (the proxy's count; a reference policy's meter, docs/protocol.md#cut-points).
# ``after_token_share:P`` is ``after_tokens`` at P percent of the same agent's uninterrupted run.
METER_KINDS = ("after_tokens", "after_turns", "after_token_share")
_COUNTED = {"nth_py_edit": "nth_py_edit:3", "after_tokens": "after_tokens:20000", "after_turns": "after_turns:5",
            "after_token_share": "after_token_share:50"}


@dataclass(frozen=True)
class CleaveRule:
    """When a session is stopped: never, at the N-th qualifying ``.py`` write (``first_py_edit`` is
    N = 1; tier 1's rule counts only after the agent's first commit), once the session's model
    tokens reach N (``after_tokens:N``), or N percent of what the same agent's uninterrupted run
    spent (``after_token_share:N``, resolved to ``after_tokens`` before the session), or at its
    N-th answered model call (``after_turns:N``)."""

    kind: str
    n: int = 1

    @classmethod
    def parse(cls, text: str | None) -> CleaveRule:
        text = (text or "none").strip()
        kind, _, arg = text.partition(":")
        if kind not in CLEAVE_KINDS:
            raise unknown("cleave rule", text, CLEAVE_KINDS)
        if kind in _COUNTED:
            if not arg.isdigit() or int(arg) < 1:
                raise SpecSnapError(f"cleave rule {text!r} needs a positive whole number, e.g. {_COUNTED[kind]}")
            return cls(kind, int(arg))
        if arg:
            raise SpecSnapError(f"cleave rule {kind!r} takes no argument (got {text!r})")
        return cls(kind)

    @property
    def active(self) -> bool:
        return self.kind != "none"

    @property
    def metered(self) -> bool:
        """Whether the rule counts model tokens or calls instead of ``.py`` edits."""
        return self.kind in METER_KINDS

    @property
    def needs_baseline(self) -> bool:
        """Whether the rule is a share of the uninterrupted run's tokens, known only once that ran."""
        return self.kind == "after_token_share"

    def reached(self, calls: int, tokens: int) -> bool:
        """Whether a token or turn rule's cut is reached after ``calls`` answered calls that spent
        ``tokens`` in all (never, for any other rule)."""
        if self.kind == "after_tokens":
            return tokens >= self.n
        return self.kind == "after_turns" and calls >= self.n

    def resolved(self, baseline_tokens: int) -> CleaveRule:
        """``after_token_share:P`` as ``after_tokens:T``, T = ceil(P% of ``baseline_tokens``), at least 1."""
        if not self.needs_baseline:
            return self
        return CleaveRule("after_tokens", max(1, -(-self.n * int(baseline_tokens) // 100)))

    @property
    def edit_limit(self) -> int | None:
        """The edit at which an edit rule cuts (counted after the first commit under tier 1's)."""
        if self.kind in ("first_py_edit", "first_py_edit_after_commit"):
            return 1
        return self.n if self.kind == "nth_py_edit" else None

    def __str__(self) -> str:
        return f"{self.kind}:{self.n}" if self.kind in _COUNTED else self.kind


@dataclass(frozen=True)
class SessionSpec:
    name: str
    prompt: str
    prompt_source: str
    cleave: CleaveRule


@dataclass(frozen=True)
class Requirement:
    id: str
    package: str
    title: str
    files: tuple[str, ...]
    tests: tuple[str, ...]
    gold: Path
    summary: str
    from_summary: Path | None  # None: the one-line summary keeps every tested detail
    text: str  # the requirement's full section of the prompt that introduced it, verbatim
    wave: int = 1
    upstream: str = ""  # a real repository's bug: where it was reported and fixed upstream
    fixed_in: str = ""
    # A later prompt may amend the requirement in place (tier 4): the gold is then the amended
    # form, and ``superseded_gold`` implements the original text, which the hidden tests reject.
    amendment: str | None = None
    amended_in: str | None = None  # the session whose prompt carries the amendment
    superseded_gold: Path | None = None

    @property
    def summary_patch(self) -> Path:
        return self.from_summary or self.gold


@dataclass(frozen=True)
class Defect:
    """A defect the poison-pill variants plant between two sessions (docs/protocol.md): a patch that keeps
    every visible test green, and how the scorer sees it survive (hidden tests it turns red on a
    complete solution, or the import it adds that a wiring.yaml contract forbids)."""

    id: str
    file: str
    description: str
    patch: Path  # unmarked (v2, v3)
    marked_patch: Path  # with marking comments (v1)
    fails: tuple[str, ...] = ()
    forbidden_import: tuple[str, str] | None = None  # (importer, imported)

    def patch_for(self, version: str) -> Path:
        return self.marked_patch if version == "v1" else self.patch


@dataclass(frozen=True)
class Hint:
    """A real repository's hint file (a partial AGENTS.md, a hand-written ``state.md`` backlog) that an
    arm may place in the sandbox, and the bugs whose areas it names (what the hint-following
    reference policy can know from it)."""

    path: str  # relative to the workload's directory
    text: str
    names: tuple[str, ...]  # bug ids


@dataclass(frozen=True)
class FactEdit:
    """A file an authored fact feeds: its content as the sprint asks for it, with ``{value}`` where
    the fact's value goes (no placeholder: the file needs no value of its own)."""

    path: str
    template: Path


@dataclass(frozen=True)
class FactMotif:
    """One motif of a coherence workload (docs/coherence.md): a secret integer kept in one file and
    the files whose content follows from it."""

    id: str  # its requirement
    index: int
    package: str
    secret: str  # the file holding the value, e.g. pkg_3/secret.py
    name: str  # the name it assigns there, e.g. SECRET
    stub: Path  # the same-length stub that defines nothing (the stub form of withholding)
    edits: tuple[FactEdit, ...]


@dataclass(frozen=True)
class Facts:
    """What a coherence workload authors: its motifs, which file depends on which (the authored
    neighbourhood) and, for every count k, the secrets a withholding variant takes away."""

    motifs: tuple[FactMotif, ...]
    neighbourhood: tuple[tuple[str, tuple[str, ...]], ...]  # path -> the paths its value depends on
    withheld: tuple[tuple[int, tuple[str, ...]], ...]  # k -> the secret files withheld

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(m.secret for m in self.motifs)

    def withheld_secrets(self, k: int) -> tuple[str, ...]:
        table = dict(self.withheld)
        if k not in table:
            raise SpecSnapError(f"no withheld set for k={k}", [str(n) for n in sorted(table)])
        return table[k]

    def motif(self, secret: str) -> FactMotif:
        return next(m for m in self.motifs if m.secret == secret)


@dataclass(frozen=True)
class Workload:
    id: str
    root: Path
    family: str
    title: str
    description: str
    budget_tokens: int
    canary: str
    packages: tuple[str, ...]
    visible_tests: tuple[str, ...]
    protected: tuple[str, ...]
    schedule: tuple[SessionSpec, ...]
    hidden_dir: Path
    hidden_ini: Path
    baseline_tests: tuple[str, ...]
    requirements: tuple[Requirement, ...]
    aliases: tuple[str, ...] = ()
    source_globs: tuple[str, ...] = ("**/*.py",)
    poison: tuple[Defect, ...] = ()
    # Tier 1: the agent first implements the baseline (TASK.md); this is its reference patch.
    baseline_gold: Path | None = None
    # A real repository (docs/real_repos.md): its code comes from a pinned source and runs in its
    # own environment; its own tests (``source_tests``) join the hidden tests at scoring, unchanged.
    source: SourcePin | None = None
    environment: EnvironmentSpec | None = None
    source_tree: Path | None = None  # the fetched, unpacked source (set by ``with_source``)
    environment_dir: Path | None = None  # its built environment (set by ``with_source``)
    source_tests: str | None = None
    excluded_tests: tuple[tuple[str, str], ...] = ()  # (source test, why it is not in the baseline)
    import_root: str = "."  # where the packages are, relative to the tree (``src`` for a src layout)
    import_mode: str = "importlib"
    pytest_plugins: tuple[str, ...] = ()
    gold_dirname: str = "gold"
    wiring_file: str = "baseline/wiring.yaml"
    predictions: tuple[tuple[str, int], ...] = ()  # (arm, bugs predicted resolved before the run)
    hints: tuple[Hint, ...] = ()
    # The standards family (docs/coherence.md): its surfaces, existing handlers and queued tasks.
    standards: Any = None  # trial.standards.StandardsSpec
    facts: Facts | None = None  # a coherence workload's authored facts (docs/coherence.md)
    generated: tuple[str, int] | None = None  # (family, seed) of a workload generated from a seed

    @property
    def is_real_repo(self) -> bool:
        return self.source is not None

    @property
    def baseline_dir(self) -> Path:
        if self.source is None:
            return self.root / "baseline"
        if self.source_tree is None:
            raise SpecSnapError(f"workload {self.id}: its source {self.source.describe()} is not fetched here; "
                                f"run `specsnap fetch-source {self.id}` (the pipeline's source rule does it)")
        return self.source_tree

    @property
    def gold_dir(self) -> Path:
        return self.root / self.gold_dirname

    @property
    def wiring_path(self) -> Path:
        return self.root / self.wiring_file

    def with_source(self, tree: Path, environment_dir: Path | None) -> Workload:
        """This workload with its source fetched and unpacked at ``tree`` and its environment built
        in ``environment_dir``."""
        return replace(self, source_tree=Path(tree), environment_dir=environment_dir and Path(environment_dir))

    def predicted(self, arm: str) -> int | None:
        return dict(self.predictions).get(arm)

    def hint(self, path: str) -> Hint | None:
        return next((h for h in self.hints if h.path == path), None)

    def requirement(self, req_id: str) -> Requirement:
        for req in self.requirements:
            if req.id == req_id:
                return req
        raise unknown("requirement", req_id, [r.id for r in self.requirements])

    def fingerprint(self) -> str:
        """SHA-256 over every file of the workload: a changed test or patch reruns its trials."""
        return tree_digest(self.root)

    def secret_dirs(self) -> list[Path]:
        """Directories whose content must never reach an agent."""
        return [self.hidden_dir, self.gold_dir]

    @property
    def private_files(self) -> tuple[str, ...]:
        """Baseline files whose content a variant may withhold: never committed into a sandbox's
        history, never hashed into a record or a generated arm file an agent can read."""
        return self.facts.secrets if self.facts is not None else ()


def tree_digest(root: Path, exclude: tuple[str, ...] = ("__pycache__",)) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if any(part in exclude for part in path.parts):
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
