"""Workloads: a baseline repository, a session schedule, hidden tests and gold, read from a directory.

A workload is a directory with ``workload.yaml`` (see docs/protocol.md); it is registered by a file
``conf/workload/<id>.yaml`` naming that directory (:mod:`sdcs_bench.trial.workload_registry`). This
module reads a workload's directory into the model, :mod:`sdcs_bench.trial.workload_model`. Nothing
here runs code from the workload.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.paths import project_root
from sdcs_bench.trial.repo import EnvironmentSpec, SourcePin
from sdcs_bench.core.cache import has_stamp, stamp, stamp_key
from sdcs_bench.core.timing import timed
from sdcs_bench.trial.workload_model import (NEUTRAL_PROMPT, CleaveRule, Defect, FactEdit, FactMotif, Facts, Hint,
                                             Requirement, SessionSpec, Workload)
from sdcs_bench.trial.workload_registry import resolve_workload_id, workload_dir

_REQ_HEADING = re.compile(r"^### (?P<id>[A-Z][A-Z0-9]*-[A-Z0-9-]+) — (?P<title>.+)$", re.MULTILINE)


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


def load_draft_repository(root: Path) -> Workload:
    """A real repository still being written (``add-repository``, ``add-bug``): as
    :func:`load_workload_dir`, but with no bug yet allowed. Never cached: its files change."""
    return _parse_workload(Path(root).resolve(), draft=True)


def _parse_workload(root: Path, draft: bool = False) -> Workload:
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
        if not raw_reqs and not draft:  # a repository `specsnap add-repository` has just added
            raise SpecSnapError(f"{_bugs_path(root, meta, meta_path)}: no bugs yet: add one entry per hidden bug "
                                "(id, behaviour, tests, gold), its hidden test under hidden/tests/ and its fix "
                                "(docs/real_repos.md)")
        if raw_reqs:
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


@cache
def validator_version() -> str:
    """The installed jsonschema's version (a stamp of a schema check names the validator that made
    it). Looked up once per process, and once per run by the warm job server (sdcs_bench/warm.py)."""
    from importlib.metadata import version

    return version("jsonschema")


def workload_schema() -> dict:
    """``workflow/schemas/workload.schema.yaml``, read again only when the file changed (its
    modification time and size)."""
    path = project_root() / "workflow" / "schemas" / "workload.schema.yaml"
    try:
        st = path.stat()
    except OSError:
        st = None  # (read_yaml says it does not exist)
    return _schema(path, st and (st.st_mtime_ns, st.st_size))


@cache
def _schema(path: Path, _stat: tuple[int, int] | None) -> dict:
    from sdcs_bench.trial.config import read_yaml

    return read_yaml(path)


def warm_up() -> None:
    """What every stage's workload load looks up and no job changes (the warm job server calls this
    once: its jobs inherit the answers)."""
    validator_version()
    workload_schema()


def _check_schema(meta: Any, meta_path: Path, ref: str | None = None) -> None:
    """workload.yaml (or, with ``ref``, a file it lists, such as a real repository's bug list)
    against ``workflow/schemas/workload.schema.yaml``: the first problem, in one line naming the
    file and the key, before any of it is used.

    Every stage of every trial loads its workload: content that passed once (this schema, this
    data) is stamped in the user's cache (core/cache.py), and the validator (about 0.1 s to import)
    is loaded only for what was never checked."""
    from sdcs_bench.trial.config import _shown

    schema = workload_schema()
    if ref is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": ref}
    key = stamp_key("workload-schema", validator_version(), schema, meta)  # (another validator checks again)
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
