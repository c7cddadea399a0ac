"""The ``standards`` workload family (docs/coherence.md): a written standard against working code.

A workspace holds existing event handlers and, depending on the trial, a ``STYLE.md`` standard. On ten
contested surfaces (money arithmetic, payload access, the clock, ...) one form is objectively better
than the other; the standard states one form per surface, the existing handlers demonstrate one. New
handlers are requested one at a time by a script in the workspace (``tasks.py``, reading a sealed
queue), and each surface of each handler the agent writes is one decision, scored by syntactic
predicates (``scoring/standards.py``).

The family's data is one file of the workload, ``standards.yaml``: the surfaces (the rule a standard
states for each form), the existing handlers, the tasks, and the default layout. A trial's **layout**
comes from its variant's ``standards:`` settings, one value per axis:

- ``standard``: ``correct`` (every rule demands the better form), ``stale`` (every rule demands the
  worse form: the coherence-debt study's stale standard, out of date with current practice) or ``none`` (no file);
- ``polarity`` and ``conflicts``: what the existing code demonstrates. The first ``conflicts``
  surfaces of the workload's ``contested`` order are the contested ones. Under ``normal`` polarity
  the code writes the worse form there and the better form elsewhere (so a correct standard is the
  better guide on exactly those surfaces); under ``inverted`` polarity the code writes the better
  form there and the worse form elsewhere (so against a stale standard the code is the better guide
  on exactly those surfaces).

Everything here is data and text: no code of the workload or of an agent runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from sdcs_bench.core.errors import SpecSnapError, unknown
from sdcs_bench.trial import policy_rules
from sdcs_bench.trial.components import VariantConfig

FORMS = ("better", "worse")
AXES = ("conflicts", "polarity", "standard")
POLARITIES = ("normal", "inverted")
CONDITIONS = ("correct", "none", "stale")
# The surfaces a handler decides, in the order STYLE.md states them. Each has a predicate in
# scoring/standards.py and a slot in the handler builder below.
SURFACES = ("money", "field_access", "clock", "timestamp_format", "log_format", "handler_name", "response_keys",
            "rate_source", "validation", "none_check")
# How a written surface relates to the two sources (scoring and the closed forms share this).
FOLLOWS = ("standard", "code", "both", "neither", "mixed", "absent")

STYLE_FILE = "STYLE.md"
ISSUER_FILE = "tasks.py"
QUEUE_FILE = ".tasks/queue.json"
HANDLERS_DIR = "payments/handlers"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"


def handler_key(name: str) -> str:
    """A handler's name without its casing: ``handle_refund_requested`` and ``handleRefundRequested``
    are the same handler (the issuer and the scorer both find a handler by this key)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


# -- the data -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Surface:
    id: str
    title: str
    rules: dict[str, str]  # form -> the rule a standard states for it
    why: str  # why the better form is better (docs and the rules' rationale)
    examples: tuple[dict[str, str], ...]  # hand-written {source, expect} checked by validate-workload


@dataclass(frozen=True)
class Handler:
    """One handler: an existing one (``text`` empty) or a task the queue issues."""

    id: str
    event: str
    fields: tuple[str, ...]
    optional: str
    optional_default: str
    invalid_when: str
    invalid_message: str
    rate_name: str
    rate_bp: int
    money: tuple[str, ...]
    log_message: str
    log_args: tuple[str, ...]
    respond: tuple[tuple[str, str], ...]  # (key words, expression), before status and processed at
    status: str
    text: str = ""
    title: str = ""

    @property
    def words(self) -> list[str]:
        return re.split(r"[._]", self.event)

    @property
    def module(self) -> str:
        return f"{HANDLERS_DIR}/{'_'.join(self.words)}.py"

    @property
    def names(self) -> dict[str, str]:
        """The handler's function name in each form (snake_case is the better one)."""
        return {"better": "handle_" + "_".join(self.words), "worse": "handle" + "".join(w.capitalize() for w in self.words)}

    @property
    def key(self) -> str:
        return handler_key(self.names["better"])


@dataclass(frozen=True)
class Slot:
    """A place in a handler's source written differently in each form of one surface."""

    surface: str
    better: str
    worse: str

    def text(self, form: str) -> str:
        return self.better if form == "better" else self.worse


def _key(words: str, form: str) -> str:
    parts = words.split()
    return "_".join(parts) if form == "better" else parts[0] + "".join(p.capitalize() for p in parts[1:])


