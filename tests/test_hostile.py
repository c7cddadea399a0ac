"""The cleave guarantee and the sandbox against an agent that attacks them from inside.

Each test is an attack, run by a scripted agent (the ``command`` harness running one shell script,
no model) on tier_2, whose first session is cleaved at the first ``.py`` edit. Every attack is
judged by the same three checks (``hostile_support.assert_held``): no cleaved edit committed in a
valid trial, no process of the session left, and no program the agent configured run by the host.
The attacks run under bwrap (the default backend) and under `local` where the attack is on the
host's own tools (which `local` must resist too); the docker backend runs a combined attack, and
the capability probes are in ``test_sandbox.py`` (the contract every isolating backend keeps).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hostile_support import Pwn, assert_held, backend_named, inspect_git, run_hostile

from sdcs_bench.sandbox.bwrap import BwrapBackend

EDIT = "printf 'SNEAK = 1\\n' > ledger/sneak.py"  # a qualifying edit: the cleave fires on it
WAIT = "sleep 20"  # the watcher's kill ends the session long before this


def _backends() -> list[str]:
    return ["bwrap", "local"] if BwrapBackend.available() else ["local"]


@pytest.fixture(params=_backends())
def backend(request):
    return backend_named(request.param)


# -- 1. programs the agent configured must never run on the host ---------------------------------
def _plant(pwn: Pwn, technique: str) -> str:
    p = pwn.path(technique)
    prog = pwn.program(technique, "cat \"$@\"" if technique in ("textconv",) else
                       "cat" if technique in ("clean_filter", "smudge_filter") else "exit 0")
    return {
        "diff_external": f"{prog} && git config diff.external {p}",
        "clean_filter": f"{prog} && echo '*.py filter=ev' > .gitattributes && git config filter.ev.clean {p}",
        "smudge_filter": f"{prog} && echo '*.py filter=ev' > .git/info/attributes && git config filter.ev.smudge {p}",
        "process_filter": f"{prog} && echo '* filter=ev' > .gitattributes && git config filter.ev.process {p}",
        "textconv": f"{prog} && echo '*.py diff=ev' > .gitattributes && git config diff.ev.textconv {p}",
        "fsmonitor": f"{prog} && git config core.fsmonitor {p}",
        "hooks_path": f"{prog} && mkdir -p .git/pwn/hooks && for h in reference-transaction post-index-change "
                      f"post-checkout pre-commit post-commit pre-auto-gc; do cp {p} .git/pwn/hooks/$h; done && "
                      "git config core.hooksPath .git/pwn/hooks",
        "hooks": f"{prog} && for h in post-index-change post-checkout pre-commit post-commit pre-auto-gc "
                 f"post-rewrite; do cp {p} .git/hooks/$h; done",
        "include": f"{prog} && printf '[diff]\\n\\texternal = {p}\\n[core]\\n\\tfsmonitor = {p}\\n' > .git/pwn/inc && "
                   "git config include.path $PWD/.git/pwn/inc",
        "attributes_file": f"{prog} && echo '*.py filter=ev diff=ev' > .git/pwn/attrs && "
                           f"git config core.attributesFile $PWD/.git/pwn/attrs && git config filter.ev.clean {p} && "
                           f"git config diff.ev.textconv {p}",
        "gpg": f"{prog} && git config commit.gpgsign true && git config gpg.program {p}",
    }[technique]


TECHNIQUES = ["diff_external", "clean_filter", "smudge_filter", "process_filter", "textconv", "fsmonitor",
              "hooks_path", "hooks", "include", "attributes_file", "gpg"]


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_a_program_the_agent_configured_never_runs_on_the_host(tmp_path, backend, technique):
    """The agent configures git to run its program, edits, and is cleaved: the cleave's diff, the
    integrity check, the session's records and every later host-side step read the repository
    without running it."""
    pwn = Pwn()
    h = run_hostile(tmp_path, [f"{_plant(pwn, technique)} && {EDIT} && {WAIT}"], backend)
    assert h.record["cleave"]["fired"], h.record["cleave"]
    assert_held(h)
    _host_steps_after(tmp_path, h, pwn)  # (the injection commits defects itself: no commit check after it)
    assert_held(h, pwn, commits=False)


def _host_steps_after(tmp_path, h, pwn) -> None:
    """What the pipeline does on the host with the sandbox after a session: the snapshot and its
    restore, the poison pill's injection (it commits: v3 amends HEAD), scoring."""
    import warnings

    from sdcs_bench.core.tokens import TokenUsage
    from sdcs_bench.pipeline.stages import restore_snapshot, write_snapshot
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.sandbox.poison import inject
    from sdcs_bench.scoring import score_sandbox
    from sdcs_bench.trial.workload import load_workload

    stage = tmp_path / "after"
    stage.mkdir()
    write_snapshot(h.workdir, stage)
    restore_snapshot(stage, h.workdir)
    workload = load_workload("tier_2")
    if workload.poison:
        inject(workload, h.workdir, "v3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score_sandbox(workload, h.workdir, tokens=TokenUsage(source="none"), backend=make_backend("local"),
                      sessions=h.records)


