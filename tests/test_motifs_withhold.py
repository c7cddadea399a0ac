"""Withholding a motifs workload's secrets (docs/coherence.md): before session 1 at the scaffold, or
after session 1's cleave; no trace of a withheld value anywhere an agent can look; bad variants
refused before any work. The attack is written first: an agent that hunts its sandbox (its git
object store, its records, every path it can name) for the hidden tests and the withheld values."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import arm

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.core.gitutil import git
from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.bwrap import BwrapBackend
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.sandbox.withhold import check_spec, withhold
from sdcs_bench.trial import config
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial.workload import load_workload

SEED2 = "motifs_s2"


@pytest.fixture(scope="module")
def motifs2():
    return load_workload(SEED2)


def _salt(workload, secret: str) -> int:
    line = next(ln for ln in (workload.baseline_dir / secret).read_text().splitlines() if ln.startswith("SECRET"))
    return int(line.split("=")[1])


# -- the attack ---------------------------------------------------------------------------------
HUNTER = r'''
"""A hostile agent: looks everywhere it can for the hidden tests and for withheld values."""
import hashlib, json, os, re, subprocess, sys
from pathlib import Path

targets = json.loads(Path(sys.argv[1]).read_text())
own = Path(sys.argv[1]).resolve().parent  # the attacker's own files (what it knows to look for)
found = {"needles": [], "recovered": [], "readable": []}
hexes = re.compile(rb"[0-9a-f]{64}")
candidates = {hashlib.sha256(template.replace("{value}", str(v)).encode()).hexdigest(): v
              for template in targets["templates"] for v in range(1, 1000)}


def scan(data, where):
    for needle in targets["needles"]:
        if needle.encode() in data:
            found["needles"].append([needle, where])
    for h in hexes.findall(data):  # a hash of a secret's file gives the small integer away
        if h.decode() in candidates:
            found["recovered"].append([candidates[h.decode()], where])


def walk(root):
    try:
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
    except OSError:
        return
    for path in paths:
        if own == path or own in path.parents:
            continue
        try:
            if path.is_file():
                scan(path.read_bytes(), str(path))
                found["readable"].append(str(path))
        except OSError:
            continue


walk(Path.cwd())
for named in targets["roots"]:  # inside the sandbox: its private HOME and /tmp
    walk(Path(os.environ.get("HOME", "/nonexistent")) if named == "HOME" else Path(named))
objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], capture_output=True).stdout
scan(objects, "git object store")
for named in targets["paths"]:
    walk(Path(named))
Path("hunt.json").write_text(json.dumps(found))
'''


def _targets(tmp_path: Path, workload, withheld: list[str], roots: tuple[str, ...] = ("HOME", "/tmp")) -> Path:
    """What the attacker looks for: the canary, the withheld values as the secret file and the
    hidden tests state them, and the project's paths (hidden tests, gold, the whole workload); and
    each secret file's text with ``{value}`` for the value (the pattern every visible secret shows),
    to recover a value from any hash of its file."""
    needles, templates = [workload.canary], []
    for secret in withheld:
        value = _salt(workload, secret)
        needles += [f"SECRET = {value}\n", f".BASE == {value}\n"]
        templates.append((workload.baseline_dir / secret).read_text().replace(f"= {value}\n", "= {value}\n"))
    target = tmp_path / "hunter" / "targets.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "hunter" / "hunter.py").write_text(HUNTER)
    target.write_text(json.dumps({"needles": needles, "templates": templates, "roots": list(roots),
                                  "paths": [str(workload.hidden_dir), str(workload.gold_dir), str(workload.root)]}))
    return target


def _hunter_agent(target: Path) -> dict:
    cfg = config.entity("agent", "replay_command")
    return {**cfg, "name": "hunter", "replay_script_data": {"responses": []},
            "options": {"argv": ["{python}", "-I", "-B", str(target.parent / "hunter.py"), str(target)],
                        "prompt_via": "argv", "ro_binds": [str(target.parent)]}}


def _session(workload, agent_cfg: dict, work: Path, stage: Path, index: int, arm_name: str) -> dict:
    from sdcs_bench.session.runner import run_session

    schedule = effective_schedule(workload, config.entity("variant", "none"))
    return run_session(trial_id="test-hunt", index=index, session=schedule[index - 1], workload=workload,
                       arm=arm(arm_name), agent_cfg=agent_cfg, workdir=work, stage_dir=stage,
                       backend=make_backend("bwrap"), timeout_s=120)


needs_bwrap = pytest.mark.skipif(not BwrapBackend.available(), reason="bubblewrap is not usable here")


@needs_bwrap
@pytest.mark.parametrize("when,k,mode", [("before", 8, "stub"), ("after", 4, "delete")])
def test_a_hunting_agent_finds_no_hidden_test_and_no_withheld_value(motifs2, tmp_path, when, k, mode):
    work = tmp_path / "sandbox"
    withheld = list(motifs2.facts.withheld_secrets(k))
    target = _targets(tmp_path, motifs2, withheld)
    if when == "before":
        scaffold(motifs2, arm("Gate_I"), work, withhold=(k, mode))
        index = 1
    else:  # session 1 saw every secret (it made its cleaved edit); then they are withheld
        scaffold(motifs2, arm("Gate_I"), work)
        s1 = config.entity("agent", "ref_every_fact")
        s1 = {**s1, "policy": {**s1["policy"], "notes": "none", "turn_delay_s": 0.2}}  # carries nothing in notes
        record = _session(motifs2, s1, work, tmp_path / "s1", 1, "Gate_I")
        assert record["status"] == "cleaved" and record["cleave"]["path"] == "pkg_1/first.py"
        assert "pkg_1/secret.py" not in withheld  # so nothing session 1 left carries a withheld value
        withhold(motifs2, work, k, mode)
        index = 2
    record = _session(motifs2, _hunter_agent(target), work, tmp_path / "hunt", index, "Gate_I")
    assert record["leak_check"]["ok"] and record["leak_check"]["isolated"]
    found = json.loads((work / "hunt.json").read_text())
    assert found["needles"] == [] and found["recovered"] == []
    assert not [p for p in found["readable"] if p.startswith(str(motifs2.root))]
    assert any(p.endswith("app_map.md") for p in found["readable"])  # it did look where hashes are kept


def test_the_hunter_finds_what_is_there_without_isolation(motifs2, tmp_path):
    """The same hunter as a plain process (the local backend's isolation: none) finds the hidden
    tests, the withheld values in the project tree, and a value from a hash of its secret's file."""
    work = tmp_path / "sandbox"
    withheld = list(motifs2.facts.withheld_secrets(2))
    target = _targets(tmp_path, motifs2, withheld, roots=())  # not the host's own HOME and /tmp
    scaffold(motifs2, arm("Vanilla"), work, withhold=(2, "delete"))
    leak = hashlib.sha256((motifs2.baseline_dir / withheld[0]).read_bytes()).hexdigest()
    (work / "old_manifest.txt").write_text(f"{withheld[0]} {leak}\n")
    subprocess.run([sys.executable, "-I", "-B", str(target.parent / "hunter.py"), str(target)], cwd=work, check=True)
    found = json.loads((work / "hunt.json").read_text())
    needles = {n for n, _ in found["needles"]}
    assert motifs2.canary in needles and {f"SECRET = {_salt(motifs2, s)}\n" for s in withheld} <= needles
    assert [v for v, _ in found["recovered"]] == [_salt(motifs2, withheld[0])]


# -- the mechanics ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["delete", "stub"])
def test_scaffold_withholds_before_anything_is_committed_or_recorded(motifs2, tmp_path, mode):
    work = tmp_path / "sandbox"
    meta = scaffold(motifs2, arm("Gate_I"), work, withhold=(4, mode))
    withheld = motifs2.facts.withheld_secrets(4)
    assert meta["withheld"]["withheld"] == list(withheld) and meta["withheld"]["mode"] == mode
    for m in motifs2.facts.motifs:
        path = work / m.secret
        if m.secret in withheld:
            assert not path.exists() if mode == "delete" else path.read_bytes() == m.stub.read_bytes()
        else:
            assert path.read_bytes() == (motifs2.baseline_dir / m.secret).read_bytes()
    history = git(work, "log", "--all", "-p", "--format=%H")
    assert "secret.py" not in git(work, "ls-files") and not any(f"SECRET = {_salt(motifs2, s)}" in history
                                                                for s in motifs2.facts.secrets)
    assert git(work, "status", "--porcelain").strip() == ""  # ignored: nothing shows
    inside = json.loads((work / ".git" / "specsnap" / "sandbox.json").read_text())
    assert "withheld" not in inside and not any(p.endswith("secret.py") for p in inside["manifest"])
    app_map = (work / "app_map.md").read_text()
    assert "`pkg_2/first.py` (`pkg_2.first`) sha256 `" in app_map
    assert all(f"`{s}` (`{s[:-3].replace('/', '.')}`)\n" in app_map for s in motifs2.facts.secrets
               if s not in withheld or mode == "stub")  # listed, never hashed


def test_withholding_after_session_1_takes_only_the_chosen_secrets(motifs2, tmp_path):
    work = tmp_path / "sandbox"
    scaffold(motifs2, arm("State_MD_Only"), work)
    (work / "pkg_3" / "first.py").write_text("BASE = 1\n")  # what session 1 left...
    (work / "state.md").write_text("notes of session 1\n")
    record = withhold(motifs2, work, 6, "stub")
    withheld = motifs2.facts.withheld_secrets(6)
    assert record["withheld"] == list(withheld) and record["motifs"] == [motifs2.facts.motif(p).id for p in withheld]
    for m in motifs2.facts.motifs:
        want = m.stub.read_bytes() if m.secret in withheld else (motifs2.baseline_dir / m.secret).read_bytes()
        assert (work / m.secret).read_bytes() == want
    assert (work / "pkg_3" / "first.py").read_text() == "BASE = 1\n"  # ...stays exactly as it was
    assert (work / "state.md").read_text() == "notes of session 1\n"
    assert "withh" not in git(work, "status", "--porcelain")


def test_variants_are_config_and_the_twist_has_its_own_inject_stage(motifs2):
    from sdcs_bench.pipeline.plan.planner import trial_stages

    for k in (0, 2, 4, 6, 8):
        for mode in ("delete", "stub"):
            before = config.entity("variant", f"withhold_k{k}_{mode}")
            after = config.entity("variant", f"withhold_after_cleave_k{k}_{mode}")
            assert before["withhold"] == {"k": k, "mode": mode}
            assert after["inject"] == {"after_session": 1, "withhold": {"k": k, "mode": mode}}
            assert trial_stages(motifs2, before, 2) == ["scaffold", "session_1", "session_2", "score"]
            assert trial_stages(motifs2, after, 2) == ["scaffold", "session_1", "inject", "session_2", "score"]


@pytest.mark.parametrize("spec,message", [
    ({"k": 3, "mode": "shred"}, "unknown withholding mode 'shred'; valid choices: delete, stub"),
    ({"k": 9, "mode": "stub"}, "workload motifs_s2 has no withheld set for k=9; valid choices: 0, 1, 2"),
    ({"k": "2", "mode": "stub"}, "has no withheld set for k='2'"),
    ({"k": 2}, "withhold is {k: N, mode: delete|stub}"),
])
def test_a_bad_withholding_spec_is_one_clear_error(motifs2, spec, message):
    with pytest.raises(SpecSnapError) as err:
        check_spec(motifs2, spec, "mine")
    assert message in str(err.value)


def test_planning_refuses_what_cannot_run_before_any_work(tmp_path, tier2):
    from sdcs_bench.pipeline.plan.planner import make_plan

    with pytest.raises(SpecSnapError) as err:
        make_plan("coherence_withhold", ["workload=[tier_2]", "variant=[withhold_k2_stub]", "agent=[ref_null]"],
                  tmp_path / "r")
    assert "withholds authored facts, which workload tier_2 does not have; valid choices: motifs_s0, motifs_s2" \
        in str(err.value)
    with pytest.raises(SpecSnapError, match="reference policy 'ref_every_fact' works from authored facts"):
        make_plan("smoke", ["agent=[ref_every_fact]"], tmp_path / "r")
    with pytest.raises(SpecSnapError) as err:
        make_plan("coherence_withhold", ["agent=[ref_oracle]"], tmp_path / "r")
    assert "'ref_oracle' writes gold patches" in str(err.value) and "ref_abstainer" in str(err.value)
    assert not (tmp_path / "r").exists()
