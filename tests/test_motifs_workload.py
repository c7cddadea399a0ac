"""The motifs workload family (docs/coherence.md): generated from a seed, as data, through the
workload model every other workload uses; seeds that cannot make one are refused; validation."""

from __future__ import annotations

import ast
import re
import shutil

import pytest
from conftest import ROOT, specsnap

from sdcs_bench.core.errors import SpecSnapError
from sdcs_bench.trial import motifs
from sdcs_bench.trial.generated import differences, ensure_generated
from sdcs_bench.trial.workload import load_workload, load_workload_dir

SEEDS = [0, 2]  # the registered ones (conf/workload/motifs_s0.yaml, motifs_s2.yaml)


@pytest.fixture(scope="module", params=SEEDS)
def workload(request):
    return load_workload(f"motifs_s{request.param}")


def _salts(workload) -> dict[str, int]:
    out = {}
    for m in workload.facts.motifs:
        tree = ast.parse((workload.baseline_dir / m.secret).read_text())
        out[m.id] = next(n.value.value for n in tree.body if isinstance(n, ast.Assign))
    return out


def test_shape_is_eight_motifs_of_three_files_and_four_hidden_tests(workload):
    assert workload.family == "motifs" and workload.generated[0] == "motifs"
    assert [r.id for r in workload.requirements] == [f"MOTIF-{i}" for i in range(1, 9)]
    assert sum(len(r.tests) for r in workload.requirements) == 32
    assert all(len(r.tests) == 4 and len(r.files) == 3 for r in workload.requirements)
    assert workload.packages == tuple(f"pkg_{i}" for i in range(1, 9))
    for m in workload.facts.motifs:
        assert m.secret == f"{m.package}/secret.py" and (workload.baseline_dir / m.secret).is_file()
        assert [e.path for e in m.edits] == [f"{m.package}/{s}.py" for s in ("first", "second", "third")]
    # S1 is the sprint, cleaved at its first .py edit; S2 the neutral continuation
    assert [str(s.cleave) for s in workload.schedule] == ["first_py_edit", "none"]


def test_authored_neighbourhood_and_withheld_sets_are_plain_data(workload):
    import yaml

    meta = yaml.safe_load((workload.root / "workload.yaml").read_text())
    assert meta["neighbourhood"]["pkg_3/first.py"] == ["pkg_3/secret.py"]
    assert meta["neighbourhood"]["pkg_3/second.py"] == ["pkg_3/first.py"]
    assert meta["neighbourhood"]["pkg_3/third.py"] == ["pkg_3/second.py"]
    assert sorted(meta["withheld"]) == sorted(f"k{k}" for k in range(9))
    facts = workload.facts
    for k in range(9):
        chosen = facts.withheld_secrets(k)
        assert len(set(chosen)) == k and set(chosen) <= set(facts.secrets)
        if 0 < k < 8:  # drawn at random: never simply the first k motifs
            assert set(chosen) != {f"pkg_{i}/secret.py" for i in range(1, k + 1)}
        if k:  # one random order: a larger k withholds everything a smaller one does
            assert set(facts.withheld_secrets(k - 1)) <= set(chosen)
    with pytest.raises(SpecSnapError, match="no withheld set for k=9"):
        facts.withheld_secrets(9)


def test_salts_are_distinct_above_every_index_and_visible_only_in_their_own_file(workload):
    salts = _salts(workload)
    assert len(set(salts.values())) == 8 and min(salts.values()) > 8
    number = re.compile(r"(?<![0-9A-Za-z_.])[0-9]+(?![0-9A-Za-z_])")
    for m in workload.facts.motifs:
        value = str(salts[m.id])
        visible = [p for p in workload.baseline_dir.rglob("*")
                   if p.is_file() and p.relative_to(workload.baseline_dir).as_posix() != m.secret]
        visible += [*(workload.root / "prompts").rglob("*.md"), *(e.template for o in workload.facts.motifs for e in o.edits)]
        seen = [p.name for p in visible if value in number.findall(p.read_text())]
        assert seen == [], (m.id, seen)
        # the hidden tests state the literal: that is why they must never reach an agent
        hidden = (workload.hidden_dir / "tests" / f"test_motif_{m.index}.py").read_text()
        assert f"assert _stage(\"first\").BASE == {value}" in hidden