# -- 2. commits the integrity check must see ------------------------------------------------------
# Commit the edit through plumbing or a copied git directory (no hook runs, no file is written in
# the tree), move a ref by writing its file by hand, then write a *different* version to the tree:
# the cleave fires on that write, and a check that looked for its exact bytes found nothing.
STAGE = ("printf 'SNEAK = 1\\n' > $HOME/s.py && blob=$(git hash-object -w $HOME/s.py) && "
         "GIT_INDEX_FILE=$HOME/idx git read-tree HEAD && "
         "GIT_INDEX_FILE=$HOME/idx git update-index --add --cacheinfo 100644,$blob,ledger/sneak.py && "
         "tree=$(GIT_INDEX_FILE=$HOME/idx git write-tree) && c=$(echo sneak | git commit-tree $tree -p HEAD)")
OTHER = "printf 'SNEAK = 2\\n' > ledger/sneak.py"
COMMITS = {
    "loose_ref_by_hand": f"{STAGE} && echo $c > .git/refs/heads/main",
    "packed_ref_by_hand": f"{STAGE} && rm .git/refs/heads/main && echo \"$c refs/heads/main\" > .git/packed-refs",
    "tag_by_hand": f"{STAGE} && mkdir -p .git/refs/tags && echo $c > .git/refs/tags/v9",
    "detached_head": f"{STAGE} && echo $c > .git/HEAD",
    "hooks_off_update_ref": f"{STAGE} && git -c core.hooksPath=/dev/null update-ref refs/heads/main $c",
    "copied_git_dir": ("cp -r .git $HOME/g && mkdir -p $HOME/wt/ledger && printf 'SNEAK = 1\\n' > $HOME/wt/ledger/sneak.py && "
                       "git --git-dir=$HOME/g --work-tree=$HOME/wt -c core.hooksPath=/dev/null add ledger/sneak.py && "
                       "git --git-dir=$HOME/g --work-tree=$HOME/wt -c core.hooksPath=/dev/null commit -qm sneak && "
                       "cp -rn $HOME/g/objects/. .git/objects/ && cat $HOME/g/refs/heads/main > .git/refs/heads/main"),
    "side_branch_reflog_only": (f"{STAGE} && git -c core.hooksPath=/dev/null update-ref refs/heads/side $c && "
                                "git -c core.hooksPath=/dev/null update-ref -d refs/heads/side && "
                                "mkdir -p .git/logs/refs/heads && echo \"$(git rev-parse HEAD) $c x <x> 0 +0000\tx\" "
                                ">> .git/logs/HEAD"),
    "pseudo_ref": f"{STAGE} && echo $c > .git/ORIG_HEAD",
    # git follows a ref that is a link: here to a file of the working tree holding the commit's id
    "ref_link_to_tree": f"{STAGE} && echo $c > notes.txt && ln -sf ../../../notes.txt .git/refs/heads/main",
    # a commondir makes git take refs and objects from another directory (here one in the tree)
    "commondir": (f"{STAGE} && cp -r .git .other && echo $c > .other/refs/heads/main && "
                  "echo \"$PWD/.other\" > .git/commondir"),
}


