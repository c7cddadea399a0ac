"""Workloads: a baseline repository, a session schedule, hidden tests and gold, as data.

A workload is a directory with ``workload.yaml`` (see docs/protocol.md); it is registered by a file
``conf/workload/<id>.yaml`` naming that directory. Nothing here runs code from the workload.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.core.paths import conf_dir, project_root
from sdcs_bench.trial.repo import EnvironmentSpec, SourcePin
from sdcs_bench.core.cache import has_stamp, stamp, stamp_key
from sdcs_bench.core.timing import timed

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
_REQ_HEADING = re.compile(r"^### (?P<id>[A-Z][A-Z0-9]*-[A-Z0-9-]+) — (?P<title>.+)$", re.MULTILINE)


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


def split_requirements(sprint: str) -> dict[str, str]:
    """Requirement id -> its section of the sprint, from its ``### ID — title`` line to the next."""
    sections: dict[str, str] = {}
    matches = list(re.finditer(r"^### ", sprint, re.MULTILINE))
    for i, start in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(sprint)
        block = sprint[start.start() : end].strip()
        heading = _REQ_HEADING.match(block)
        if heading:
            sections[heading["id"]] = block
    return sections


def registered_workloads() -> dict[str, Path]:
    """Workload id -> its registry file ``conf/workload/<id>.yaml`` (read only when the workload is
    used, so one broken registration stops only the runs that use it)."""
    return {entry.stem: entry for entry in sorted((conf_dir() / "workload").glob("*.yaml"))}


def workload_dir(wid: str) -> Path:
    """The directory a registry file names, checked: one clear error naming the file otherwise."""
    from sdcs_bench.trial.config import read_yaml

    entry = registered_workloads()[wid]
    data = read_yaml(entry)
    if data.get("id", wid) != wid:
        raise SpecSnapError(f"conf/workload/{entry.name}: id {data.get('id')!r} must equal the file's name {wid!r}")
    if "generate" in data:  # generated from a seed (docs/coherence.md): written on first use
        from sdcs_bench.trial.generated import check_spec, ensure_generated

        family, seed = check_spec(data["generate"], f"conf/workload/{entry.name}")
        target = project_root() / data["path"] if isinstance(data.get("path"), str) and data["path"] else None
        return ensure_generated(wid, family, seed, target)
    if not isinstance(data.get("path"), str) or not data["path"]:
        raise SpecSnapError(f"conf/workload/{entry.name}: needs 'path:', the workload's directory (e.g. tiers/{wid})")
    root = project_root() / data["path"]
    if not (root / "workload.yaml").is_file():
        raise SpecSnapError(f"conf/workload/{entry.name}: path {data['path']!r} holds no workload.yaml")
    return root


def workload_aliases() -> tuple[dict[str, str], list[str]]:
    """Alias -> workload id, read from every registered workload that can be read; and the problems
    of those that cannot (reported only if a name is not found, never blocking the others)."""
    from sdcs_bench.trial.config import read_yaml

    aliases, problems = {}, []
    for wid in registered_workloads():
        try:
            meta = read_yaml(workload_dir(wid) / "workload.yaml")
        except SpecSnapError as exc:
            problems.append(str(exc))
            continue
        for alias in meta.get("aliases") or []:
            aliases[str(alias)] = wid
    return aliases, problems


def resolve_workload_id(name: str | None = None, tier: int | None = None) -> str:
    if tier is not None:
        if name is not None:
            raise SpecSnapError("give either --tier or --workload, not both")
        name = f"tier_{tier}"
    if name is None:
        raise SpecSnapError("a workload is required (--workload ID or --tier N)", registered_workloads())
    known = registered_workloads()
    if name in known:
        return name
    aliases, problems = workload_aliases()
    if name in aliases:
        return aliases[name]
    error = unknown("workload", name, known)
    if problems:
        error = SpecSnapError(f"{error} (unreadable: {'; '.join(problems)})")
    raise error


@cache
def load_workload(name: str) -> Workload:
    """A registered workload by id or alias (reads ``conf/workload/``)."""
    wid = resolve_workload_id(name)
    return load_workload_dir(workload_dir(wid))


@cache
@timed("workload load")
def load_workload_dir(root: Path) -> Workload:
    """A workload from its own directory alone (what a pipeline stage reads: never ``conf/``)."""
    return _parse_workload(Path(root).resolve())