def test_stubs_have_the_secrets_byte_length_and_define_nothing(workload):
    for m in workload.facts.motifs:
        secret, stub = (workload.baseline_dir / m.secret).read_bytes(), m.stub.read_bytes()
        assert len(stub) == len(secret) and stub != secret
        namespace: dict = {}
        exec(compile(stub, m.secret, "exec"), namespace)  # noqa: S102 - our own generated stub
        assert [k for k in namespace if not k.startswith("__")] == []


def test_secrets_are_ignored_by_git_and_forbidden_to_import(workload):
    assert "pkg_*/secret.py" in (workload.baseline_dir / ".gitignore").read_text().splitlines()
    wiring = (workload.baseline_dir / "wiring.yaml").read_text()
    assert all(f"- pkg_{i}.secret" in wiring for i in range(1, 9)) and "forbidden_may_be_absent: true" in wiring


def test_generation_is_deterministic_and_seeds_differ(tmp_path):
    one = motifs.workload_files("motifs_s0", 0)
    assert one == motifs.workload_files("motifs_s0", 0)
    assert one != motifs.workload_files("motifs_s0", 2)
    assert motifs.draw(0) == motifs.draw(0) and motifs.draw(0).motifs != motifs.draw(2).motifs
    root = ensure_generated("motifs_s0", "motifs", 0, tmp_path / "copy")
    assert differences(root, "motifs_s0", "motifs", 0) == []
    assert load_workload_dir(root).fingerprint() == load_workload("motifs_s0").fingerprint()


def test_a_stale_or_edited_generated_directory_is_seen(tmp_path):
    root = ensure_generated("motifs_s2", "motifs", 2, tmp_path / "w")
    stub = root / "facts" / "stubs" / "pkg_3" / "secret.py"
    stub.write_text(stub.read_text() + "x")
    assert differences(root, "motifs_s2", "motifs", 2) == ["facts/stubs/pkg_3/secret.py differs from the generator's output"]
    # a directory another generator version wrote is rewritten when it is next used
    meta = root / "workload.yaml"
    meta.write_text(meta.read_text().replace("generator: ", "generator: old-"))
    ensure_generated("motifs_s2", "motifs", 2, root)
    assert differences(root, "motifs_s2", "motifs", 2) == []


@pytest.mark.parametrize("seed,problem", [
    (1, "the salt of motif 6 (5) does not exceed the motif indices (1-8)"),
    (42, "the salts of motifs 2 and 7 collide (each draws 21)"),
    (-1, "a motifs seed is a non-negative integer"),
    ("7", "a motifs seed is a non-negative integer"),
])
def test_bad_seeds_are_refused_naming_the_problem_and_seeds_that_work(seed, problem):
    with pytest.raises(SpecSnapError) as err:
        motifs.draw(seed)
    message = str(err.value)
    assert problem in message and "valid choices:" in message
    for good in re.findall(r"\d+", message.split("valid choices:")[1]):
        assert motifs.seed_problems(int(good)) == []


def test_about_one_seed_in_four_is_refused():
    refused = sum(bool(motifs.seed_problems(s)) for s in range(400))
    assert 60 <= refused <= 140  # the paper: two of eight arbitrary seeds fail


def _project_copy(tmp_path):
    """A project tree with the conf/ and schemas of this checkout (the workloads come from seeds)."""
    proj = tmp_path / "project"
    shutil.copytree(ROOT / "conf", proj / "conf")
    shutil.copytree(ROOT / "workflow" / "schemas", proj / "workflow" / "schemas")
    (proj / "tiers").mkdir()
    return proj