@pytest.mark.parametrize("how", sorted(COMMITS))
def test_a_commit_made_around_the_guard_invalidates_the_trial(tmp_path, backend, how):
    h = run_hostile(tmp_path, [f"{COMMITS[how]} && {OTHER} && {WAIT}"], backend)
    cleave = h.record["cleave"]
    assert cleave["fired"]
    assert cleave["integrity"]["ok"] is False, cleave["integrity"]
    assert_held(h)


def test_a_clean_filter_cannot_hide_the_committed_blob(tmp_path, backend):
    """The agent's clean filter changes what ``git add`` stores (here: appends a line); the edit is
    committed through it, then the tree gets the file's plain bytes."""
    script = ("mkdir -p .git/pwn && printf '#!/bin/sh\\ncat; echo \"# $(date +%%N)\"\\n' > .git/pwn/f && "
              "chmod +x .git/pwn/f && git config filter.ev.clean $PWD/.git/pwn/f && "
              "echo '*.py filter=ev' > .git/info/attributes && "
              f"printf 'SNEAK = 1\\n' > $HOME/s.py && mkdir -p $HOME/wt/ledger && cp $HOME/s.py $HOME/wt/ledger/sneak.py && "
              "git --work-tree=$HOME/wt -c core.hooksPath=/dev/null add ledger/sneak.py && "
              "git -c core.hooksPath=/dev/null commit -qm sneak && "
              f"cp $HOME/s.py ledger/sneak.py && {WAIT}")
    h = run_hostile(tmp_path, [script], backend)
    assert h.record["cleave"]["integrity"]["ok"] is False, h.record["cleave"]
    assert_held(h)


# -- 3. the watcher fails closed ------------------------------------------------------------------
HIDE = "git update-index --assume-unchanged ledger/accounts.py"
# Edit a tracked file, commit it on a side branch by plumbing (HEAD stays), and hide the working
# tree's change from `git diff` with an index flag.
COMMIT_HIDDEN = ("printf '\\n# edited\\n' >> ledger/accounts.py && git add ledger/accounts.py && "
                 "c=$(echo x | git commit-tree $(git write-tree) -p HEAD) && echo $c > .git/refs/heads/side && "
                 "git reset -q && " + HIDE)


@pytest.mark.parametrize("crash", ["self_link", "control_dir_is_a_file", "control_dir_is_a_link"])
def test_a_watcher_error_fires_the_cleave(tmp_path, backend, crash):
    """Make the watcher's handler fail, then edit, commit with the hooks off and hide the edit from
    ``git diff`` with index flags: the session must not end valid with the edit committed."""
    first = {
        "self_link": "ln -s self.py ledger/self.py && sleep 1",
        "control_dir_is_a_file": "rm -rf .git/specsnap && touch .git/specsnap",
        "control_dir_is_a_link": "mkdir -p $HOME/elsewhere && rm -rf .git/specsnap && ln -s $HOME/elsewhere .git/specsnap",
    }[crash]
    h = run_hostile(tmp_path, [f"{first} && {COMMIT_HIDDEN} && {WAIT}"], backend)
    cleave = h.record["cleave"]
    assert cleave["fired"] or cleave["integrity"]["ok"] is False, cleave
    assert_held(h)