def handler_pieces(h: Handler) -> list[str | Slot]:
    """The handler's source as text and slots: every slot takes its surface's form."""
    q = json.dumps
    out: list[str | Slot] = [
        f'"""Handler of the {h.event} event."""\n\nimport logging\nfrom datetime import datetime, timezone\n\n'
        "from payments import config\nfrom payments.errors import ValidationError\n\n"
        "log = logging.getLogger(__name__)\n\n\ndef ",
        Slot("handler_name", h.names["better"], h.names["worse"]), "(payload):\n",
    ]
    for f in h.fields:
        out += ["    ", Slot("field_access", f"{f} = payload.get({q(f)}, 0)", f"{f} = payload[{q(f)}]"), "\n"]
    o = h.optional
    out += ["    ", Slot("field_access", f"{o} = payload.get({q(o)})", f"{o} = payload[{q(o)}]"), "\n"]
    out += [f"    if {h.invalid_when}:\n        ",
            Slot("validation", f"raise ValidationError({q(h.invalid_message)})",
                 f"return {{{q('error')}: {q(h.invalid_message)}}}"), "\n"]
    out += ["    rate = ", Slot("rate_source", f"config.{h.rate_name}", str(h.rate_bp)), "\n"]
    for line in h.money:  # a line without a division is the same in both forms
        out += ["    ", Slot("money", line, line.replace(" // ", " / ")) if " // " in line else line, "\n"]
    out += ["    if ", Slot("none_check", f"{o} is None", f"{o} == None"), f":\n        {o} = {q(h.optional_default)}\n"]
    out += ["    now = ", Slot("clock", "datetime.now(timezone.utc)", "datetime.now()"), "\n"]
    fstring = h.log_message
    for arg in h.log_args:
        fstring = fstring.replace("%s", "{" + arg + "}", 1)
    lazy = ", ".join([q(h.log_message), *h.log_args])
    out += ["    ", Slot("log_format", f"log.info({lazy})", f"log.info(f{q(fstring)})"), "\n    return {\n"]
    for words, expr in h.respond:
        if " " in words:
            out += ["        ", Slot("response_keys", q(_key(words, "better")), q(_key(words, "worse"))), f": {expr},\n"]
        else:
            out.append(f"        {q(words)}: {expr},\n")
    out += [f"        {q('status')}: {q(h.status)},\n",
            "        ", Slot("response_keys", q("processed_at"), q("processedAt")), ": now.",
            Slot("timestamp_format", "isoformat()", f"strftime({q(TIMESTAMP_FORMAT)})"), ",\n    }\n"]
    return out


def render(pieces: list[str | Slot], forms: dict[str, str]) -> str:
    """The source with every slot in the form ``forms`` gives its surface."""
    return "".join(p if isinstance(p, str) else p.text(forms[p.surface]) for p in pieces)


def pieces_as_data(pieces: list[str | Slot]) -> list[Any]:
    """The pieces as JSON (a reference policy's briefing): text, or {surface, better, worse}."""
    return [p if isinstance(p, str) else {"surface": p.surface, "better": p.better, "worse": p.worse} for p in pieces]


@dataclass(frozen=True)
class Layout:
    """One trial's arrangement of the two sources (see the module's docstring)."""

    conflicts: int
    polarity: str
    standard: str
    contested: tuple[str, ...]  # the first ``conflicts`` surfaces of the workload's contested order

    @property
    def name(self) -> str:
        return f"conflicts_{self.conflicts}+polarity_{self.polarity}+standard_{self.standard}"

    def settings(self) -> dict[str, Any]:
        return {"conflicts": self.conflicts, "polarity": self.polarity, "standard": self.standard}

    def code_form(self, surface: str) -> str:
        odd = surface in self.contested
        if self.polarity == "normal":
            return "worse" if odd else "better"
        return "better" if odd else "worse"

    def standard_form(self, surface: str) -> str | None:
        return {"correct": "better", "stale": "worse", "none": None}[self.standard]

    def code_forms(self) -> dict[str, str]:
        return {s: self.code_form(s) for s in SURFACES}

    def standard_forms(self) -> dict[str, str | None]:
        return {s: self.standard_form(s) for s in SURFACES}

    def disagreeing(self) -> list[str]:
        """The surfaces where a standard is present and states the other form than the code."""
        return [s for s in SURFACES if self.standard_form(s) not in (None, self.code_form(s))]


def follows(form: str | None, standard: str | None, code: str) -> str:
    """How one written surface relates to the sources: ``form`` is better, worse, mixed or None
    (absent). ``both`` where standard and code agree and the form is theirs."""
    if form is None:
        return "absent"
    if form == "mixed":
        return "mixed"
    if standard is not None and form == standard:
        return "both" if form == code else "standard"
    return "code" if form == code else "neither"


