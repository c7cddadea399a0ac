"""git on sandboxes, from the host, without ever running a program the agent configured.

A sandbox's repository is the agent's: its ``.git/config`` can name programs (``diff.external``,
clean/smudge/process filters, ``textconv``, ``core.fsmonitor``, ``gpg.program``, ``include.path``
to more of them), its hooks directory can hold anything, and ``core.hooksPath`` can point
anywhere. Plain ``git`` run in the sandbox by the host would obey all of it, as whoever runs
SpecSnap. So the host never runs git *in* a sandbox's ``.git``. It runs git in a **view**
(:class:`RepoView`): a private git directory of our own, with our configuration and no hooks,
whose object store reaches the sandbox's objects read-only (an alternate), whose index is built
from the sandbox's HEAD (so index flags such as ``assume-unchanged`` are not read), and whose
refs are the ones :func:`ref_tips` reads from the sandbox's files by hand. Objects the host
writes (the poison pill's amended commit) land in the view and are copied into the sandbox by
:mod:`sdcs_bench.core.safefs`, which follows no link the agent planted; so is a ref the host
moves. ``docs/cleave.md`` lists which git operation runs where.

Worktree attributes (``.gitattributes``) still name drivers, but a driver is a program only if
configuration defines it, and the view's configuration defines none; built-in conversions
(``eol``, ``ident``) can change what git hashes, so the integrity check hashes files itself.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from sdcs_bench.core import safefs
from sdcs_bench.core.timing import timed

AGENT_IDENTITY = {"user.name": "SpecSnap Agent", "user.email": "agent@specsnap.invalid"}
DATES = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}
TIMEOUT_S = 120  # a host-side git call on a sandbox that takes longer is treated as a failure
# git reads an object id in either case (a ref file written by hand in capitals names a commit too)
HEX40 = re.compile(rb"(?<![0-9a-fA-F])[0-9a-fA-F]{40}(?![0-9a-fA-F])")
OID = re.compile(r"[0-9a-fA-F]{40}")

# The view's whole configuration: nothing in it names a program, the caches a forged file could
# make lie (commit-graph, multi-pack-index, bitmaps, reverse indexes) are not read, and nothing
# recurses into a submodule (whose own configuration would be obeyed).
VIEW_CONFIG = """[core]
\trepositoryformatversion = 0
\tbare = false
\tfilemode = true
\tlogallrefupdates = false
\tcommitGraph = false
\tmultiPackIndex = false
\tfsmonitor = false
\tuntrackedCache = false
\tsplitIndex = false
\thooksPath = /dev/null/no-hooks
\tattributesFile = /dev/null
\texcludesFile = /dev/null
\tsymlinks = true
[pack]
\treadReverseIndex = false
\tuseBitmaps = false
[diff]
\tignoreSubmodules = all
[status]
\tsubmoduleSummary = false
[submodule]
\trecurse = false
[fetch]
\trecurseSubmodules = false
[gc]
\tauto = 0
[maintenance]
\tauto = false
[commit]
\tgpgSign = false
[tag]
\tgpgSign = false
[protocol]
\tallow = never
[user]
\tname = SpecSnap
\temail = specsnap@specsnap.invalid
"""


class GitError(RuntimeError):
    """A host-side git call on a sandbox failed (or the repository is not one SpecSnap can read)."""


def _base_env(home: str) -> dict[str, str]:
    """The environment of every host-side git call: the invoking user's and the system's git
    configuration are not read, and no variable of ours (``GIT_*``, a pager) reaches git."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C", "LC_ALL": "C", "HOME": home, "XDG_CONFIG_HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "PAGER": "cat", **DATES,
    }