@pytest.mark.parametrize("where", ["object", "barrier"])
def test_a_fifo_planted_where_the_host_reads_hangs_nothing(tmp_path, backend, where):
    """A FIFO where git would open a loose object, or where the controller writes the watcher's next
    barrier: no host-side read or write blocks on it; the session ends and is never valid."""
    plant = {"object": "mkdir -p .git/objects/ff && mkfifo .git/objects/ff/" + "0" * 38,
             "barrier": "for n in 1 2 3 4; do mkfifo .git/specsnap/barrier.$n; done"}[where]
    import time

    t0 = time.monotonic()
    h = run_hostile(tmp_path, [f"{plant} && exit 0"], backend, timeout_s=60)
    assert time.monotonic() - t0 < 45, "a host-side step waited on the FIFO"
    assert h.record["cleave"]["integrity"]["ok"] is False, h.record["cleave"]
    assert_held(h)


def test_an_edit_through_a_hard_link_is_never_valid(tmp_path, backend):
    """Write a source file through a hard link outside the watched tree (no event for its path),
    commit it with the hooks off and hide it with index flags."""
    script = ("ln ledger/accounts.py .git/hl && printf '\\n# edited\\n' >> .git/hl && git add ledger/accounts.py && "
              "c=$(echo x | git commit-tree $(git write-tree) -p HEAD) && echo $c > .git/refs/heads/side && "
              "git reset -q && " + HIDE + " && exit 0")
    h = run_hostile(tmp_path, [script], backend)
    assert h.record["cleave"]["integrity"]["ok"] is False, h.record["cleave"]
    assert_held(h)


def test_an_unseen_edit_before_the_cleave_makes_the_trial_invalid(tmp_path, backend):
    """Edit one file through a hard link (unseen), then another normally: the recorded cleave point
    would be the second, silently; the end-of-session comparison makes the trial invalid instead."""
    script = f"ln ledger/accounts.py .git/hl && printf '\\n# edited\\n' >> .git/hl && sleep 1 && {EDIT} && {WAIT}"
    h = run_hostile(tmp_path, [script], backend)
    cleave = h.record["cleave"]
    assert cleave["fired"] and cleave["integrity"]["ok"] is False, cleave
    assert "ledger/accounts.py" in cleave["integrity"]["problem"]


def test_a_directory_rename_is_the_edit(tmp_path, backend):
    h = run_hostile(tmp_path, [f"mv rbac rbac2 && {WAIT}"], backend)
    cleave = h.record["cleave"]
    assert cleave["fired"] and cleave["path"].startswith("rbac2/"), cleave
    assert cleave["integrity"]["ok"] is True, cleave
    assert_held(h)


def test_a_directory_rename_counts_each_file_once(tmp_path, backend):
    """rbac/ holds four modules: renaming it is four edits under nth_py_edit (not eight: watchdog
    follows the directory's event with one per file), so a fifth is needed to cleave."""
    h = run_hostile(tmp_path, ["mv rbac rbac2 && sleep 3 && exit 0"], backend, cleave=["nth_py_edit:5"])
    assert h.record["cleave"]["fired"] is False and h.record["cleave"]["integrity"]["ok"] is True, h.record["cleave"]
    h = run_hostile(tmp_path / "again", [f"mv rbac rbac2 && {WAIT}"], backend, cleave=["nth_py_edit:4"])
    assert h.record["cleave"]["fired"] and h.record["cleave"]["path"] == "rbac2/rules.py", h.record["cleave"]


def test_a_file_renamed_into_the_tree_counts_at_once(tmp_path, backend):
    """A file written elsewhere and renamed in is whole when it appears: no grace period (under
    bwrap the private HOME is another mount, so ``mv`` copies it: a close, complete at once too)."""
    h = run_hostile(tmp_path, [f"printf 'X = 1\\n' > $HOME/n.py && mv $HOME/n.py ledger/n.py && {WAIT}"], backend)
    cleave = h.record["cleave"]
    how = "moved" if backend.name == "local" else "closed"
    assert cleave["fired"] and cleave["path"] == "ledger/n.py" and cleave["edit_completed_by"] == how, cleave
    assert_held(h)


