"""A SpecSnap reference policy: a deterministic stand-in for a coding agent (not a model).

Runs as its own process inside the sandbox, like any harness, and changes the repository only
through the file system and git, so the cleave controller stops it exactly as it stops a real
agent. It needs only the standard library: the sandbox exposes this one file, never the project.

Its briefing arrives on stdin as JSON, the way a real agent's knowledge arrives from its model:
  params    the behaviour preset (see conf/agent/ref_*.yaml)
  prompt    this session's prompt, exactly as a real agent would get it
  skills    per requirement: its full text and the patch written from it, its one-line summary
            and the patch written from that, and (if a later wave amends it) the amendment's
            text and the patch of the original, superseded form: the policy's "competence"
  baseline  (tier 1) the patch implementing TASK.md
  hints     (real repositories) each hint file's text and the bugs whose areas it names
  standards (the standards family) the rule a standard may state for each form of each surface, how
            the existing handlers and every task's handler are written in either form, each task's
            text; which form it writes it decides from the disk (STYLE.md, the existing handlers)
  handshake (a session cut at an edit) after each action it asks the session's controller whether it
            may go on, and waits: the controller answers once it has judged every write before the
            question, and at the cut never answers (the policy is killed waiting, before its next
            action): the cut lands exactly at any load, with no pause standing in for it
  pause_s   how long it pauses after each action: a short gap in a later session that records its
            writes (each write told apart from the next step), else none
What it knows of *which* requirements to do comes only from the prompt and the disk, except
for a policy with ``knows_sprint: always`` (the oracle); with ``knows_sprint: from_hints`` it also
knows the bugs a hint names when that hint's text is in ``AGENTS.md`` or its notes file on disk.
Every action is one JSON line on stdout (``turn``, ``action``, ``t`` the time it began, and what it does: the
``paths`` it writes, the ``files`` it read, where each requirement it knows came from), logged before
it writes anything, so a cut at its write never loses its line; the commit that ends an action is a
line ``committed`` of its own (not an action). That log is
the policy's record; the event stream reads it (sdcs_bench.coherence.normalise). A closing message
is an action ``message`` with its ``text``.

It calls no model, so a token or turn cut rule counts its **meter** instead (docs/protocol.md):
each step that takes information in or puts work out is one metered call, whose tokens are the
``o200k_base`` tokens of the text it handles (counted by the host): reading the prompt, writing
new notes entries, applying a patch (TASK.md's, a requirement's; both patches of an amendment
made in place). Under such a rule (``meter`` in the briefing) it asks before each metered step,
handing over those texts through ``.git/specsnap/meter.<k>``, and waits for the answer; the step
that reaches the cut is counted and never performed (the policy is killed waiting), as a model's
answer that reaches it is the last.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

# (hashlib and tempfile are imported where used: this process starts in every session of every
# reference trial, and most sessions never need them)


def _load(path: Path):
    """A module of the standard library only, bound into the sandbox and loaded by its path (the
    sandbox has no SpecSnap package); its compiled form is used where the package has one."""
    from importlib.machinery import SourceFileLoader  # (importlib.util would import much more)

    name = f"specsnap_{path.stem}"
    loader = SourceFileLoader(name, str(path))
    module = type(sys)(name)
    module.__file__, module.__loader__ = str(path), loader
    sys.modules[name] = module
    loader.exec_module(module)
    return module


# The decision rules this policy shares with its closed form, and the channel to the controller.
rules = _load(Path(__file__).resolve().parents[1] / "trial" / "policy_rules.py")
channel = _load(Path(__file__).resolve().with_name("policy_channel.py"))


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _touched(patch: str) -> list[str]:
    return sorted(set(re.findall(r"^diff --git a/(\S+) b/", patch, re.MULTILINE)))


class Agent:
    def __init__(self, briefing: dict) -> None:
        self.params = briefing["params"]
        self.prompt = briefing["prompt"]
        self.skills = briefing["skills"]
        self.reqs = [rules.Req(s["id"], s["text"], s["summary"], s.get("amendment")) for s in self.skills]
        self.baseline = briefing.get("baseline")
        self.hints = briefing.get("hints") or []
        self.standards = briefing.get("standards")
        self.ask_meter = bool(briefing.get("meter"))
        self.handshake = bool(briefing.get("handshake"))
        self.asked = 0  # questions asked so far (the cut handshake)
        self.pause_s = float(briefing.get("pause_s") or 0)
        # The continuation mode of the trial (docs/protocol.md#continuation-modes): ``trace`` logs
        # the text of what it learnt (a trace carries it on); ``conversation`` names the state it
        # keeps in its private HOME, and ``resume`` the conversation it continues from there.
        self.continuation = briefing.get("continuation") or {}
        self.history: list[str] = []  # what a resumed conversation holds: earlier sessions' prompts
        self.turns = 0
        self.metered = 0  # metered steps so far (each asked, under a token or turn rule)
        self.charged: str | None = None

    # -- acting on the world ------------------------------------------------------------------
    def log(self, action: str, began: float | None = None, **detail) -> None:
        """One action's line, stamped with the time it began (a tool call's record is stamped when it
        is made, before the writes it causes), else now."""
        self.turns += 1
        if self.charged is not None:
            detail["metered"], self.charged = self.metered, None
        t = began if began is not None else time.time()
        print(json.dumps({"turn": self.turns, "action": action, "t": int(t * 1000) / 1000, **detail}), flush=True)

    def log_commit(self, message: str) -> None:
        """The outcome of the commit that ends an action already logged (not an action of its own:
        each action is logged before it acts, so a cut at its write never loses its line)."""
        committed = self.commit(message)
        print(json.dumps({"turn": self.turns, "action": "committed", "committed": committed}), flush=True)

    def meter(self, step: str, *texts: str) -> None:
        """Count one metered step before it is performed; under a token or turn cut rule, ask the
        session's controller first (the step that reaches the cut is never performed: the policy
        is killed waiting for the answer)."""
        self.metered += 1
        question = json.dumps({"step": step, "texts": [t for t in texts if t], "t": time.time()})
        # (counted by the host; without a cut rule it does not wait)
        self.ask(f"meter.{os.getpid()}.{self.metered}", question, wait=self.ask_meter, unanswered={"step": step})
        self.charged = step  # named on the log line of the step it metered

    def pause(self) -> None:
        """Between actions: in a session cut at an edit, the cut handshake (:meth:`go_ahead`); then
        ``pause_s`` (a short gap where the session records its writes)."""
        if self.handshake:
            self.go_ahead()
        if self.pause_s:
            time.sleep(self.pause_s)

    def go_ahead(self) -> None:
        """Ask the controller whether to go on (``go.<k>``) and wait for its answer, given only once it
        has judged every write made before the question; at the cut it never comes and the policy is
        killed here."""
        self.asked += 1
        self.ask(channel.go_name(self.asked))

    def ask(self, name: str, question: str = "", *, wait: bool = True, unanswered: dict | None = None) -> None:
        """Put a question to the session's controller (``policy_channel.py``) and, with ``wait``, wait
        for its answer. None in time: the watcher is gone, and the policy stops (``<kind>_unanswered``)."""
        if not channel.ask(name, question, wait=wait):
            self.log(f"{name.split('.')[0]}_unanswered", **(unanswered or {}))
            sys.exit(3)

    @staticmethod
    def git(*args: str, patch: str | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], input=patch, capture_output=True, text=True, cwd=cwd)

    def applied(self, patch: str) -> bool:
        return self.git("apply", "--check", "--reverse", "-", patch=patch).returncode == 0

    def applies(self, patch: str) -> bool:
        return self.git("apply", "--check", "-", patch=patch).returncode == 0

    def rebuild(self, files: dict[str, bytes], steps: list[tuple[str, bool]]) -> dict[str, bytes] | None:
        """Apply patches (``(patch, reverse)``) to ``files`` in a scratch copy; the new contents,
        or ``None`` when a patch does not apply."""
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            for rel, data in files.items():
                dst = Path(scratch) / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(data)
            for patch, reverse in steps:
                args = ["apply", *(["--reverse"] if reverse else []), "-"]
                if self.git(*args, patch=patch, cwd=scratch).returncode != 0:
                    return None
            touched = set(files) | {f for patch, _ in steps for f in _touched(patch)}
            return {rel: (Path(scratch) / rel).read_bytes() for rel in sorted(touched) if (Path(scratch) / rel).is_file()}

    def edit(self, steps: list[tuple[str, bool]]) -> bool:
        """Apply patches as ONE write per file, the way an agent's edit tool rewrites a file."""
        files = {rel: Path(rel).read_bytes() for patch, _ in steps for rel in _touched(patch) if Path(rel).is_file()}
        results = self.rebuild(files, steps)
        if results is None:
            return False
        for rel, data in results.items():
            Path(rel).parent.mkdir(parents=True, exist_ok=True)
            Path(rel).write_bytes(data)
        return True

    def commit(self, message: str) -> bool:
        self.git("add", "-A")
        return self.git("commit", "-q", "-m", message).returncode == 0

    def dirty(self) -> bool:
        return bool(self.git("status", "--porcelain").stdout.strip())

    # -- the session --------------------------------------------------------------------------
    def run(self) -> None:
        if not self.params.get("acts", True):
            self.log("idle")
            return
        if self.params.get("standards"):
            self.run_standards(self.params["standards"])
            return
        self.keep_conversation()
        if self.params.get("revert_uncommitted"):
            self.revert_uncommitted_py()
        known, amended = self.learn()
        self.take_notes(known, amended)
        if self.params.get("hash_check"):
            self.check_hashes(known, amended)
        if self.params.get("diff_check"):
            self.check_diff(known)
        self.implement_baseline()
        for skill in self.skills:
            self.implement(skill, known.get(skill["id"]), skill["id"] in amended)
        if self.dirty():
            self.log("commit_remaining", committed=self.commit("Commit remaining work"))

    def implement_baseline(self) -> None:
        """Tier 1: implement TASK.md and commit it first, when the prompt asks for it."""
        if self.baseline is None or self.applied(self.baseline):
            return
        if not rules.wants_baseline(self.prompt, oracle=self.params.get("knows_sprint") == "always"):
            return
        if not self.applies(self.baseline):
            return
        began = time.time()
        self.meter("implement_baseline", self.baseline)
        self.log("implement_baseline", began, paths=_touched(self.baseline))
        if self.edit([(self.baseline, False)]):
            self.log_commit("Implement TASK.md")
            self.pause()

    def implement(self, skill: dict, form: str | None, amendment_known: bool) -> None:
        if form is None:
            return
        rid = skill["id"]
        kind = rules.patch_form(form, has_superseded=bool(skill.get("superseded")), amendment_known=amendment_known)
        target = skill[{"summary": "summary_patch", "superseded": "superseded", "gold": "gold"}[kind]]
        step = rules.next_step(self.form_on_disk(skill, kind, target), kind)
        if step == rules.DONE:
            return
        if step == rules.SKIP:
            self.log("skip_conflict", requirement=rid, knows=kind)
            return
        steps = [(target, False)] if step == rules.WRITE else [(skill["superseded"], True), (target, False)]
        began = time.time()
        self.meter("implement", *(patch for patch, _ in steps))
        paths = sorted({p for patch, _ in steps for p in _touched(patch)})
        self.log("implement", began, requirement=rid, form=kind, paths=paths)
        # One action, like an agent's `edit && git commit`: the git guard must catch the race.
        if self.edit(steps):
            self.log_commit(f"{rid}: implement")
            self.pause()

    def form_on_disk(self, skill: dict, kind: str, target: str) -> str | None:
        """The requirement's form in the working tree, as far as this write is concerned: ``kind``
        (its patch is applied), None (it applies: nothing of it is there), ``superseded`` (the
        original form an amendment replaces), or ``other`` (a form whose patch conflicts)."""
        if self.applied(target):
            return kind
        if self.applies(target):
            return None
        if kind == rules.GOLD and skill.get("superseded") and self.applied(skill["superseded"]):
            return rules.SUPERSEDED
        return "other"

    def recorded_work(self, path: str, known: dict[str, str]) -> list[str]:
        """The patches on ``path`` this session can account for: TASK.md (tier 1) and each known
        requirement's form that is applied in the working tree."""
        patches = []
        if self.baseline and path in _touched(self.baseline) and self.applied(self.baseline):
            patches.append(self.baseline)  # tier 1: implementing TASK.md is recorded work too
        for skill in self.skills:
            if skill["id"] not in known:
                continue  # work this session cannot account for
            forms = [skill["gold"], skill.get("superseded"), skill["summary_patch"]]
            patches += [p for p in forms if p and path in _touched(p) and self.applied(p)][:1]
        return patches

    def unaccounted(self, path: str, base: bytes | None, known: dict[str, str]) -> tuple[bool, bytes | None]:
        """Whether ``path`` differs from ``base`` (None: no such file) plus the recorded work on it,
        and what it should then hold (None: no file)."""
        rebuilt = self.rebuild({path: base} if base is not None else {}, [(p, False) for p in self.recorded_work(path, known)])
        if rebuilt is None:
            return False, None  # the recorded work does not apply to that base: leave the file alone
        current = Path(path).read_bytes() if Path(path).is_file() else None
        want = rebuilt.get(path)
        return want != current, want

    def restore(self, undo: dict[str, bytes | None]) -> None:
        """Write each file back as planned (one write each; None: remove it), in path order."""
        for path, want in sorted(undo.items()):
            if want is None:
                self.git("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
                Path(path).unlink(missing_ok=True)
            else:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_bytes(want)

    def check_hashes(self, known: dict[str, str], amended: set[str]) -> None:
        """Gate I: compare every module with the SHA-256 recorded in app_map.md at setup. A module
        that differs is rebuilt from its setup version (found in git's object store, even if a
        commit was amended away) plus the known work applied to it (TASK.md, requirements); if
        that differs from the file, the rest was drift and is undone, in one write."""
        began = time.time()
        app_map = Path("app_map.md")
        if not app_map.is_file():
            return
        manifest = dict(re.findall(r"^- `([^`]+)` \(`[^`]*`\) sha256 `([0-9a-f]{64})`", app_map.read_text(), re.MULTILINE))
        drift = [p for p, h in manifest.items() if not Path(p).is_file() or _sha256(Path(p).read_bytes()) != h]
        if not drift:
            return
        blobs = self.blobs_by_sha256()
        plans = {p: self.unaccounted(p, blobs[manifest[p]], known) for p in drift if manifest[p] in blobs}
        undo = {p: want for p, (differs, want) in plans.items() if differs}
        self.log("drift_check", began, drift=drift, repaired=sorted(undo))
        self.restore(undo)
        if undo:
            self.log("commit_repair", committed=self.commit("Undo drift found by the hash check"))
            self.pause()

    def check_diff(self, known: dict[str, str]) -> None:
        """Diff before editing: every uncommitted change to a ``.py`` file must be accounted for by
        the requirements this session knows (from its prompt and notes); what is not is undone
        (the file goes back to HEAD plus the recorded work), one write per file."""
        began = time.time()
        out = self.git("status", "--porcelain", "-z", "--untracked-files=all").stdout
        changed = sorted({entry[3:] for entry in filter(None, out.split("\0")) if entry[3:].endswith(".py")})
        undo = {}
        for path in changed:
            head = subprocess.run(["git", "show", f"HEAD:{path}"], capture_output=True)
            differs, want = self.unaccounted(path, head.stdout if head.returncode == 0 else None, known)
            if differs:
                undo[path] = want
        self.log("diff_check", began, uncommitted=changed, undone=sorted(undo))
        self.restore(undo)
        if undo:
            self.pause()

    def blobs_by_sha256(self) -> dict[str, bytes]:
        """Every blob in the object store, reachable or not, by the SHA-256 of its content."""
        raw = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], capture_output=True).stdout
        out, pos = {}, 0
        while pos < len(raw):
            end = raw.index(b"\n", pos)
            _, kind, size = raw[pos:end].split()
            data = raw[end + 1 : end + 1 + int(size)]
            pos = end + 2 + int(size)  # the content is followed by a newline
            if kind == b"blob":
                out[_sha256(data)] = data
        return out

    def keep_conversation(self) -> None:
        """A harness's own session state, kept the way a harness keeps it: the conversation (the
        prompts it was given) in a file of its private HOME, written as soon as a prompt arrives.
        Resumed (``resume`` names it), it first reads back the conversation an earlier session left
        there, which SpecSnap carried over (compacted, in the ``compact`` mode)."""
        name = self.continuation.get("conversation")
        if not name:
            return
        path = Path(os.environ.get("HOME", ".")) / ".specsnap-policy" / f"{name}.json"
        if self.continuation.get("resume"):
            try:
                self.history = [str(t) for t in json.loads(path.read_text())["turns"]]
            except (OSError, ValueError, KeyError, TypeError):
                self.log("resume_failed")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"id": name, "turns": [*self.history, self.prompt]}))
        tmp.rename(path)

    def learn(self) -> tuple[dict[str, str], set[str]]:
        """Which requirements this session knows (in full or as a summary line), and which
        amendments it knows, from the prompt (with what a continuation carried into it), a resumed
        conversation and the notes on disk (``rules.learn``), and from hints (``rules.hinted``)."""
        began = time.time()
        self.meter("read", *self.history, self.prompt)
        notes = self.notes_path()
        files = [notes.as_posix()] if notes is not None else []
        oracle = self.params.get("knows_sprint") == "always"
        known, where, amended = rules.learn(self.reqs, "\n\n".join([*self.history, self.prompt]),
                                            notes.read_text(errors="replace") if notes is not None else None,
                                            oracle=oracle)
        learnt = {rid: {"mode": "read", "path": notes.as_posix()} if how == "notes" else {"mode": how}
                  for rid, how in where.items()}  # where each known requirement came from (the log's ``sources``)
        if self.params.get("knows_sprint") == "from_hints" and self.hints:  # (a workload without hints: none to look for)
            readable = [p for p in (Path("AGENTS.md"), notes) if p and p.is_file()]
            files += [p.as_posix() for p in readable if p.as_posix() not in files]
            found = rules.hinted(((h["text"], h["names"]) for h in self.hints),
                                 [p.read_text(errors="replace") for p in readable])
            for rid, index in found.items():
                if rid not in known:
                    known[rid] = "full"
                    learnt[rid] = {"mode": "read", "path": readable[index].as_posix()}
        texts = rules.known_texts(self.reqs, known) if self.continuation.get("mode") == "trace" else None
        self.log("read", began, known=known, amendments=sorted(amended), sources=learnt, files=files,
                 **({"texts": texts} if texts is not None else {}))
        return known, amended

    def notes_path(self) -> Path | None:
        name = self.params.get("notes_file")
        path = Path(name) if name else None
        return path if path is not None and path.is_file() else None

    def take_notes(self, known: dict[str, str], amended: set[str]) -> None:
        style = self.params.get("notes", "none")
        notes = self.notes_path()
        if style == "none" or notes is None:
            return
        text, written, entries = rules.take_notes(style, notes.read_text(errors="replace"), self.reqs, known, amended,
                                                  self.prompt)
        if entries:
            began = time.time()
            self.meter("write_notes", *written)
            notes.write_text(text)
            self.log("write_notes", began, style=style, entries=entries, paths=[notes.as_posix()])
            self.pause()

    # -- the standards family ---------------------------------------------------------------------
    def run_standards(self, mode: str) -> None:
        """Take tasks from the workspace's queue one at a time and write each handler, every surface
        in the form this policy's source gives: ``follow_standard`` (what STYLE.md states; the
        existing handlers' form where it states nothing) or ``follow_code`` (the existing handlers')."""
        kit = self.standards
        if kit is None or not Path(kit["issuer"]).is_file():
            self.log("no_task_queue")
            return
        forms, sources = self.standards_forms(kit, mode)
        self.log("decide", mode=mode, forms=forms, sources=sources)
        issued: set[str] = set()
        while True:
            proc = subprocess.run([sys.executable, "-I", "-B", kit["issuer"]], capture_output=True, text=True)
            shown = rules.norm(proc.stdout)
            task = next((t for t in kit["tasks"] if rules.norm(t["text"]) in shown), None)
            self.log("next_task", task=task["id"] if task else None, exit_code=proc.returncode)
            if task is None or task["id"] in issued:
                break  # the queue is empty (or did not move on: do not loop)
            issued.add(task["id"])
            source = "".join(p if isinstance(p, str) else p[forms[p["surface"]]] for p in task["pieces"])
            path = Path(task["module"])
            self.log("implement", task=task["id"], module=task["module"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source)  # one write, like an agent's edit tool
            self.log_commit(f"{task['id']}: handler of {task['event']}")
            self.pause()
        if self.dirty():
            self.log("commit_remaining", committed=self.commit("Commit remaining work"))

    def standards_forms(self, kit: dict, mode: str) -> tuple[dict[str, str], dict[str, str]]:
        """Per surface, the form to write and where it was read."""
        code = self.code_forms(kit)
        style = Path(kit["style_file"])
        text = rules.norm(style.read_text(errors="replace")) if style.is_file() else None
        forms, sources = {}, {}
        for surface, texts in kit["rules"].items():
            stated = [f for f in ("better", "worse") if text is not None and rules.norm(texts[f]) in text]
            forms[surface], sources[surface] = rules.choose_form(mode, stated[0] if len(stated) == 1 else None,
                                                                 code.get(surface))
        return forms, sources

    @staticmethod
    def code_forms(kit: dict) -> dict[str, str]:
        """The form the existing handlers show on each surface, where they show exactly one: a form is
        shown where its text for one of the surface's slots, with the text around it on its line, is
        in the handler's module on disk."""
        seen: dict[str, set[str]] = {}
        for handler in kit["existing"]:
            path = Path(handler["module"])
            text = path.read_text(errors="replace") if path.is_file() else ""
            pieces = handler["pieces"]
            for i, piece in enumerate(pieces):
                if isinstance(piece, str):
                    continue
                before = pieces[i - 1].rsplit("\n", 1)[-1] if i and isinstance(pieces[i - 1], str) else ""
                after = pieces[i + 1].split("\n", 1)[0] if i + 1 < len(pieces) and isinstance(pieces[i + 1], str) else ""
                for form in ("better", "worse"):
                    if before + piece[form] + after in text:
                        seen.setdefault(piece["surface"], set()).add(form)
        return {surface: forms.pop() for surface, forms in seen.items() if len(forms) == 1}

    def revert_uncommitted_py(self) -> None:
        began = time.time()
        out = self.git("status", "--porcelain", "-z", "--untracked-files=all").stdout
        if any(entry[3:].endswith(".py") for entry in filter(None, out.split("\0"))):
            # Unstage first (what a refused commit staged): the index then holds HEAD before any file
            # is restored, so a cut at a restoring write (the policy killed inside ``git checkout``,
            # before it rewrites the index) leaves nothing staged for the next session to revert again.
            self.git("reset", "-q")
        entries = [(entry[:2], entry[3:]) for entry in filter(None, out.split("\0")) if entry[3:].endswith(".py")]
        if not entries:
            return
        self.log("revert", began, paths=sorted(path for _, path in entries))  # (logged before it acts)
        for code, path in entries:
            if code == "??" or self.git("cat-file", "-e", f"HEAD:{path}").returncode != 0:
                # new since the last commit (untracked, or staged by a commit the cleave refused)
                self.git("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
                Path(path).unlink(missing_ok=True)
            else:
                self.git("checkout", "HEAD", "--", path)
        self.pause()


def main() -> int:
    Agent(json.load(sys.stdin)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