def _parse_workload(root: Path) -> Workload:
    from sdcs_bench.trial.config import read_yaml

    meta_path = root / "workload.yaml"
    meta = read_yaml(meta_path)
    _check_schema(meta, meta_path)

    def need(key: str):
        if key not in meta:
            raise SpecSnapError(f"{meta_path}: missing key {key!r}")
        return meta[key]

    schedule = tuple(_parse_session(root, s) for s in need("schedule"))
    source = SourcePin.from_config(meta["source"], str(meta_path)) if meta.get("source") else None
    raw_reqs = _listed(root, need("requirements"), meta_path, "requirements")
    standards = None
    if source is not None:
        if not raw_reqs:  # a repository `specsnap add-repository` has just added
            raise SpecSnapError(f"{_bugs_path(root, meta, meta_path)}: no bugs yet: add one entry per hidden bug "
                                "(id, behaviour, tests, gold), its hidden test under hidden/tests/ and its fix "
                                "(docs/real_repos.md)")
        _check_schema(raw_reqs, _bugs_path(root, meta, meta_path), "#/$defs/bugs")
        requirements = _parse_bugs(root, raw_reqs, meta)
    elif meta.get("standards"):
        from sdcs_bench.trial.standards import load_standards, task_requirements

        if not (root / meta["standards"]).is_file():
            raise SpecSnapError(f"{meta_path}: standards: file {meta['standards']!r} does not exist")
        standards = load_standards(root / meta["standards"])
        requirements = task_requirements(root, raw_reqs, standards, meta_path)
    else:
        requirements = _parse_requirements(root, raw_reqs, schedule, meta_path)
    hidden = need("hidden")
    excluded = _listed(root, meta.get("excluded_tests") or [], meta_path, "excluded_tests")
    workload = Workload(
        id=need("id"),
        root=root,
        family=meta.get("family", "synthetic"),
        title=meta.get("title", meta["id"]),
        description=meta.get("description", ""),
        budget_tokens=int(need("budget_tokens")),
        canary=need("canary"),
        packages=tuple(need("packages")),
        visible_tests=tuple(meta.get("visible_tests", ["tests"])),
        protected=tuple(meta.get("protected", ["tests/**"])),
        schedule=schedule,
        hidden_dir=root / hidden.get("dir", "hidden"),
        hidden_ini=root / hidden["pytest_ini"],
        baseline_tests=tuple(_listed(root, need("baseline_tests"), meta_path, "baseline_tests")),
        requirements=tuple(requirements),
        aliases=tuple(meta.get("aliases", ())),
        source_globs=tuple(meta.get("source_globs", ["**/*.py"])),
        poison=tuple(_parse_defect(root, raw, meta_path) for raw in meta.get("poison") or ()),
        baseline_gold=root / meta["baseline_gold"] if meta.get("baseline_gold") else None,
        source=source,
        environment=EnvironmentSpec.from_config(meta["environment"], str(meta_path)) if meta.get("environment") else None,
        source_tests=meta.get("source_tests"),
        excluded_tests=tuple((str(t), str(group["reason"])) for group in excluded for t in group["tests"]),
        import_root=meta.get("import_root", "."),
        import_mode=meta.get("import_mode", "importlib"),
        pytest_plugins=tuple(meta.get("pytest_plugins") or ()),
        gold_dirname=meta.get("gold_dir", "gold"),
        wiring_file=meta.get("wiring", "baseline/wiring.yaml"),
        predictions=tuple((str(k), int(v)) for k, v in (meta.get("predicted_resolved") or {}).items()),
        hints=tuple(_parse_hint(root, path, raw, {str(r["id"]) for r in raw_reqs}, meta_path)
                    for path, raw in (meta.get("hints") or {}).items()),
        standards=standards,
        facts=_parse_facts(root, meta, meta_path, {str(r["id"]) for r in raw_reqs}) if meta.get("motifs") else None,
        generated=(str(meta["generated"]["family"]), int(meta["generated"]["seed"])) if meta.get("generated") else None,
    )
    if source is not None and workload.environment is None:
        raise SpecSnapError(f"{meta_path}: a workload with a source needs 'environment:' (its Python and test pins)")
    _check_files(workload, meta_path)
    return workload