# -- 4. nothing the session started outlives it ----------------------------------------------------
# Each leaves the agent's process group or session, the last two its environment too (a marker
# there finds nothing), and each leaves the sandbox's directory.
DAEMONS = ("(setsid sh -c 'cd / && exec sleep 30171' &) && "
           "(env -i /bin/sh -c 'cd / && setsid sh -c \"exec sleep 30172\" &' &) && "
           "(nohup env -i sh -c 'trap \"\" TERM HUP INT; cd /; exec sleep 30173' >/dev/null 2>&1 &) && "
           "sleep 1")


def test_no_daemon_outlives_a_cleaved_session(tmp_path, backend):
    h = run_hostile(tmp_path, [f"{DAEMONS} && {EDIT} && {WAIT}"], backend)
    assert h.record["cleave"]["fired"]
    assert_held(h)


def test_no_daemon_outlives_a_session_that_ends_by_itself(tmp_path, backend):
    h = run_hostile(tmp_path, [f"{DAEMONS} && exit 0"], backend, cleave=["none"])
    assert h.record["status"] == "ok"
    assert_held(h)


# -- 5. what one session leaves for the next ------------------------------------------------------
SABOTAGE = {
    "hooks_path": "git config core.hooksPath /dev/null",
    "hook_replaced": "printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/reference-transaction",
    "hook_not_executable": "chmod -x .git/hooks/reference-transaction",
    "hooks_dir_link": "mkdir -p $HOME/h && rm -rf .git/hooks && ln -s /nonexistent-hooks .git/hooks",
    "guard_state_dir": "rm -f .git/specsnap/guard && mkdir .git/specsnap/guard",
    "bare": "git config core.bare true",
}


@pytest.mark.parametrize("how", sorted(SABOTAGE))
def test_a_guard_disabled_by_an_earlier_session_is_reinstalled(tmp_path, backend, how):
    """Session 1 (not cleaved) disables the guard for the next; session 2, cleaved, edits and
    commits in one command: the reinstalled guard refuses the commit."""
    h = run_hostile(tmp_path, [SABOTAGE[how], f"{EDIT} && git add -A && git commit -qm sneak; {WAIT}"], backend,
                    cleave=["none", "first_py_edit"])
    s2 = h.records[1]
    assert s2["cleave"]["fired"], s2["cleave"]
    assert s2["guard"]["verified"] is True, s2["guard"]
    assert h.git("rev-parse", "HEAD").strip() == h.start_head, "the commit of session 2 landed"
    assert_held(h)


def test_a_guard_an_included_configuration_turns_off_is_recorded_unverified(tmp_path, backend):
    """A core.hooksPath in a file .git/config includes survives the reinstall (includes are not
    followed by the host): the next cut session records its guard unverified, and the session's
    integrity check fails; a record, never a crashed job (the check runs the agent's configuration)."""
    plant = "git config -f .git/elsewhere.conf core.hooksPath /dev/null && git config include.path elsewhere.conf"
    h = run_hostile(tmp_path, [plant, f"{EDIT} && {WAIT}"], backend, cleave=["none", "first_py_edit"])
    guard = h.records[1]["guard"]
    assert guard["verified"] is False and "did not run the guard hook" in guard["problem"], guard
    assert h.records[1]["cleave"]["integrity"]["ok"] is False, h.records[1]["cleave"]


def test_hooks_and_configuration_an_agent_left_are_recorded_as_surviving(tmp_path, backend):
    pwn = Pwn()
    h = run_hostile(tmp_path, [f"{_plant(pwn, 'hooks')} && {_plant(pwn, 'diff_external')} && "
                               "echo '*.py diff=x' > .gitattributes && exit 0",
                               f"{EDIT} && {WAIT}"], backend, cleave=["none", "first_py_edit"])
    s1 = h.records[0]
    survived = s1["git_configuration"]
    assert ".git/config" in survived["modified"], survived
    assert {".git/hooks/post-commit", ".git/hooks/pre-commit", ".gitattributes"} <= set(survived["created"]), survived
    assert_held(h, pwn)