@dataclass(frozen=True)
class StandardsSpec:
    path: Path
    surfaces: tuple[Surface, ...]
    existing: tuple[Handler, ...]
    tasks: tuple[Handler, ...]
    contested_order: tuple[str, ...]
    defaults: dict[str, Any]
    queue_salt: str
    example_context: Handler

    def surface(self, sid: str) -> Surface:
        for s in self.surfaces:
            if s.id == sid:
                return s
        raise unknown("surface", sid, SURFACES)

    def task(self, tid: str) -> Handler:
        for t in self.tasks:
            if t.id == tid:
                return t
        raise unknown("task", tid, [t.id for t in self.tasks])

    def layout(self, settings: dict[str, Any] | None, where: str = "") -> Layout:
        """The layout ``settings`` (a variant's ``standards:``) give, the workload's defaults filling
        any axis they leave out; one clear error for a bad value, naming the valid ones."""
        settings = dict(settings or {})
        extra = sorted(set(settings) - set(AXES))
        if extra:
            raise SpecSnapError(f"{where}standards setting {extra[0]!r} is not an axis of the layout", AXES)
        values = {**self.defaults, **settings}
        conflicts, polarity, standard = values["conflicts"], values["polarity"], values["standard"]
        counts = [str(n) for n in range(len(self.contested_order) + 1)]
        if isinstance(conflicts, bool) or not isinstance(conflicts, int) or str(conflicts) not in counts:
            raise SpecSnapError(f"{where}conflicts {conflicts!r} is not a count of contested surfaces "
                                f"(0 to {len(self.contested_order)})", counts)
        if polarity not in POLARITIES:
            raise SpecSnapError(f"{where}unknown polarity {polarity!r}", POLARITIES)
        if standard not in CONDITIONS:
            raise SpecSnapError(f"{where}unknown standard condition {standard!r}", CONDITIONS)
        return Layout(conflicts, polarity, standard, tuple(self.contested_order[:conflicts]))

    @cached_property
    def default_layout(self) -> Layout:
        return self.layout({})

    def all_layouts(self, counts: tuple[int, ...] = (4, 10)) -> list[Layout]:
        return [self.layout({"conflicts": c, "polarity": p, "standard": s})
                for c in counts for p in POLARITIES for s in CONDITIONS]

    # -- what the scaffold writes -------------------------------------------------------------
    def style_text(self, layout: Layout) -> str | None:
        if layout.standard == "none":
            return None
        lines = ["# Engineering standard", "",
                 "Every event handler in `payments/handlers/` follows these rules.", ""]
        for i, s in enumerate(self.surfaces, start=1):
            lines.append(f"{i}. **{s.title}.** {s.rules[layout.standard_form(s.id)]}")
        return "\n".join(lines) + "\n"

    def issued_text(self, task: Handler, number: int) -> str:
        """What the queue prints for a task: its number, title and text."""
        return f"Task {number} of {len(self.tasks)}: {task.title}\n\n{task.text.strip()}\n"

    def queue(self, layout: Layout) -> dict[str, Any]:
        """The sealed queue (docs/coherence.md): each task's text encrypted under a key chained
        through the previous task's plaintext."""
        from sdcs_bench.trial import standards_issuer

        salt = hashlib.sha256(f"{self.queue_salt}:{layout.name}".encode()).hexdigest()[:32]
        entries = [{"text": self.issued_text(t, i), "module": t.module, "handler": t.key, "event": t.event}
                   for i, t in enumerate(self.tasks, start=1)]
        return standards_issuer.seal(entries, salt)

    def layout_files(self, layout: Layout) -> dict[str, str]:
        """Path -> text of every file the layout adds to the baseline: STYLE.md (unless the layout
        has no standard), the existing handlers in the code's forms, the issuer and its queue."""
        files: dict[str, str] = {}
        style = self.style_text(layout)
        if style is not None:
            files[STYLE_FILE] = style
        for h in self.existing:
            files[h.module] = render(handler_pieces(h), layout.code_forms())
        files[ISSUER_FILE] = issuer_source()
        files[QUEUE_FILE] = json.dumps(self.queue(layout), indent=1) + "\n"
        return files


def issuer_source() -> str:
    return Path(__file__).with_name("standards_issuer.py").read_text()


def write_layout(spec: StandardsSpec, layout: Layout, dest: Path) -> list[str]:
    files = spec.layout_files(layout)
    for rel, text in files.items():
        target = Path(dest) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return sorted(files)


