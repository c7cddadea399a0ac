"""The exact-stop hooks a harness runs around each tool call (Claude Code, Gemini CLI).

Run inside the sandbox by the harness itself, standalone (stdlib only):

    python -I -B cleave_hook.py post|pre --repo DIR

- ``post`` (after an edit tool): once the session's cleave has fired (the watcher is the only
  authority; its state is the git guard's state file), tell the harness to end the session:
  ``{"continue": false}``. A hook can run before the watcher has seen the write it follows, so
  after a qualifying ``.py`` edit it waits briefly for the watcher's verdict.
- ``pre`` (before every tool): once the cleave has fired, deny the tool (exit 2, reason on
  stderr): a tool call that was issued in the same reply as the edit (``git commit``) never runs.

The hook's input is the harness's JSON on stdin (``tool_input`` with the edited path).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# The .git/specsnap/ contract is written once, in sdcs_bench/sandbox/guard.py (standard library
# only, readable inside the sandbox); load it by path, without the package around it.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sandbox"))
from guard import guard_state, qualifies  # noqa: E402
from guard import read_exempt as exempt  # noqa: E402

WAIT_S = 2.0
REASON = "specsnap: this session was cleaved at its first .py edit; no further tool calls are allowed"


def edited_path(event: dict, repo: str) -> str | None:
    args = event.get("tool_input") or event.get("toolInput") or {}
    for key in ("file_path", "path", "filePath", "absolute_path", "notebook_path"):
        value = args.get(key) if isinstance(args, dict) else None
        if isinstance(value, str) and value:
            full = os.path.realpath(os.path.join(repo, value))
            rel = os.path.relpath(full, os.path.realpath(repo))
            return None if rel.startswith("..") else rel.replace(os.sep, "/")
    return None


def main(argv: list[str]) -> int:
    mode = argv[0]
    repo = argv[argv.index("--repo") + 1] if "--repo" in argv else os.getcwd()
    try:
        event = json.load(sys.stdin)
    except ValueError:
        event = {}
    state = guard_state(repo)
    if mode == "pre":
        if state == "cleaved":
            print(REASON, file=sys.stderr)
            return 2
        return 0
    if state in ("armed", "watch"):
        rel = edited_path(event, repo)
        if rel is not None and qualifies(rel, exempt(repo)):
            deadline = time.monotonic() + WAIT_S
            while state != "cleaved" and time.monotonic() < deadline:
                time.sleep(0.02)
                state = guard_state(repo)
    if state == "cleaved":
        json.dump({"continue": False, "stopReason": REASON}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