def _listed(root: Path, value: Any, meta_path: Path, key: str) -> list:
    """A list given inline or as ``{file: NAME}``: a YAML list, or a text file of one item per line."""
    if isinstance(value, dict):
        path = root / value["file"]
        if not path.is_file():
            raise SpecSnapError(f"{meta_path}: {key}: file {value['file']!r} does not exist")
        if path.suffix in (".yaml", ".yml"):
            import yaml

            from sdcs_bench.trial.config import safe_loader

            try:
                value = yaml.load(path.read_text(), Loader=safe_loader())
            except yaml.YAMLError as exc:
                raise SpecSnapError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
            if not isinstance(value, list):
                raise SpecSnapError(f"{path}: must hold a YAML list ({key})")
        else:
            value = [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return list(value)


def _parse_requirements(root: Path, raw_reqs: list, schedule: tuple[SessionSpec, ...],
                        meta_path: Path) -> tuple[Requirement, ...]:
    # The first section with an id introduces the requirement; a later one amends it.
    texts: dict[str, str] = {}
    amendments: dict[str, tuple[str, str]] = {}
    for sess in schedule:
        for rid, block in split_requirements(sess.prompt).items():
            if rid not in texts:
                texts[rid] = block
            elif block != texts[rid] and rid not in amendments:
                amendments[rid] = (sess.name, block)
    requirements = []
    for raw in raw_reqs:
        rid = raw["id"]
        if rid not in texts:
            raise SpecSnapError(f"{meta_path}: requirement {rid} has no '### {rid} — title' section in any prompt")
        from_summary = raw.get("from_summary", "gold")
        amended_in, amendment = amendments.get(rid, (None, None))
        if amendment is not None and "superseded_gold" not in raw:
            raise SpecSnapError(f"{meta_path}: requirement {rid} is amended in {amended_in} but has no superseded_gold")
        requirements.append(
            Requirement(
                id=rid,
                package=raw["package"],
                title=raw.get("title", ""),
                files=tuple(raw.get("files", ())),
                tests=tuple(raw["tests"]),
                gold=root / raw["gold"],
                summary=raw.get("summary", ""),
                from_summary=None if from_summary == "gold" else root / from_summary,
                text=texts[rid],
                wave=int(raw.get("wave", 1)),
                amendment=amendment,
                amended_in=amended_in,
                superseded_gold=root / raw["superseded_gold"] if "superseded_gold" in raw else None,
            )
        )
    return tuple(requirements)


def _bugs_path(root: Path, meta: dict, meta_path: Path) -> Path:
    """Where the bug list is written (its own file, or workload.yaml itself), for error messages."""
    listed = meta.get("requirements")
    return root / listed["file"] if isinstance(listed, dict) else meta_path


def _parse_hint(root: Path, path: str, raw: dict, bug_ids: set[str], meta_path: Path) -> Hint:
    where = f"{meta_path.parent.name}/workload.yaml: hints: {path}"
    if not (root / path).is_file():
        raise SpecSnapError(f"{where}: the file does not exist")
    unknown_ids = sorted(set(map(str, raw.get("names") or ())) - bug_ids)
    if unknown_ids:
        raise SpecSnapError(f"{where}: names {', '.join(unknown_ids)}, which are not bugs of this workload",
                            sorted(bug_ids))
    return Hint(path, (root / path).read_text(), tuple(map(str, raw.get("names") or ())))


def _parse_bugs(root: Path, raw_bugs: list, meta: dict) -> tuple[Requirement, ...]:
    """A real repository's hidden bugs: requirements no prompt states (the agent must find them),
    each with its hidden tests and a reference fix."""
    package = meta["packages"][0]
    return tuple(
        Requirement(
            id=str(raw["id"]), package=str(raw.get("package", package)), title=str(raw["behaviour"]),
            files=tuple(raw.get("files", ())), tests=tuple(raw["tests"]), gold=root / raw["gold"],
            summary=str(raw["behaviour"]), from_summary=None,
            text=f"{raw['id']} ({raw.get('area', package)}): {raw['behaviour']}",
            upstream=" / ".join(str(raw[k]) for k in ("upstream", "fix") if raw.get(k)),
            fixed_in=str(raw.get("fixed_in", "")),
        )
        for raw in raw_bugs
    )


def _check_schema(meta: Any, meta_path: Path, ref: str | None = None) -> None:
    """workload.yaml (or, with ``ref``, a file it lists, such as a real repository's bug list)
    against ``workflow/schemas/workload.schema.yaml``: the first problem, in one line naming the
    file and the key, before any of it is used.

    Every stage of every trial loads its workload: content that passed once (this schema, this
    data) is stamped in the user's cache (core/cache.py), and the validator (about 0.1 s to import)
    is loaded only for what was never checked."""
    from sdcs_bench.trial.config import _shown, read_yaml

    schema = read_yaml(project_root() / "workflow" / "schemas" / "workload.schema.yaml")
    if ref is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": ref}
    from importlib.metadata import version

    key = stamp_key("workload-schema", version("jsonschema"), schema, meta)  # (another validator checks again)
    if has_stamp("schema-checked", key):
        return
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(meta))
    if error is None:
        stamp("schema-checked", key)
    else:
        path = list(error.absolute_path)
        where = "/".join(map(str, path)) or "(top level)"
        if ref is not None and path and isinstance(path[0], int) and isinstance(meta[path[0]], dict):
            where = f"entry {path[0] + 1} (id {meta[path[0]].get('id', '?')!r}) " + "/".join(map(str, path[1:]))
        raise SpecSnapError(f"{_shown(meta_path)}: invalid at {where.strip()}: {error.message}")


