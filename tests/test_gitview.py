"""git on an agent's repository from the host (``core/gitutil.py``): refs read by hand, git run only
in a view of our own, so nothing the repository configures ever runs; and no link followed in
the agent's tree (``core/safefs.py``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sdcs_bench.core import safefs
from sdcs_bench.core.gitutil import GitError, RepoView, blob_id, head, head_branch, ref_tips


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null",
                           *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("A = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    return repo


def test_commit_changes_name_each_path_and_its_blob_after(tmp_path, repo):
    root = head(repo)
    (repo / "a.py").write_text("A = 2\n")
    (repo / "b.py").write_text("B\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    two = head(repo)
    _git(repo, "checkout", "-qb", "side", root)
    (repo / "c.py").write_text("C\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "three")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge", "side")
    merge = head(repo)
    _git(repo, "rm", "-q", "b.py")
    _git(repo, "commit", "-qm", "four")
    four = head(repo)
    with RepoView(repo, index=False) as view:
        changes = view.commit_changes([root, two, merge, four])
    assert changes[root] == [("a.py", blob_id(b"A = 1\n"), "100644")]
    assert {p: (b, m) for p, b, m in changes[two]} == {"a.py": (blob_id(b"A = 2\n"), "100644"),
                                                       "b.py": (blob_id(b"B\n"), "100644")}
    assert changes[merge] == []  # a clean merge changes nothing that differs from every parent
    assert changes[four] == [("b.py", None, "000000")]


def test_refs_are_read_by_hand_wherever_they_were_written(repo):
    first = head(repo)
    assert head_branch(repo) == "refs/heads/main"
    tree = _git(repo, "write-tree")
    loose = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", tree, "-p", first],
                           cwd=repo, input="x", capture_output=True, text=True, check=True).stdout.strip()
    (repo / ".git" / "refs" / "heads" / "main").unlink()
    (repo / ".git" / "packed-refs").write_text(f"{first} refs/heads/main\n")
    assert head(repo) == first  # packed, read by hand
    (repo / ".git" / "somewhere-else").write_text(f"not a ref, but {loose} in a file git could be pointed at\n")
    tips, problems = ref_tips(repo)
    assert {first, loose} <= tips and not problems
    with RepoView(repo, index=False) as view:
        assert view.reachable(tips) == {first, loose}


def test_a_link_or_a_redirect_in_git_is_a_problem_and_a_fifo_object_is_refused(repo):
    (repo / "notes.txt").write_text(head(repo) + "\n")
    os.symlink("../../../notes.txt", repo / ".git" / "refs" / "heads" / "side")
    (repo / ".git" / "commondir").write_text(str(repo / "elsewhere") + "\n")
    _, problems = ref_tips(repo)
    assert any("refs/heads/side is not a regular file" in p for p in problems), problems
    assert any("commondir sends git" in p for p in problems), problems
    (repo / ".git" / "objects" / "ff").mkdir(exist_ok=True)
    os.mkfifo(repo / ".git" / "objects" / "ff" / ("0" * 38))
    with pytest.raises(GitError, match="not a regular file"):
        RepoView(repo).__enter__()


def test_the_view_runs_nothing_the_repository_configures(tmp_path, repo):
    """Every program git could be told to run, configured in the repository: the view's diff,
    status, untracked files and reachability run none of them."""
    mark = tmp_path / "ran"
    (repo / "a.py").write_text("A = 3\n")
    _git(repo, "update-index", "--assume-unchanged", "a.py")  # (before the configuration: plain git obeys it)
    prog = repo / ".git" / "prog"
    prog.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {mark}\ncat\n")
    prog.chmod(0o755)
    for key, value in {"diff.external": prog, "filter.f.clean": prog, "filter.f.smudge": prog, "diff.t.textconv": prog,
                       "core.fsmonitor": prog, "core.hooksPath": repo / ".git" / "h", "core.pager": prog}.items():
        _git(repo, "config", key, str(value))
    (repo / ".git" / "h").mkdir()
    for hook in ("post-index-change", "reference-transaction", "post-checkout"):
        (repo / ".git" / "h" / hook).write_text(prog.read_text())
        (repo / ".git" / "h" / hook).chmod(0o755)
    (repo / ".gitattributes").write_text("*.py filter=f diff=t\n")
    (repo / "new.py").write_text("N\n")
    with RepoView(repo) as view:
        diff = view.working_diff()
        changed = view.changed_paths(view.head)
        view.reachable(ref_tips(repo)[0])
    assert not mark.exists(), mark.read_text()
    assert "+A = 3" in diff and "+N" in diff  # index flags are not read: the change shows
    assert changed == [".gitattributes", "a.py", "new.py"]


def test_safefs_never_follows_a_planted_link(tmp_path):
    root = tmp_path / "tree"
    outside = tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret").write_text("host file\n")
    os.symlink(outside, root / "d" / "link")
    os.symlink(outside / "secret", root / "d" / "file")
    assert safefs.read_file(root, "d/file") is None
    assert safefs.read_file(root, "d/link/secret") is None
    safefs.write_file(root, "d/file", b"mine\n")  # replaces the link, writes nothing through it
    assert (outside / "secret").read_text() == "host file\n" and (root / "d" / "file").read_bytes() == b"mine\n"
    with pytest.raises(safefs.Unsafe):
        safefs.write_file(root, "d/link/x", b"x")
    safefs.write_file(root, "d/link/x", b"x", replace_dirs=True)  # the link becomes a directory of ours
    assert not (outside / "x").exists() and (root / "d" / "link" / "x").read_bytes() == b"x"
    os.mkfifo(root / "fifo")
    assert safefs.read_file(root, "fifo") is None  # a FIFO is not read (and nothing blocks)
    (root / "big").write_bytes(b"x" * 100)
    with pytest.raises(safefs.TooLarge):
        safefs.read_file(root, "big", limit=10)