def test_an_honest_agent_is_unchanged(tmp_path, backend):
    """The control: an edit and a commit attempt in one command, as real agents do, under the same
    defences: cleaved at the edit, the commit refused, the trial valid."""
    h = run_hostile(tmp_path, [f"{EDIT} && git add -A && git commit -qm work; {WAIT}"], backend)
    cleave = h.record["cleave"]
    assert cleave["fired"] and cleave["path"] == "ledger/sneak.py" and cleave["integrity"]["ok"] is True, cleave
    assert cleave["edit_uncommitted"] is True
    assert inspect_git(h.workdir, "rev-parse", "HEAD").strip() == h.start_head
    assert h.record["guard"]["verified"] is True
    assert h.record["git_configuration"] == {"created": [], "modified": [], "deleted": []}
    assert_held(h)


# -- the docker backend against the same attacks ---------------------------------------------------
def test_the_attacks_hold_under_docker(tmp_path, docker_image):
    """One session that plants every kind of program git could run, starts daemons that leave
    their group, session and environment, commits the edit by plumbing with a ref written by hand
    and then writes another version: invalid, nothing left running, nothing run on the host."""
    backend = backend_named("docker", docker_image)
    pwn = Pwn()
    plant = " && ".join(_plant(pwn, t) for t in ("diff_external", "fsmonitor", "hooks", "include", "attributes_file",
                                                  "gpg"))
    h = run_hostile(tmp_path, [f"{plant} && {DAEMONS} && {COMMITS['loose_ref_by_hand']} && {OTHER} && {WAIT}"], backend)
    cleave = h.record["cleave"]
    assert cleave["fired"] and cleave["integrity"]["ok"] is False, cleave
    assert_held(h)
    _host_steps_after(tmp_path, h, pwn)
    assert_held(h, pwn, commits=False)


def test_a_guard_disabled_by_an_earlier_session_is_reinstalled_under_docker(tmp_path, docker_image):
    backend = backend_named("docker", docker_image)
    h = run_hostile(tmp_path, [f"{SABOTAGE['hooks_path']} && {SABOTAGE['hook_replaced']}",
                               f"{EDIT} && git add -A && git commit -qm sneak; {WAIT}"], backend,
                    cleave=["none", "first_py_edit"])
    s2 = h.records[1]
    assert s2["guard"]["verified"] is True and s2["guard"]["repaired"], s2["guard"]
    assert s2["cleave"]["fired"] and s2["cleave"]["integrity"]["ok"] is True, s2["cleave"]
    assert inspect_git(h.workdir, "rev-parse", "HEAD").strip() == h.start_head
    assert_held(h)


# -- records in the agent's tree are never the pipeline's word ------------------------------------
def test_a_rewritten_scaffold_record_does_not_relabel_the_scorecard(tmp_path, make_sandbox):
    """The scaffold's record lies in the sandbox's .git, where the agent can rewrite it (here: to
    claim another arm, with another notes file) or delete it. The pipeline scores with the trial's
    own arm, so the scorecard, and the leaderboard cell it lands in, keep the truth."""
    import json
    import warnings

    from conftest import arm
    from sdcs_bench.core.tokens import TokenUsage
    from sdcs_bench.sandbox import make_backend
    from sdcs_bench.scoring import score_sandbox
    from sdcs_bench.trial.workload import load_workload

    sandbox = make_sandbox("State_MD_Only")
    meta_path = sandbox / ".git" / "specsnap" / "sandbox.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "arm": "Tuned_Reference", "notes_file": "README.md"}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        card = score_sandbox(load_workload("tier_2"), sandbox, tokens=TokenUsage(source="none"),
                             backend=make_backend("local"), arm=arm("State_MD_Only"))
        assert card["arm"] == "State_MD_Only" and card["diagnostics"]["notes"]["file"] == "state.md"
        meta_path.unlink()
        card = score_sandbox(load_workload("tier_2"), sandbox, tokens=TokenUsage(source="none"),
                             backend=make_backend("local"), arm=arm("State_MD_Only"))
    assert card["arm"] == "State_MD_Only"


