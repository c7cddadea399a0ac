"""The integrity check of one session, made once the agent's processes are gone: from the repository
and the files alone, independent of every layer that should have prevented a violation (the watcher,
the git guard, a harness's hooks; docs/cleave.md).

What the session's watcher saw (:class:`Watched`) is the one thing it takes from the controller
(:mod:`sdcs_bench.session.cleave`): to tell an edit the watcher never saw from one it did.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcs_bench.coherence.resume import READ_LIMIT
from sdcs_bench.core import safefs
from sdcs_bench.core.gitutil import GitError, RepoView, blob_id, ref_tips, refs, repository_format_problems
from sdcs_bench.sandbox.guard import qualifies
from sdcs_bench.trial.workload_model import CleaveRule

START_BUDGET = 64 << 20  # the source files' bytes a continuation keeps from its start (the rest: unknown)


@dataclass
class Watched:
    """What the watcher saw during one session, for the integrity check after it."""

    seen: set[str] = field(default_factory=set)  # qualifying paths any event named
    seen_dirs: set[str] = field(default_factory=set)  # directories moved or deleted as a whole
    edits: list[tuple[str, str | None]] = field(default_factory=list)  # (path, blob) of each counted edit
    errors: list[str] = field(default_factory=list)  # what made the watcher fail closed
    last_seen: dict[str, str | None] = field(default_factory=dict)  # path -> its content at its last event
    linked: set[str] = field(default_factory=set)  # qualifying files seen with more than one hard link
    known_at_arming: set[str] | None = None  # tier 1: the commits reachable when the rule armed
    known_at_fire: set[str] | None = None  # a token or turn rule: the commits reachable when it fired


def _read_content(repo: Path, rel: str) -> tuple[str | None, bytes | None]:
    """A file's git blob id (a link: its target's text, as git stores it), read without following
    anything, and, for a regular file, its bytes (else None); ``(None, None)`` when it is gone or unreadable."""
    path = repo / rel
    try:
        if os.path.islink(path):
            return blob_id(os.fsencode(os.readlink(path))), None
        data = safefs.read_file(repo, rel)
    except OSError:
        return None, None
    return (blob_id(data), data) if data is not None else (None, None)



def qualifying_state(repo: Path, exempt: Iterable[str], linked: set[str] | None = None,
                     contents: dict[str, bytes | None] | None = None) -> dict[str, str]:
    """path -> blob id of every qualifying file in the working tree (links as git stores them);
    ``linked``, when given, gets the files that have another hard link (anywhere); ``contents``
    the bytes of each (read once, for both), None for a link, a file larger than
    ``READ_LIMIT`` or past ``START_BUDGET`` in all: what a continuation's record follows."""
    exempt = list(exempt)
    state = {}
    kept = 0
    for rel, st in safefs.walk(repo, skip_dirs={"__pycache__"}, top_skip={".git"}):
        if qualifies(rel, exempt):
            blob, data = _read_content(repo, rel)
            state[rel] = blob if blob is not None else "unreadable"
            if contents is not None:
                keep = data is not None and len(data) <= READ_LIMIT and kept + len(data) <= START_BUDGET
                contents[rel] = data if keep else None
                kept += len(data) if keep else 0
            if linked is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                linked.add(rel)
    return state


def known_commits(repo: Path) -> set[str]:
    """Every commit reachable from anything written in the sandbox's ``.git`` (any ref, reflog,
    stash, worktree HEAD, a ref file written by hand), read through a view (no agent program
    runs). Unreadable: an empty set (the check after the session then sees every commit as new)."""
    try:
        tips, _ = ref_tips(repo)
        with RepoView(repo, index=False) as view:
            return view.reachable(tips)
    except (GitError, OSError):
        return set()