@timed("git (host processes)")
def run_git(args: list[str], *, cwd: Path, env: dict[str, str], input: bytes | None = None,
            timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    """One git process: no terminal input (stdin is ``/dev/null`` unless ``input`` is given), in
    a session of its own, and on timeout killed with everything it started."""
    with subprocess.Popen(["git", *args], cwd=cwd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            raise
    return subprocess.CompletedProcess(["git", *args], proc.returncode, out, err)


# -- repositories SpecSnap made itself (the scaffold, before any agent ran) -------------------------
def git(repo: Path, *args: str, check: bool = True, input: bytes | None = None) -> str:
    """git in a repository no agent has touched yet (the scaffold's own): the user's and system's
    configuration are still left out, so every scaffold is the same everywhere."""
    env = _base_env(os.environ.get("HOME", "/nonexistent"))
    proc = run_git(list(args), cwd=repo, env=env, input=input)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace")


# What the scaffold's repository sets beside what ``git init`` writes: the agent's identity, no
# signing, and no automatic housekeeping (each commit would start a `git maintenance` process).
SCAFFOLD_CONFIG = {**AGENT_IDENTITY, "commit.gpgsign": "false", "gc.auto": "0", "maintenance.auto": "false"}


def init_repo(repo: Path) -> None:
    """A new repository on ``main`` with :data:`SCAFFOLD_CONFIG`, written into the configuration file
    ``git init`` made (as ``git config`` writes it; one process instead of one per setting). No
    template: no sample hooks, no description (files every snapshot of the sandbox would carry)."""
    git(repo, "init", "-q", "-b", "main", "--template=")
    sections: dict[str, list[str]] = {}
    for key, value in SCAFFOLD_CONFIG.items():
        section, _, name = key.partition(".")
        sections.setdefault(section, []).append(f"\t{name} = {value}\n")
    with open(repo / ".git" / "config", "a", encoding="utf-8") as config:
        config.write("".join(f"[{section}]\n" + "".join(lines) for section, lines in sections.items()))


PACK_MIN_BYTES = 1 << 20  # git's smallest --max-pack-size


def commit_all(repo: Path, message: str, *, max_pack_bytes: int | None = None) -> str:
    """Commit the whole tree; its objects then packed (one pack instead of a loose file per object:
    the sandbox is archived and restored at every stage boundary, a file at a time), in packs of at
    most ``max_pack_bytes`` each (a snapshot leaves out a file over its cap), or left loose when
    that is below git's smallest pack limit."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    if max_pack_bytes is None or max_pack_bytes >= PACK_MIN_BYTES:
        limit = [f"--max-pack-size={max_pack_bytes}"] if max_pack_bytes is not None else []
        git(repo, "repack", "-a", "-d", "-n", "-q", *limit)
    return git(repo, "rev-parse", "HEAD").strip()


# -- reading a sandbox's refs by hand --------------------------------------------------------------
def checked_git_dir(repo: Path) -> Path:
    """``repo/.git``, refused unless it and its object store are real directories (not a link or a
    ``gitdir:`` file an agent put there to send host-side git elsewhere) and the object store holds
    only directories and regular files: git opens an object file without a timeout of its own, so
    a FIFO planted as an object would hang it, and a link would send it out of the sandbox. An
    ``alternates`` file (objects read from another store, which git follows from the view too) is
    refused as well."""
    for rel in (".git", ".git/objects"):
        try:
            with safefs.open_dir(repo, rel):
                pass
        except OSError as exc:
            raise GitError(f"{repo}: {rel} is not a directory of the sandbox ({exc.strerror or exc})") from None
    errors: list[str] = []
    for rel, st in safefs.walk(repo, rel=".git/objects", errors=errors):
        if not stat.S_ISREG(st.st_mode):
            raise GitError(f"{repo}: .git/objects/{rel} is not a regular file (a link, FIFO or device)")
        if rel in ALTERNATES:
            raise GitError(f"{repo}: .git/objects/{rel} sends git to another object store")
    if errors:
        raise GitError(f"{repo}: .git/objects cannot be read whole ({errors[0]})")
    return repo / ".git"


ALTERNATES = ("info/alternates", "info/http-alternates")


def _ref_value(repo: Path, name: str, depth: int = 0) -> str | None:
    """The commit a ref names, reading loose ref files and ``packed-refs`` without git."""
    if depth > 5:
        return None
    data = safefs.read_file(repo, f".git/{name}", limit=1 << 16)
    if data is not None:
        text = data.decode(errors="replace").strip()
        if text.startswith("ref:"):
            return _ref_value(repo, text[4:].strip(), depth + 1)
        return text.lower() if OID.fullmatch(text) else None
    return _packed_refs(repo).get(name)


def _packed_refs(repo: Path) -> dict[str, str]:
    refs = {}
    packed = safefs.read_file(repo, ".git/packed-refs") or b""
    for line in packed.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and OID.fullmatch(parts[0]):
            refs.setdefault(parts[1], parts[0].lower())
    return refs


def refs(repo: Path, prefix: str = "refs/", errors: list[str] | None = None) -> dict[str, str]:
    """name -> object id of every ref under ``prefix`` (loose files under ``.git/refs``, then
    ``packed-refs`` for names no loose file holds), read by hand; a loose file that names no id is
    left out (``errors`` gets the directories that could not be read)."""
    found = {name: oid for name, oid in _packed_refs(repo).items() if name.startswith(prefix)}
    for rel, st in safefs.walk(repo, rel=f".git/{prefix.rstrip('/')}", errors=errors):
        if stat.S_ISREG(st.st_mode):
            value = _ref_value(repo, f"{prefix}{rel}")
            if value is not None:
                found[f"{prefix}{rel}"] = value
    return found


def head(repo: Path) -> str:
    """The commit the sandbox's HEAD names (read from its files, not by running git there)."""
    value = _ref_value(repo, "HEAD")
    if value is None:
        raise GitError(f"{repo}: HEAD names no commit")
    return value


def head_branch(repo: Path) -> str | None:
    """The ref HEAD points to (``refs/heads/main``), or None for a detached HEAD."""
    data = safefs.read_file(repo, ".git/HEAD", limit=1 << 16) or b""
    text = data.decode(errors="replace").strip()
    return text[4:].strip() if text.startswith("ref:") else None


# Files that make git read refs and objects from somewhere else than this .git (a worktree's
# pointers, which a main repository never has).
REDIRECTS = ("commondir", "gitdir")


def ref_tips(repo: Path) -> tuple[set[str], list[str]]:
    """Every object id written anywhere in the sandbox's ``.git`` outside its object store: loose
    refs, ``packed-refs``, reflogs, stashes, HEADs of worktrees, pseudo-refs, and refs an agent
    wrote by hand in any file at all, in either case. Returns the ids and the problems met (files
    too large to read, links, directories that cannot be walked, a ``commondir`` that sends git
    elsewhere), which a check must treat as failing (with :func:`repository_format_problems`)."""
    checked_git_dir(repo)
    tips: set[str] = set()
    problems: list[str] = []
    walk_errors: list[str] = []
    for rel, st in safefs.walk(repo, rel=".git", top_skip={"objects"}, errors=walk_errors):
        if not stat.S_ISREG(st.st_mode):
            # git follows a link (a ref that is a link to a file in the working tree), and nothing
            # SpecSnap or git writes there is one: whatever it points at, the check cannot vouch.
            problems.append(f".git/{rel} is not a regular file (a link, FIFO or socket)")
            continue
        if rel in REDIRECTS:
            problems.append(f".git/{rel} sends git to another repository's refs and objects")
        if rel == "index" or not st.st_size:
            continue
        try:
            data = safefs.read_file(repo / ".git", rel)
        except safefs.Unsafe as exc:
            problems.append(f".git/{rel}: {exc.strerror}")
            continue
        if data:
            tips |= {m.decode().lower() for m in HEX40.findall(data)}
    problems += [f".git/{e} could not be read" for e in walk_errors]
    return tips, problems


def repository_format_problems(repo: Path) -> list[str]:
    """What in the repository's configuration makes git read it differently from the format
    SpecSnap made (``repositoryformatversion`` other than 0, any ``extensions.*``: another object
    format, reftable refs, a worktree configuration), or a ``reftable`` directory; read by git's
    own parser from a copy of the file (nothing in it runs, includes are not followed)."""
    problems = []
    if os.path.lexists(repo / ".git" / "reftable"):
        problems.append(".git/reftable: refs stored in a format SpecSnap does not read")
    try:
        data = safefs.read_file(repo, ".git/config", limit=1 << 20)
    except safefs.Unsafe as exc:
        return problems + [f".git/config: {exc.strerror}"]
    if data is None:
        return problems
    with tempfile.NamedTemporaryFile(prefix="specsnap-config-") as tmp:
        tmp.write(data)
        tmp.flush()
        proc = run_git(["config", "--file", tmp.name, "--no-includes", "--list"], cwd=Path("/"),
                       env=_base_env("/nonexistent"))
    if proc.returncode != 0:
        return problems + [f".git/config cannot be parsed: {proc.stderr.decode(errors='replace').strip()[:300]}"]
    for line in proc.stdout.decode(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key == "core.repositoryformatversion" and value.strip() not in ("0", ""):
            problems.append(f".git/config sets core.repositoryformatversion = {value.strip()}")
        elif key.startswith("extensions."):
            problems.append(f".git/config sets {key} (git would read the repository otherwise)")
    return problems


# -- the view ---------------------------------------------------------------------------------------
class RepoView:
    """A private git directory through which the host reads (and, for the injection, writes) one
    sandbox's repository; see the module's docstring. Use as a context manager."""

    def __init__(self, repo: Path, *, index: bool = True) -> None:
        self.repo = Path(repo).resolve()
        self._index = index
        self.dir: Path | None = None

    def __enter__(self) -> RepoView:
        git_dir = checked_git_dir(self.repo)
        self.dir = Path(tempfile.mkdtemp(prefix="specsnap-gitview-"))
        try:
            (self.dir / "refs").mkdir()
            (self.dir / "home").mkdir()
            (self.dir / "objects" / "info").mkdir(parents=True)
            (self.dir / "objects" / "info" / "alternates").write_text(f"{git_dir / 'objects'}\n")
            (self.dir / "config").write_text(VIEW_CONFIG)
            (self.dir / "info").mkdir()
            (self.dir / "info" / "exclude").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
            self.head = _ref_value(self.repo, "HEAD")
            (self.dir / "HEAD").write_text(f"{self.head}\n" if self.head else "ref: refs/heads/main\n")
            if self.head and self._index:
                self.run("read-tree", self.head)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        assert self.dir is not None, "use RepoView as a context manager"
        return {**_base_env(str(self.dir / "home")), "GIT_DIR": str(self.dir), "GIT_WORK_TREE": str(self.repo),
                "GIT_INDEX_FILE": str(self.dir / "index"), "GIT_CEILING_DIRECTORIES": str(self.repo.parent),
                **(extra or {})}

    def run(self, *args: str, input: bytes | str | None = None, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        data = input.encode() if isinstance(input, str) else input
        try:
            proc = run_git(list(args), cwd=self.repo, env=self.env(env), input=data)
        except subprocess.TimeoutExpired:
            raise GitError(f"git {' '.join(args[:2])} on {self.repo} took longer than {TIMEOUT_S} s") from None
        if check and proc.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed on {self.repo}: "
                           f"{proc.stderr.decode(errors='replace').strip()[:2000]}")
        return proc

    def out(self, *args: str, input: bytes | str | None = None, check: bool = True) -> str:
        return self.run(*args, input=input, check=check).stdout.decode(errors="replace")

    # -- what the runner asks of a sandbox ----------------------------------------------------------
    def untracked(self) -> list[str]:
        out = self.out("ls-files", "--others", "--exclude-standard", "-z")
        return sorted(p for p in out.split("\0") if p)

    def changed_paths(self, since: str) -> list[str]:
        """Every path that differs from commit ``since``: committed, staged, unstaged or untracked."""
        out = self.out("diff", "--name-only", "--no-renames", "--ignore-submodules=all", "-z", since)
        return sorted(set(p for p in out.split("\0") if p) | set(self.untracked()))

    def working_diff(self) -> str:
        """The uncommitted state as one patch: tracked changes against HEAD plus untracked files
        (regular files and links only: a FIFO or device the agent left is named, not read)."""
        if self.head is None:
            return ""
        parts = [self.out("diff", "--binary", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all", "HEAD")]
        for path in self.untracked():
            try:
                st = os.lstat(self.repo / path)
            except OSError:
                continue
            if not (os.path.isfile(self.repo / path) or os.path.islink(self.repo / path)) or st.st_size > safefs.READ_LIMIT:
                parts.append(f"# untracked {path}: not a regular file or too large, not shown\n")
                continue
            # --no-index exits 1 when files differ, which is the point here.
            parts.append(self.out("diff", "--binary", "--no-ext-diff", "--no-textconv", "--no-index", "/dev/null",
                                  path, check=False))
        return "".join(parts)

    def object_types(self, ids: Iterable[str]) -> dict[str, str]:
        ids = sorted(ids)
        if not ids:
            return {}
        out = self.out("cat-file", "--batch-check=%(objectname) %(objecttype)", input="".join(f"{i}\n" for i in ids))
        types = {}
        for i, line in zip(ids, out.splitlines()):
            parts = line.split()
            types[i] = parts[1] if len(parts) == 2 and parts[0] == i else "missing"
        return types

    def reachable(self, tips: Iterable[str]) -> set[str]:
        """Every commit reachable from ``tips`` (commit or tag objects; others are ignored)."""
        starts = [i for i, t in self.object_types(tips).items() if t in ("commit", "tag")]
        if not starts:
            return set()
        out = self.out("rev-list", "--stdin", input="".join(f"{i}\n" for i in starts))
        return set(out.split())

    def fsck(self) -> str | None:
        """git's own full check of every object the sandbox holds (loose and packed, content against
        id, the links between them): what it reports, or None when all is well. An object file
        the agent rewrote (the id of one blob, the bytes of another) is caught here."""
        proc = self.run("fsck", "--full", "--strict", "--no-dangling", "--no-progress", "--no-reflogs", check=False)
        if proc.returncode == 0:
            return None
        said = (proc.stderr + proc.stdout).decode(errors="replace").strip()
        return said[:500] or f"git fsck exit {proc.returncode}"

    def commit_changes(self, commits: Iterable[str]) -> dict[str, list[tuple[str, str | None, str]]]:
        """For each commit, the paths it changes with each path's blob and mode after it (None and
        ``000000``: deleted; ``160000``: a submodule's commit); a merge lists the paths that differ
        from every parent, a root commit all its paths."""
        commits = sorted(commits)
        if not commits:
            return {}
        out = self.run("diff-tree", "--stdin", "-r", "--root", "-c", "--raw", "-z", "--no-renames", "--no-abbrev",
                       input="".join(f"{c}\n" for c in commits)).stdout
        changes: dict[str, list[tuple[str, str | None, str]]] = {c: [] for c in commits}
        current = None
        tokens = out.split(b"\0")
        i = 0
        while i < len(tokens):
            tok = tokens[i].strip(b"\n")
            if tok.startswith(b":"):
                fields = tok.lstrip(b":").split()
                path = tokens[i + 1].decode(errors="surrogateescape") if i + 1 < len(tokens) else ""
                # n parents: n + 1 modes, then n + 1 object ids (each parent's, then the result's)
                n_parents = len(tok) - len(tok.lstrip(b":"))
                blob = fields[2 * n_parents + 1].decode() if len(fields) > 2 * n_parents + 1 else "0" * 40
                mode = fields[n_parents].decode() if len(fields) > n_parents else "000000"
                if current is not None:
                    changes[current].append((path, None if set(blob) == {"0"} else blob, mode))
                i += 2
                continue
            if tok:
                current = tok.decode()
            i += 1
        return changes

    def copy_new_objects(self) -> int:
        """Copy the loose objects written in the view (never packs) into the sandbox's object
        store, following no link the agent planted; return how many."""
        assert self.dir is not None
        count = 0
        for sub in sorted((self.dir / "objects").iterdir()):
            if len(sub.name) != 2 or not sub.is_dir():
                continue
            for obj in sorted(sub.iterdir()):
                target = f".git/objects/{sub.name}/{obj.name}"
                if safefs.read_file(self.repo, target) is None:
                    safefs.write_file(self.repo, target, obj.read_bytes(), 0o444, replace_dirs=True)
                count += 1
        return count


def blob_id(data: bytes) -> str:
    """git's object id of a blob with these bytes (what ``git hash-object`` gives without filters)."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