def test_a_new_seed_is_one_registry_file(tmp_path):
    proj = _project_copy(tmp_path)
    (proj / "conf" / "workload" / "motifs_s3.yaml").write_text("id: motifs_s3\ngenerate: {family: motifs, seed: 3}\n")
    result = specsnap("--root", str(proj), "plan", "--study", "coherence_withhold", "--results", str(tmp_path / "r"),
                      "--override", "workload=[motifs_s3]", "--override", "agent=[ref_every_fact]",
                      "--override", "arm=[Vanilla]", "--override", "variant=[withhold_k4_stub]")
    assert result.returncode == 0, result.stderr
    generated = load_workload_dir(proj / "tiers" / "generated" / "motifs_s3")
    assert generated.generated == ("motifs", 3) and generated.canary == motifs.canary(3)


def test_a_registry_file_with_a_bad_seed_stops_planning_with_one_message(tmp_path):
    proj = _project_copy(tmp_path)
    (proj / "conf" / "workload" / "motifs_s42.yaml").write_text("id: motifs_s42\ngenerate: {family: motifs, seed: 42}\n")
    result = specsnap("--root", str(proj), "plan", "--study", "coherence_withhold", "--results", str(tmp_path / "r"),
                      "--override", "workload=[motifs_s42]")
    assert result.returncode == 2
    assert "conf/workload/motifs_s42.yaml: seed 42 cannot make a motifs workload" in result.stderr
    assert "collide" in result.stderr and "valid choices" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r").exists() and not (proj / "tiers" / "generated" / "motifs_s42").exists()


def test_validation_names_each_broken_claim(tmp_path):
    """The fact checks of validate-workload on a copy whose data was tampered with: a stub one byte
    short, a withheld set that is the first k motifs, a salt stated in the prompt."""
    import yaml

    from sdcs_bench.pipeline.validate import Checks, _check_facts
    from sdcs_bench.sandbox import make_backend

    root = ensure_generated("motifs_s2", "motifs", 2, tmp_path / "w")
    salt = _salts(load_workload_dir(root))["MOTIF-5"]
    stub = root / "facts" / "stubs" / "pkg_2" / "secret.py"
    stub.write_bytes(stub.read_bytes()[:-2] + b"\n")
    meta = yaml.safe_load((root / "workload.yaml").read_text())
    meta["withheld"]["k2"] = ["pkg_1/secret.py", "pkg_2/secret.py"]
    (root / "workload.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    sprint = root / "prompts" / "sprint.md"
    sprint.write_text(sprint.read_text() + f"\nHint: {salt}.\n")
    checks = Checks()
    _check_facts(checks, load_workload_dir.__wrapped__(root), tmp_path / "tmp", make_backend("auto"))
    failures = "\n".join(checks.failures)
    size = (root / "baseline" / "pkg_2" / "secret.py").stat().st_size
    assert f"MOTIF-2: its stub is {size - 1} bytes, its secret {size}" in failures
    assert "withheld k2 is the first 2 motifs" in failures
    assert f"MOTIF-5: its secret {salt} is readable in prompts/sprint.md" in failures
    assert "differs from the generator's output" in failures
    clean = Checks()
    fresh = ensure_generated("motifs_s2", "motifs", 2, tmp_path / "fresh")
    _check_facts(clean, load_workload_dir(fresh), tmp_path / "tmp2", make_backend("auto"))
    assert clean.failures == [] and clean.passed > 100


def test_validate_workload_passes_for_a_motifs_seed():
    result = specsnap("validate-workload", "motifs_s2")
    assert result.returncode == 0, result.stdout + result.stderr
    # each step on stderr (a progress bar on a terminal, a line here), the verdict on stdout
    assert "checking authored facts" in result.stderr and "checks passed" in result.stdout