def session_integrity(repo: Path, *, rule: CleaveRule, exempt: Iterable[str], cleave: dict[str, Any],
                      commits_before: set[str], before: dict[str, str], after: dict[str, str], watched: Watched,
                      linked_after: set[str] | None = None, guard: dict[str, Any] | None = None) -> dict[str, Any]:
    """The integrity check of one session under an active rule, made once the agent's processes are
    gone. Defined on content, independent of every layer that should have prevented a violation:

    - every commit reachable after the session (any ref, reflog, stash, or a ref file written by
      hand, in either case) that was not reachable before is checked against what the rule allows:
      under ``first_py_edit`` no change to a qualifying path at all; under tier 1's rule only the
      baseline commit(s) made before it armed, on top of the earlier history, and none holding
      the cleaved edit; under ``nth_py_edit:N`` only contents the watcher saw written before the
      N-th edit; no new commit may hold a submodule (gitlink) entry;
    - git reads the repository as SpecSnap made it: every object's content matches its id (``git
      fsck``), no replace ref, every ref names a commit or a tag, no extension or other format;
    - every qualifying file whose content differs from the start must have been seen by the
      watcher, and must end as the watcher last saw it (a write through a hard link, or lost
      events, names no path); no qualifying file may have another hard link;
    - the watcher must not have failed, and the guard must have been verified before the session.

    ``ok`` false makes the trial invalid."""
    exempt = list(exempt)
    problems: list[str] = []
    committed: list[dict[str, str]] = []
    parents: dict[str, list[str]] = {}
    try:
        tips, unreadable = ref_tips(repo)
        problems += [f"a file in .git the check cannot vouch for: {u}" for u in unreadable]
        problems += repository_format_problems(repo)
        ref_errors: list[str] = []
        named = refs(repo, errors=ref_errors)
        problems += [f".git/{e} could not be read" for e in ref_errors]
        replaced = sorted(n for n in named if n.startswith("refs/replace/"))
        if replaced:
            problems.append(f"replace refs make git show other objects in their place: {', '.join(replaced)}")
        with RepoView(repo, index=False) as view:
            kinds = view.object_types(set(named.values()))
            odd = sorted(n for n, oid in named.items() if kinds.get(oid) not in ("commit", "tag"))
            if odd:
                problems.append(f"refs that name no commit: {', '.join(f'{n} ({kinds.get(named[n])})' for n in odd)}")
            said = view.fsck()
            if said:
                problems.append(f"git fsck finds the object store altered: {said}")
            new = sorted(view.reachable(tips) - commits_before)
            changes = view.commit_changes(new)
            if rule.kind == "first_py_edit_after_commit" and new:
                lines = view.out("rev-list", "--no-walk=unsorted", "--parents", "--stdin",
                                 input="".join(f"{c}\n" for c in new)).splitlines()
                parents = {ids[0]: ids[1:] for ids in (line.split() for line in lines) if ids}
    except (GitError, OSError) as exc:
        problems.append(f"the repository could not be read after the session: {exc}")
        new, changes = [], {}
    gitlinks = sorted({p for ch in changes.values() for p, _, mode in ch if mode == "160000"})
    if gitlinks:
        problems.append(f"commits made in the session hold submodule entries (the check cannot vouch for what "
                        f"they point to): {', '.join(gitlinks)}")
    if rule.metered:
        # A token or turn rule forbids no content, only work after the cut: any commit that was not
        # there when it fired. (No path is cut, so edits the watcher missed change nothing here.)
        late = [] if watched.known_at_fire is None else [c for c in new if c not in watched.known_at_fire]
        if late:
            problems.append(f"commits landed after the cut ({rule}): {', '.join(c[:12] for c in late)}")
        return _verdict(problems, late, new, [], cleave, after, watched, guard)
    qualifying = {c: [(p, b) for p, b, _ in ch if qualifies(p, exempt)] for c, ch in changes.items()}
    carrying = [c for c in new if qualifying[c]]
    cut = cleave.get("path")
    forbidden = {(cut, cleave.get("edit_blob")), (cut, after.get(cut or ""))} if cut else set()
    if rule.kind == "first_py_edit_after_commit":
        allowed = {c for c in carrying
                   if all(p in commits_before for p in parents.get(c, ["?"]))
                   and (watched.known_at_arming is None or c in watched.known_at_arming)
                   and not forbidden & set(qualifying[c])}
        if watched.known_at_arming is None:
            allowed = set(sorted(allowed)[:1])  # never armed in the watcher: one baseline commit at most
    elif rule.kind == "nth_py_edit" and rule.n > 1:
        fired_at = len(watched.edits) if not cleave.get("fired") else rule.n - 1
        ok_content = set(watched.edits[:fired_at])
        allowed = {c for c in carrying if all((p, b) in ok_content and (p, b) not in forbidden
                                              or (b is None and p in watched.seen) for p, b in qualifying[c])}
    else:
        allowed = set()
    for c in carrying:
        if c not in allowed:
            committed += [{"commit": c, "path": p} for p, _ in qualifying[c]]
    bad_commits = sorted({x["commit"] for x in committed})
    if committed:
        paths = sorted({x["path"] for x in committed})
        if cut in paths:
            problems.append(f"the cleaved edit of {cut} was committed ({', '.join(c[:12] for c in bad_commits)})")
        else:
            problems.append(f"commits made while the rule {rule} forbade it change {', '.join(paths)} "
                            f"({', '.join(c[:12] for c in bad_commits)})")
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    unseen = [p for p in changed if p not in watched.seen and not _under(p, watched.seen_dirs)]
    if unseen:
        problems.append(f"qualifying edits the watcher never saw: {', '.join(unseen)}")
    behind = [p for p in changed if p in watched.last_seen and watched.last_seen[p] != after.get(p)]
    if behind:
        problems.append(f"qualifying files changed after the watcher last saw them (written through another "
                        f"link): {', '.join(behind)}")
    linked = sorted(watched.linked | (linked_after or set()))
    if linked:
        problems.append(f"qualifying files with another hard link (writes through it name no path the watcher "
                        f"sees): {', '.join(linked)}")
    return _verdict(problems, bad_commits, new, unseen + behind, cleave, after, watched, guard)


def _verdict(problems: list[str], bad_commits: list[str], new: list[str], unseen: list[str], cleave: dict[str, Any],
             after: dict[str, str], watched: Watched, guard: dict[str, Any] | None) -> dict[str, Any]:
    if watched.errors:
        problems.append(f"the watcher failed (the cleave fired on the error): {watched.errors[0]}")
    if guard is not None and not guard.get("verified", True):
        problems.append(f"the git guard was not in force: {guard.get('problem', 'not verified')}")
    readable = not any(p.startswith("the repository could not be read") for p in problems)
    result: dict[str, Any] = {"ok": not problems, "edit_committed": bool(bad_commits) if readable else None,
                              "commits": sorted(bad_commits), "new_commits": len(new), "unseen_edits": unseen}
    if cleave.get("path"):
        result["edit_blob"] = after.get(cleave["path"])
    if problems:
        result["problem"] = "; ".join(problems)
    return result


def _under(path: str, dirs: set[str]) -> bool:
    return any(path.startswith(d + "/") for d in dirs)