# -- parsing ------------------------------------------------------------------------------------------
def _handler(raw: dict[str, Any], where: str, *, task: bool) -> Handler:
    need = ["id", "event", "fields", "optional", "optional_default", "invalid", "rate", "money", "log", "respond",
            "status"] + (["title", "text"] if task else [])
    missing = [k for k in need if k not in raw]
    if missing:
        raise SpecSnapError(f"{where}: missing {', '.join(missing)}")
    money = tuple(str(m) for m in raw["money"])
    if not any(" // " in m for m in money):
        raise SpecSnapError(f"{where}: money lines need a floor division ` // ` (the worse form divides with ` / `)")
    return Handler(
        id=str(raw["id"]), event=str(raw["event"]), fields=tuple(map(str, raw["fields"])), optional=str(raw["optional"]),
        optional_default=str(raw["optional_default"]), invalid_when=str(raw["invalid"]["when"]),
        invalid_message=str(raw["invalid"]["message"]), rate_name=str(raw["rate"]["name"]), rate_bp=int(raw["rate"]["bp"]),
        money=money, log_message=str(raw["log"]["message"]), log_args=tuple(map(str, raw["log"]["args"])),
        respond=tuple((str(k), str(v)) for k, v in raw["respond"].items()), status=str(raw["status"]),
        text=str(raw.get("text", "")), title=str(raw.get("title", "")),
    )


def load_standards(path: Path) -> StandardsSpec:
    from sdcs_bench.trial.config import read_yaml

    path = Path(path)
    data = read_yaml(path)
    where = f"{path.parent.name}/{path.name}"
    surfaces = []
    for raw in data.get("surfaces") or []:
        if raw.get("id") not in SURFACES:
            raise unknown(f"{where}: surface", str(raw.get("id")), SURFACES)
        rules = raw.get("rules") or {}
        if set(rules) != set(FORMS):
            raise SpecSnapError(f"{where}: surface {raw['id']}: rules needs exactly {', '.join(FORMS)}")
        surfaces.append(Surface(raw["id"], str(raw["title"]), {f: policy_rules.norm(str(rules[f])) for f in FORMS},
                                policy_rules.norm(str(raw.get("why", ""))), tuple(raw.get("examples") or ())))
    if [s.id for s in surfaces] != list(SURFACES):
        raise SpecSnapError(f"{where}: surfaces must be exactly, in this order: {', '.join(SURFACES)}")
    existing = tuple(_handler(r, f"{where}: existing {r.get('id')}", task=False) for r in data.get("existing") or [])
    tasks = tuple(_handler(r, f"{where}: task {r.get('id')}", task=True) for r in data.get("tasks") or [])
    if not existing or not tasks:
        raise SpecSnapError(f"{where}: needs existing handlers and tasks")
    order = tuple(data.get("contested") or ())
    if sorted(order) != sorted(SURFACES):
        raise SpecSnapError(f"{where}: contested must order every surface once", SURFACES)
    spec = StandardsSpec(path=path, surfaces=tuple(surfaces), existing=existing, tasks=tasks, contested_order=order,
                         defaults=dict(data.get("defaults") or {}), queue_salt=str(data["queue_salt"]),
                         example_context=_handler(data["example_context"], f"{where}: example_context", task=False))
    if set(spec.defaults) != set(AXES):
        raise SpecSnapError(f"{where}: defaults must set every axis", AXES)
    spec.layout({}, f"{where}: defaults: ")
    return spec


def layout_for(workload, variant: VariantConfig | dict[str, Any] | None) -> Layout | None:
    """The standards layout of a trial: ``None`` for a workload of another family (whose variant must
    then set no ``standards:``). Checked when the study is planned, before any work."""
    variant = VariantConfig.of(variant) if variant is not None else None
    settings = variant.standards if variant is not None else None
    name = variant.name if variant is not None else "none"
    spec = getattr(workload, "standards", None)
    if spec is None:
        if settings:
            raise SpecSnapError(f"variant {name!r} sets the standards layout ({', '.join(sorted(settings))}), but "
                                f"workload {workload.id} is of family {workload.family!r}; only workloads of family "
                                "'standards' have one", standards_workloads())
        return None
    if settings is not None and not isinstance(settings, dict):
        raise SpecSnapError(f"variant {name!r}: standards must map axes to values", AXES)
    return spec.layout(settings, f"variant {name!r}: ")


