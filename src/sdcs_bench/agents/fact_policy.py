"""A SpecSnap fact-driven reference policy: a deterministic stand-in for a coding agent (not a model)
on a coherence workload (docs/coherence.md).

Runs as its own process inside the sandbox, like any harness, and changes the repository only
through the file system and git, so the cleave controller stops it exactly as it stops a real
agent. It needs only the standard library: the sandbox exposes this file and the channel to the
controller beside it (``policy_channel.py``), never the project.

Its briefing arrives on stdin as JSON, the way a real agent's knowledge arrives from its model:
  params  the behaviour preset (conf/agent/ref_every_fact.yaml and its siblings)
  prompt  this session's prompt
  facts   per motif: the file holding its secret and the name assigned there, and every file the
          sprint asks for as a template, with ``{value}`` where the secret goes (its competence:
          it can write each file once it has the value). No value is ever in the briefing.

A value is known only from what the sandbox shows this session: the secret's own file (a
top-level ``NAME = <int>``), the notes file (a line it wrote in an earlier session), or a file it
edited earlier (a template with the value filled in). When a value is missing, ``on_missing_fact``
decides: ``skip`` proceeds without it (writes what needs no value and says nothing), ``fabricate``
creates or fills the secret's file with a value of its own and goes on, ``abstain`` leaves the
motif alone and ends by saying it is blocked and asking for the value.

In a session cut at an edit (``handshake`` in the briefing) it asks the session's controller after
each file it writes whether it may go on, and waits (the cut handshake, ``policy_channel.py``): the
cut lands exactly at any load. Otherwise it pauses ``turn_delay_s`` after each file it writes.

Every action is one JSON line on stdout (``t`` the time), logged before it is carried out: ``read_file``,
``fact`` / ``missing_fact`` (where a value came from, never the value), ``write_file`` (path,
``created``, ``fabricated``), ``write_notes``, ``commit``, ``blocked``, and last
``final_message`` (its closing words, which an abstention classifier reads).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
from pathlib import Path

def _load_channel():
    """``policy_channel.py``, bound into the sandbox beside this file and loaded by its path."""
    import importlib.util

    path = Path(__file__).resolve().with_name("policy_channel.py")
    spec = importlib.util.spec_from_file_location("specsnap_policy_channel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


channel = _load_channel()

VALUE = "{value}"
NOTES_HEADING = "## Facts (values read from the workspace)"


def _note_line(secret: str, name: str, value: int) -> str:
    return f"- `{secret}`: {name} = {value}"


_NOTE = re.compile(r"^- `(?P<secret>[^`]+)`: (?P<name>[A-Za-z_]\w*) = (?P<value>-?\d+)\s*$", re.MULTILINE)


class FactAgent:
    def __init__(self, briefing: dict) -> None:
        self.params = briefing["params"]
        self.prompt = briefing["prompt"]
        self.facts = briefing["facts"]
        self.handshake = bool(briefing.get("handshake"))
        self.pause_s = float(briefing.get("pause_s") or 0)
        self.asked = 0
        self.turns = 0

    # -- acting on the world ------------------------------------------------------------------
    def log(self, action: str, **detail) -> None:
        self.turns += 1
        t = int(time.time() * 1000) / 1000  # (to the millisecond, never later than it began)
        print(json.dumps({"turn": self.turns, "action": action, "t": t, **detail}), flush=True)

    def pause(self) -> None:
        """After a write: in a session cut at an edit, the cut handshake, then ``pause_s`` (a later
        session's gap between writes it records); else ``turn_delay_s``."""
        if not self.handshake:
            time.sleep(float(self.params.get("turn_delay_s", 0)))
            return
        self.asked += 1
        if not channel.ask(channel.go_name(self.asked)):
            self.log("go_unanswered")
            sys.exit(3)
        if self.pause_s:
            time.sleep(self.pause_s)

    @staticmethod
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], capture_output=True, text=True)

    def read(self, path: str) -> str | None:
        target = Path(path)
        self.log("read_file", path=path, exists=target.is_file())
        return target.read_text(errors="replace") if target.is_file() else None

    def write(self, path: str, text: str, *, fabricated: bool = False) -> bool:
        """One write of the whole file, the way an agent's edit tool writes (logged first)."""
        target = Path(path)
        if target.is_file() and target.read_text(errors="replace") == text:
            return False
        self.log("write_file", path=path, created=not target.is_file(), fabricated=fabricated)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        self.pause()
        return True

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        committed = self.git("commit", "-q", "-m", message).returncode == 0
        self.log("commit", message=message, committed=committed)

    # -- what the sandbox shows ---------------------------------------------------------------
    @staticmethod
    def assigned_int(source: str | None, name: str) -> int | None:
        """The integer a module's top level assigns to ``name`` (None: no such literal)."""
        if source is None:
            return None
        try:
            body = ast.parse(source).body
        except SyntaxError:
            return None
        for node in body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                value = node.value
                if isinstance(value, ast.Constant) and type(value.value) is int:
                    return value.value
        return None

    @staticmethod
    def from_template(source: str | None, template: str) -> int | None:
        """The value a file written from ``template`` carries (None: it is not such a file)."""
        if source is None or VALUE not in template:
            return None
        pattern = re.escape(template).replace(re.escape(VALUE), r"(-?\d+)")
        match = re.fullmatch(pattern, source)
        return int(match.group(1)) if match and len(set(match.groups())) == 1 else None

    def notes_path(self) -> Path | None:
        name = self.params.get("notes_file")
        path = Path(name) if name else None
        return path if path is not None and path.is_file() else None

    def learn(self) -> dict[str, tuple[int, str]]:
        """Motif id -> (value, where it was found), for every value this session can find."""
        noted: dict[str, int] = {}
        notes = self.notes_path()
        if notes is not None:
            text = self.read(notes.as_posix()) or ""
            noted = {m["secret"]: int(m["value"]) for m in _NOTE.finditer(text)}
        known: dict[str, tuple[int, str]] = {}
        for motif in self.facts:
            secret, name = motif["secret"], motif["name"]
            value = self.assigned_int(self.read(secret), name)
            source = secret
            if value is None and secret in noted:
                value, source = noted[secret], notes.as_posix()
            if value is None:
                for edit in motif["edits"]:
                    if VALUE in edit["template"]:
                        found = self.from_template(self.read(edit["path"]), edit["template"])
                        if found is not None:
                            value, source = found, edit["path"]
                            break
            fact = f"{secret}:{name}"
            if value is None:
                self.log("missing_fact", fact=fact, motif=motif["id"])
            else:
                known[motif["id"]] = (value, source)
                self.log("fact", fact=fact, motif=motif["id"], source=source)
        return known

    def take_notes(self, known: dict[str, tuple[int, str]]) -> None:
        notes = self.notes_path()
        if self.params.get("notes") != "facts" or notes is None:
            return
        text = notes.read_text(errors="replace")
        have = {m["secret"] for m in _NOTE.finditer(text)}
        lines = [_note_line(m["secret"], m["name"], known[m["id"]][0]) for m in self.facts
                 if m["id"] in known and m["secret"] not in have]
        if not lines:
            return
        if NOTES_HEADING not in text:
            text = text.rstrip("\n") + "\n\n" + NOTES_HEADING + "\n"
        notes.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
        self.log("write_notes", path=notes.as_posix(), entries=len(lines))
        self.pause()

    # -- the session --------------------------------------------------------------------------
    def run(self) -> None:
        if not self.params.get("acts", True):
            self.log("idle")
            self.log("final_message", text="Nothing to do.")
            return
        known = self.learn()
        self.take_notes(known)
        on_missing = self.params.get("on_missing_fact", "skip")
        missing = []
        for motif in self.facts:
            value = known.get(motif["id"], (None, None))[0]
            if value is None and on_missing == "fabricate":
                value = int(motif["index"])  # made up: a seed's salts all exceed the motif indices
                self.write(motif["secret"], f"{motif['name']} = {value}\n", fabricated=True)
            if value is None:
                missing.append(motif)
                if on_missing == "abstain":
                    continue
            changed = False
            for edit in motif["edits"]:
                if VALUE in edit["template"] and value is None:
                    continue  # proceeds without the value: only what needs none
                changed |= self.write(edit["path"], edit["template"].replace(VALUE, str(value)))
            if changed:
                self.commit(f"{motif['id']}: implement")
        self.finish(missing, on_missing)

    def finish(self, missing: list[dict], on_missing: str) -> None:
        ids = [m["id"] for m in missing]
        if missing and on_missing == "abstain":
            files = ", ".join(f"`{m['secret']}`" for m in missing)
            self.log("blocked", missing=[f"{m['secret']}:{m['name']}" for m in missing], motifs=ids)
            text = (f"I am blocked on {', '.join(ids)}: the value of {missing[0]['name']} in {files} is not available "
                    "(the file is missing or defines nothing), and I cannot proceed without it. Please provide "
                    "the missing value(s); the other chains are implemented.")
        elif missing and on_missing == "skip":
            text = (f"Finished. Implemented every chain whose value I found; for {', '.join(ids)} I wrote the "
                    "stages that need no value.")
        else:
            text = "Finished. Every chain is implemented."
        self.log("final_message", text=text)


def main() -> int:
    FactAgent(json.load(sys.stdin)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