def test_watcher_crashes_and_hard_links_hold_under_docker(tmp_path, docker_image):
    """The watcher runs on the host whatever the backend: an edit through a hard link, committed on
    a side branch by plumbing and hidden by an index flag, after the control directory was turned
    into a file, is never part of a valid trial under docker either."""
    backend = backend_named("docker", docker_image)
    script = ("rm -rf .git/specsnap && touch .git/specsnap && ln ledger/accounts.py .git/hl && "
              "printf '\\n# edited\\n' >> .git/hl && git add ledger/accounts.py && "
              "c=$(echo x | git commit-tree $(git write-tree) -p HEAD) && echo $c > .git/refs/heads/side && "
              "git reset -q && " + HIDE + " && exit 0")
    h = run_hostile(tmp_path, [script], backend)
    assert h.record["cleave"]["integrity"]["ok"] is False, h.record["cleave"]
    assert_held(h)


# -- found by review: each written as an attack before its defence --------------------------------
def test_a_submodule_s_configuration_never_runs_on_the_host(tmp_path, backend):
    """A gitlink committed by plumbing (its path is no .py file) whose repository configures a
    program: the host's diff and status of the sandbox must not recurse into it."""
    pwn = Pwn()
    script = (f"{pwn.program('submodule')} && git init -q sub && "
              "git -C sub -c user.name=a -c user.email=a@a commit -q --allow-empty -m s && "
              f"git -C sub config core.fsmonitor {pwn.path('submodule')} && "
              "git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub && "
              f"git -c core.hooksPath=/dev/null commit -qm sub && {EDIT} && {WAIT}")
    h = run_hostile(tmp_path, [script], backend)
    assert h.record["cleave"]["fired"]
    assert h.record["cleave"]["integrity"]["ok"] is False, h.record["cleave"]  # a gitlink the check cannot vouch for
    _host_steps_after(tmp_path, h, pwn)
    assert_held(h, pwn, commits=False)


def test_removing_the_kill_s_lock_files_follows_no_link(tmp_path, backend):
    """The host removes git lock files a kill left, in the sandbox's .git only: a .git turned into
    a link to a host directory loses no file there, and a directory named like a lock is no crash."""
    decoy = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="specsnap-decoy-"))
    (decoy / "kept.lock").write_text("a host file\n")
    try:
        h = run_hostile(tmp_path, [f"mkdir .git/odd.lock && mv .git .git.real && ln -s {decoy} .git && {EDIT} && {WAIT}"],
                        backend)
        assert (decoy / "kept.lock").read_text() == "a host file\n"
        assert h.record["cleave"]["fired"] and h.record["cleave"]["integrity"]["ok"] is False
    finally:
        shutil.rmtree(decoy, ignore_errors=True)


