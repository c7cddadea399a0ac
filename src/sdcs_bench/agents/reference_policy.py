"""A SpecSnap reference policy: a deterministic stand-in for a coding agent (not a model).

Runs as its own process inside the sandbox, like any harness, and changes the repository only
through the file system and git, so the cleave controller stops it exactly as it stops a real
agent. It needs only the standard library: the sandbox exposes this one file, never the project.

Its briefing arrives on stdin as JSON, the way a real agent's knowledge arrives from its model:
  params  - the behaviour preset (see conf/agent/ref_*.yaml)
  prompt  - this session's prompt, exactly as a real agent would get it
  skills  - per requirement: its full text and the patch written from it, and its one-line
            summary and the patch written from that (the policy's "competence")
What it knows of *which* requirements to do comes only from the prompt and the disk, except
for a policy with ``knows_sprint: always`` (the oracle). Every action is one JSON line on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


def _norm(text: str) -> str:
    return " ".join(text.split())


class Agent:
    def __init__(self, briefing: dict) -> None:
        self.params = briefing["params"]
        self.prompt = briefing["prompt"]
        self.skills = briefing["skills"]
        self.turns = 0

    # -- acting on the world ------------------------------------------------------------------
    def log(self, action: str, **detail) -> None:
        self.turns += 1
        print(json.dumps({"turn": self.turns, "action": action, **detail}), flush=True)

    def pause(self) -> None:
        time.sleep(float(self.params.get("turn_delay_s", 0)))

    @staticmethod
    def git(*args: str, patch: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], input=patch, capture_output=True, text=True)

    def applied(self, patch: str) -> bool:
        return self.git("apply", "--check", "--reverse", "-", patch=patch).returncode == 0

    def applies(self, patch: str) -> bool:
        return self.git("apply", "--check", "-", patch=patch).returncode == 0

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
        if self.params.get("revert_uncommitted"):
            self.revert_uncommitted_py()
        known = self.learn()
        self.take_notes(known)
        for skill in self.skills:
            form = known.get(skill["id"])
            if form is None:
                continue
            patch = skill["gold"] if form == "full" else skill["summary_patch"]
            if self.applied(patch):
                self.log("already_done", requirement=skill["id"])
                continue
            if not self.applies(patch):
                self.log("skip_conflict", requirement=skill["id"], knows=form)
                continue
            # One action, like an agent's `edit && git commit`: the git guard must catch the race.
            self.git("apply", "-", patch=patch)
            committed = self.commit(f"{skill['id']}: implement")
            self.log("implement", requirement=skill["id"], knows=form, committed=committed)
            self.pause()
        if self.dirty():
            self.log("commit_remaining", committed=self.commit("Commit remaining work"))

    def learn(self) -> dict[str, str]:
        """Which requirements this session knows, and whether in full or as a summary line."""
        known: dict[str, str] = {}
        prompt = _norm(self.prompt)
        for skill in self.skills:
            if self.params.get("knows_sprint") == "always" or _norm(skill["text"]) in prompt:
                known[skill["id"]] = "full"
        notes = self.notes_path()
        if notes is not None:
            text = _norm(notes.read_text(errors="replace"))
            for skill in self.skills:
                if skill["id"] in known:
                    continue
                if _norm(skill["text"]) in text:
                    known[skill["id"]] = "full"
                elif _norm(self.summary_line(skill)) in text:
                    known[skill["id"]] = "summary"
        self.log("read", known=known)
        return known

    def notes_path(self) -> Path | None:
        name = self.params.get("notes_file")
        path = Path(name) if name else None
        return path if path is not None and path.is_file() else None

    @staticmethod
    def summary_line(skill: dict) -> str:
        return f"- {skill['id']}: {skill['summary']}"

    def take_notes(self, known: dict[str, str]) -> None:
        style = self.params.get("notes", "none")
        notes = self.notes_path()
        if style == "none" or notes is None:
            return
        current = _norm(notes.read_text(errors="replace"))
        entries = []
        for skill in self.skills:
            if known.get(skill["id"]) != "full":
                continue
            entry = skill["text"] if style == "verbatim" else self.summary_line(skill)
            if _norm(entry) not in current:
                entries.append(entry)
        if entries:
            with notes.open("a") as fh:
                fh.write("\n" + "\n\n".join(entries) + "\n")
            self.log("write_notes", style=style, entries=len(entries))
            self.pause()

    def revert_uncommitted_py(self) -> None:
        out = self.git("status", "--porcelain", "-z", "--untracked-files=all").stdout
        reverted = []
        for entry in filter(None, out.split("\0")):
            code, path = entry[:2], entry[3:]
            if not path.endswith(".py"):
                continue
            if code == "??":
                Path(path).unlink(missing_ok=True)
            else:
                self.git("checkout", "HEAD", "--", path)
            reverted.append(path)
        if reverted:
            self.log("revert", paths=sorted(reverted))
            self.pause()


def main() -> int:
    Agent(json.load(sys.stdin)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
