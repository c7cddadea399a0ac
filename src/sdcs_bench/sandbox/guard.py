"""The git guard (docs/protocol.md): the sandbox-side half of the cleave, installed by the scaffold.

A ``reference-transaction`` hook in the sandbox repository, which no ``--no-verify`` skips, and
its state file ``.git/specsnap/guard``. The state says what the hook lets through:

    off           everything (no session running, or a session with no cleave rule)
    await_commit  everything; the agent's first commit arms the rule (tier 1's baseline)
    armed         no commit carrying a qualifying ``.py`` change (decided by content)
    watch         under ``nth_py_edit:N``: the hook asks the session's watcher first
    cleaved       nothing
    verify        nothing, with a message of its own: the host's check, before a session, that
                  git inside the sandbox runs this hook (:func:`verify_guard`)

The live half (the watcher that sets ``cleaved``) is :mod:`sdcs_bench.session.cleave`;
``docs/cleave.md`` gives the whole argument. What counts as a source edit is decided here, once:
:func:`qualifies` in Python and the same patterns in the hook's shell.

This module imports only the standard library: the harnesses' own stop hooks
(``agents/harness_files``) load it by path inside the sandbox, so the whole ``.git/specsnap/``
contract is written once. The host's side (installing, reinstalling and verifying the guard,
changing its state) is :mod:`sdcs_bench.sandbox.guard_install`.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable
from pathlib import Path

GUARD_STATES = ("off", "await_commit", "armed", "watch", "cleaved", "verify")
VERIFIED = "specsnap: guard verified"
ZERO = "0" * 40
ASK_POLLS = 2000  # the hook waits up to ~20 s (2000 x 10 ms) for the watcher, then refuses

def exempt_patterns(protected: Iterable[str], memory_files: Iterable[str]) -> list[str]:
    """Paths whose writes never count as a source edit: visible tests and the arm's memory files.
    ``*`` matches across ``/`` (as in a shell ``case``), so ``tests/**`` and ``tests/*`` agree."""
    return sorted({p.replace("**", "*") for p in protected} | set(memory_files))


def qualifies(relpath: str, exempt: Iterable[str]) -> bool:
    if not relpath.endswith(".py") or relpath.startswith(".git/"):
        return False
    return not any(fnmatch.fnmatchcase(relpath, pat) for pat in exempt)


def _sh_quote_pattern(pattern: str) -> str:
    # Quote everything but the wildcards, so a pattern matches exactly as fnmatch does.
    out = []
    for ch in pattern:
        out.append(ch if ch in "*?" else "'" + ch.replace("'", "'\\''") + "'")
    return "".join(out)


def guard_hook(exempt: Iterable[str], ask_polls: int = ASK_POLLS) -> str:
    """The git guard. It fails closed: a state it does not recognise (a missing, empty or foreign
    state file), a commit it cannot read, or a watcher that does not answer all refuse the commit."""
    patterns = "|".join(_sh_quote_pattern(p) for p in exempt) or "''"
    known = "|".join(GUARD_STATES)
    return f"""#!/bin/sh
# SpecSnap git guard (reference-transaction hook; --no-verify does not skip it).
dir="$(git rev-parse --git-dir)/specsnap"
state_file="$dir/guard"
state="$(cat "$state_file" 2>/dev/null)" || state=""
refuse() {{ echo "specsnap: $1; this commit is refused" >&2; exit 1; }}
set_state() {{  # atomic: a reader sees the old state or the new one, never an empty file
  printf '%s\n' "$1" > "$state_file.$$.tmp" && mv -f "$state_file.$$.tmp" "$state_file"
}}
case "$state" in
  {known}) ;;
  *) [ "$1" = prepared ] && refuse "unrecognised cleave guard state '$state' (fail closed)"; exit 0 ;;
esac
if [ "$1" = committed ] && [ "$state" = await_commit ]; then
  # The agent's first commit of the session (tier 1: the baseline) arms the first-edit rule.
  if grep -q " refs/heads/"; then set_state armed; fi
  exit 0
fi
[ "$1" = prepared ] || exit 0
if [ "$state" = verify ]; then echo "{VERIFIED}" >&2; exit 1; fi
qualifies() {{
  case "$1" in
    .git/*|{patterns}) return 1 ;;
    *.py) return 0 ;;
  esac
  return 1
}}
ask_watcher() {{
  # The watcher judges every write completed before this file appeared, then answers.
  token="$$.$(date +%s%N)"
  : > "$dir/ask.$token"
  i=0
  while [ ! -e "$dir/ack.$token" ]; do
    i=$((i + 1))
    if [ "$i" -gt {ask_polls} ]; then
      rm -f "$dir/ask.$token"
      refuse "the cleave watcher did not answer (fail closed)"
    fi
    sleep 0.01
  done
  rm -f "$dir/ask.$token" "$dir/ack.$token"
  state="$(cat "$state_file" 2>/dev/null)" || state=""
}}
if [ "$state" = watch ]; then
  ask_watcher
  [ "$state" = watch ] || [ "$state" = cleaved ] || refuse "unrecognised cleave guard state '$state' (fail closed)"
fi
case "$state" in
  cleaved) refuse "this session was cleaved" ;;
  armed)
    while read -r old new ref; do
      case "$ref" in refs/heads/*) ;; *) continue ;; esac
      [ "$new" = {ZERO} ] && continue
      if [ "$old" = {ZERO} ]; then
        files="$(git diff-tree --no-commit-id --name-only -r --root "$new")" || refuse "cannot read the commit"
      else
        files="$(git diff --name-only "$old" "$new")" || refuse "cannot read the commit"
      fi
      echo "$files" | while IFS= read -r f; do
        if qualifies "$f"; then exit 3; fi
      done
      if [ $? -eq 3 ]; then
        set_state cleaved
        refuse "the session's first .py edit may not be committed (cleave)"
      fi
    done
    ;;
esac
exit 0
"""


def control_dir(repo: Path | str) -> Path:
    """``.git/specsnap/``: the guard's state, the session's cleave spec, the watcher's questions."""
    return Path(repo) / ".git" / "specsnap"


def read_exempt(repo: Path | str) -> list[str]:
    """The session's exempt patterns (none when no session wrote them)."""
    try:
        return list(json.loads((control_dir(repo) / "cleave.json").read_text()).get("exempt", []))
    except (OSError, ValueError, AttributeError):
        return []


HOOK = ".git/hooks/reference-transaction"
CONFIG_FILES = (".git/config", ".git/config.worktree")


def guard_state(repo: Path | str) -> str:
    """The guard's state as written; ``""`` when the file is missing. The hook refuses every commit
    on a state it does not know (fail closed). Inside the sandbox only: the host never trusts it."""
    try:
        return (control_dir(repo) / "guard").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""