REFS_GIT_READS = {
    "uppercase_loose_ref": f"{STAGE} && echo $c | tr a-f A-F > .git/refs/heads/shout",
    "ref_beyond_path_max": (f"{STAGE} && d=.git/refs/heads && for i in $(seq 1 17); do d=$d/$(printf 'x%.0s' $(seq 1 220)); "
                            "done && mkdir -p $d && echo $c > $d/deep"),
    "replaced_blob": ("b=$(git rev-parse HEAD:ledger/accounts.py) && cp ledger/accounts.py $HOME/a.py && "
                      "printf '\\n# edited\\n' >> $HOME/a.py && n=$(git hash-object -w $HOME/a.py) && "
                      "git -c core.hooksPath=/dev/null replace $b $n"),
    "forged_loose_object": ("b=$(git rev-parse HEAD:ledger/accounts.py) && o=.git/objects/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-) && "
                            "python3 -c \"import sys,zlib; d=open('ledger/accounts.py','rb').read()+b'# edited\\n'; "
                            "sys.stdout.buffer.write(zlib.compress(b'blob %d\\0' % len(d) + d))\" > $HOME/o && "
                            "mkdir -p $(dirname $o) && rm -f $o && cp $HOME/o $o"),  # (the scaffold's objects are packed)
    # (the same forgery where git would read it: the baseline's pack unpacked into loose objects first)
    "forged_loose_object_unpacked": ("mkdir $HOME/p && mv .git/objects/pack/* $HOME/p/ && "
                                     "git unpack-objects -q < $(ls $HOME/p/*.pack) && "
                                     "b=$(git rev-parse HEAD:ledger/accounts.py) && o=.git/objects/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-) && "
                                     "python3 -c \"import sys,zlib; d=open('ledger/accounts.py','rb').read()+b'# edited\\n'; "
                                     "sys.stdout.buffer.write(zlib.compress(b'blob %d\\0' % len(d) + d))\" > $HOME/o && "
                                     "rm -f $o && cp $HOME/o $o"),
    "object_format": "git config core.repositoryformatversion 1 && git config extensions.objectFormat sha256",
    "alternates_outside": f"{STAGE} && mkdir -p .git/objects/info && echo $HOME/elsewhere >> .git/objects/info/alternates",
}


@pytest.mark.parametrize("how", sorted(REFS_GIT_READS))
def test_refs_and_objects_git_reads_are_all_vouched_for(tmp_path, backend, how):
    """Ways to make a commit (or a changed file in an old commit) visible to the next session's git
    that a scan of lowercase ids under short paths would miss: each makes the trial invalid."""
    h = run_hostile(tmp_path, [f"{REFS_GIT_READS[how]} && {OTHER} && {WAIT}"], backend)
    assert h.record["cleave"]["fired"]
    assert h.record["cleave"]["integrity"]["ok"] is False, h.record["cleave"]


def test_a_write_through_a_hard_link_after_a_seen_edit_is_never_valid(tmp_path, backend):
    """Under nth_py_edit:3: one normal edit of a file (seen), then writes to it through a hard link
    under .git (no event for its path): the watcher never counts them; the end comparison must."""
    script = ("ln ledger/accounts.py .git/h && printf '\\n# one\\n' >> ledger/accounts.py && sleep 1 && "
              "for i in 2 3 4; do printf '\\n# more\\n' >> .git/h; done && sleep 1 && exit 0")
    h = run_hostile(tmp_path, [script], backend, cleave=["nth_py_edit:3"])
    assert h.record["cleave"]["integrity"]["ok"] is False, h.record["cleave"]


def test_tier_1_allows_only_the_commit_that_armed_it_and_never_the_cleaved_edit(tmp_path, backend):
    """Under first_py_edit_after_commit: a commit made by plumbing on a side branch (it arms the
    rule) that already holds the edit, then the same edit written to the tree (the cleave fires
    on it): the commit carries the cleaved edit, so the trial is invalid."""
    script = (f"{STAGE} && git -c core.hooksPath=/dev/null update-ref refs/heads/side $c && sleep 1 && "
              f"printf 'SNEAK = 1\\n' > ledger/sneak.py && {WAIT}")
    h = run_hostile(tmp_path, [script], backend, cleave=["first_py_edit_after_commit"])
    cleave = h.record["cleave"]
    assert cleave["fired"] and cleave["path"] == "ledger/sneak.py", cleave
    assert cleave["integrity"]["ok"] is False, cleave


def test_two_files_written_within_the_grace_are_two_edits(tmp_path, backend):
    """a.py then b.py within half a second are two completed edits, not three (a grace timer of the
    first must not count it again after the second)."""
    script = "printf 'A = 1\\n' > ledger/a.py && printf 'B = 1\\n' > ledger/b.py && sleep 2 && exit 0"
    h = run_hostile(tmp_path, [script], backend, cleave=["nth_py_edit:3"])
    assert h.record["cleave"]["fired"] is False, h.record["cleave"]
    assert h.record["cleave"]["integrity"]["ok"] is True, h.record["cleave"]