def _check_files(workload: Workload, meta_path: Path) -> None:
    """Every file workload.yaml names must exist: a broken workload stops a run at planning,
    not halfway through its trials (the full check is ``specsnap validate-workload``)."""
    named = [workload.hidden_dir, workload.hidden_ini, workload.wiring_path]
    named += [] if workload.is_real_repo else [workload.baseline_dir]
    named += [workload.baseline_gold] if workload.baseline_gold else []
    for r in workload.requirements:
        named += [p for p in (r.gold, r.from_summary, r.superseded_gold) if p is not None]
    named += [p for d in workload.poison for p in (d.patch, d.marked_patch)]
    if workload.facts is not None:
        named += [p for m in workload.facts.motifs for p in (m.stub, *(e.template for e in m.edits))]
    missing = [p.relative_to(workload.root).as_posix() for p in named if not p.exists()]
    if missing:
        raise SpecSnapError(f"{meta_path}: missing {', '.join(missing)}; run `specsnap validate-workload {workload.id}`")


def _parse_facts(root: Path, meta: dict, meta_path: Path, requirement_ids: set[str]) -> Facts:
    """A coherence workload's ``motifs``, ``neighbourhood`` and ``withheld`` (the schema checked
    their shape); every secret is one motif's, every withheld set names secrets only."""
    motifs = tuple(
        FactMotif(id=str(raw["id"]), index=int(raw["index"]), package=str(raw["package"]), secret=str(raw["secret"]),
                  name=str(raw["name"]), stub=root / raw["stub"],
                  edits=tuple(FactEdit(str(e["path"]), root / e["template"]) for e in raw["edits"]))
        for raw in meta["motifs"]
    )
    secrets = {m.secret for m in motifs}
    strays = sorted({m.id for m in motifs} - requirement_ids)
    if strays:
        raise SpecSnapError(f"{meta_path}: motifs {', '.join(strays)} are not requirements of the workload",
                            sorted(requirement_ids))
    withheld = []
    for key, paths in (meta.get("withheld") or {}).items():
        unknown_paths = sorted(set(paths) - secrets)
        if unknown_paths:
            raise SpecSnapError(f"{meta_path}: withheld {key} names {', '.join(unknown_paths)}, which is no motif's "
                                "secret", sorted(secrets))
        withheld.append((int(str(key).removeprefix("k")), tuple(paths)))
    neighbourhood = tuple((str(path), tuple(map(str, deps))) for path, deps in (meta.get("neighbourhood") or {}).items())
    return Facts(motifs, neighbourhood, tuple(sorted(withheld)))


def _parse_defect(root: Path, raw: dict, meta_path: Path) -> Defect:
    missing = [k for k in ("id", "file", "patch", "marked_patch") if k not in raw]
    if missing or not (raw.get("fails") or raw.get("forbidden_import")):
        raise SpecSnapError(f"{meta_path}: poison defect {raw.get('id')!r} needs id, file, patch, marked_patch and "
                            f"'fails' (hidden tests) or 'forbidden_import' (importer, imported)")
    imp = raw.get("forbidden_import")
    return Defect(id=raw["id"], file=raw["file"], description=raw.get("description", ""), patch=root / raw["patch"],
                  marked_patch=root / raw["marked_patch"], fails=tuple(raw.get("fails") or ()),
                  forbidden_import=(imp["importer"], imp["imported"]) if imp else None)


def _parse_session(root: Path, raw: dict) -> SessionSpec:
    source = raw.get("prompt", "neutral")
    if source == "neutral":
        text = NEUTRAL_PROMPT
    else:
        parts = [p.strip() for p in str(source).split("+")]
        missing = [p for p in parts if p != "neutral" and not (root / p).is_file()]
        if missing:
            raise SpecSnapError(f"{root.name}/workload.yaml: session {raw.get('session')}: prompt file(s) "
                                f"{', '.join(missing)} do not exist")
        text = "\n\n".join(NEUTRAL_PROMPT if p == "neutral" else (root / p).read_text() for p in parts)
    return SessionSpec(
        name=raw["session"], prompt=text, prompt_source=str(source), cleave=CleaveRule.parse(raw.get("cleave"))
    )