def task_requirements(root: Path, raw_reqs: list, spec: StandardsSpec, meta_path: Path):
    """A standards workload's requirements: one per queued task, in the queue's order, with the task's
    text (what the queue issues) and its hidden tests and gold from workload.yaml."""
    from sdcs_bench.trial.workload_model import Requirement

    ids = [str(r["id"]) for r in raw_reqs]
    if ids != [t.id for t in spec.tasks]:
        raise SpecSnapError(f"{meta_path}: requirements must be the queue's tasks, in its order: "
                            f"{', '.join(t.id for t in spec.tasks)} (got {', '.join(ids)})")
    return tuple(
        Requirement(id=t.id, package=str(raw["package"]), title=t.title, files=tuple(raw.get("files") or (t.module,)),
                    tests=tuple(raw["tests"]), gold=root / raw["gold"], summary=f"handle {t.event}",
                    from_summary=None, text=spec.issued_text(t, i))
        for i, (t, raw) in enumerate(zip(spec.tasks, raw_reqs), start=1)
    )


def gold_source(task: Handler) -> str:
    """The task's handler written the better way on every surface (its gold)."""
    return render(handler_pieces(task), dict.fromkeys(SURFACES, "better"))


def gold_patch(task: Handler, canary: str) -> str:
    """The gold patch of a task: a git patch creating its module with :func:`gold_source`, after the
    workload's canary line (``git apply`` ignores text before the first ``diff``)."""
    lines = gold_source(task).splitlines()
    return "\n".join([canary, "", f"diff --git a/{task.module} b/{task.module}", "new file mode 100644",
                      "--- /dev/null", f"+++ b/{task.module}", f"@@ -0,0 +1,{len(lines)} @@",
                      *("+" + line for line in lines)]) + "\n"


def policy_briefing(spec: StandardsSpec) -> dict[str, Any]:
    """What a standards reference policy knows (its competence, like a model's): the rule texts a
    standard may state for each form, how each existing handler and each task is written in either
    form of every surface, each task's text (to recognise it when the queue issues it), and where the
    standard and the issuer are. Nothing about the trial's layout: that it reads from the disk."""
    return {
        "style_file": STYLE_FILE,
        "issuer": ISSUER_FILE,
        "rules": {s.id: dict(s.rules) for s in spec.surfaces},
        "existing": [{"module": h.module, "pieces": pieces_as_data(handler_pieces(h))} for h in spec.existing],
        "tasks": [{"id": t.id, "event": t.event, "text": t.text, "module": t.module,
                   "pieces": pieces_as_data(handler_pieces(t))} for t in spec.tasks],
    }


def policy_forms(layout: Layout, mode: str) -> dict[str, str]:
    """The forms a standards reference policy writes under a layout (its closed form): the policy's
    own rule (``policy_rules.choose_form``) applied to what the layout puts on disk: the form the
    standard states, the form every existing handler shows. ``gold`` (the oracle): the better form."""
    if mode not in (*policy_rules.STANDARDS_MODES, "gold"):
        raise unknown("standards policy", mode, policy_rules.STANDARDS_MODES)
    return {s: policy_rules.choose_form(mode, layout.standard_form(s), layout.code_form(s))[0] for s in SURFACES}


def expected_decisions(spec: StandardsSpec, layout: Layout, written: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The ``standards`` counts a scorecard must show when the handlers ``written`` (task id -> the
    form of every surface) are on disk and no other: the same keys :func:`standards_report` counts."""
    std, code = layout.standard_forms(), layout.code_forms()
    disagreeing = set(layout.disagreeing())
    tally = dict.fromkeys(FOLLOWS, 0)
    contested = dict.fromkeys(FOLLOWS, 0)
    decisions = better = 0
    for task in spec.tasks:
        forms = written.get(task.id)
        for s in SURFACES:
            form = forms[s] if forms else None
            how = follows(form, std[s], code[s])
            tally[how] += 1
            if s in disagreeing:
                contested[how] += 1
            if form in FORMS:
                decisions += 1
                better += form == "better"
    return {"handlers_written": sorted(written), "decisions": decisions, "better": better,
            "better_share": round(better / decisions, 4) if decisions else None, "follows": tally,
            "contested_follows": contested}


COMPARED = ("handlers_written", "decisions", "better", "follows", "contested_follows")


def standards_workloads() -> list[str]:
    """The registered workloads of the standards family (those whose workload.yaml can be read)."""
    from sdcs_bench.trial.config import read_yaml
    from sdcs_bench.trial.workload_registry import registered_workloads, workload_dir

    found = []
    for wid in registered_workloads():
        try:
            if read_yaml(workload_dir(wid) / "workload.yaml").get("family") == "standards":
                found.append(wid)
        except SpecSnapError:
            continue
    return found
