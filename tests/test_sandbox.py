"""Isolation and the leak check that runs before every session."""

from __future__ import annotations

import shutil
import warnings

import pytest

from sdcs_bench.sandbox.leakcheck import leak_check
from sdcs_bench.core.paths import project_root
from sdcs_bench.sandbox import SandboxLeak, make_backend
from sdcs_bench.sandbox.bwrap import BwrapBackend

needs_bwrap = pytest.mark.skipif(not BwrapBackend.available(), reason="bubblewrap is not usable here")


@needs_bwrap
def test_bwrap_hides_the_project_hidden_tests_gold_and_home(make_sandbox, tier2, tmp_path):
    backend = make_backend("bwrap")
    sandbox = make_sandbox()
    home = tmp_path / "home"
    home.mkdir()
    secrets = [*tier2.secret_dirs(), project_root() / "conf", project_root() / "tiers"]
    assert backend.leak_probe(sandbox, home, secrets) == []
    assert leak_check(sandbox, home, tier2, backend)["isolated"]


@needs_bwrap
def test_bwrap_sandbox_can_write_only_its_own_directory(make_sandbox, tmp_path):
    backend = make_backend("bwrap")
    sandbox = make_sandbox()
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin"}
    outside = tmp_path / "outside.txt"  # under /tmp: lands in the sandbox's private tmpfs, if anywhere
    backend.run(["sh", "-c", f"echo x > {outside}"], workdir=sandbox, home=home, env=env, timeout=30)
    assert not outside.exists()
    code, _, _ = backend.run(["sh", "-c", "echo x > /var/tmp/specsnap-escape"], workdir=sandbox, home=home, env=env, timeout=30)
    assert code != 0  # the root file system is read-only
    code, _, _ = backend.run(["sh", "-c", "echo x > inside.txt"], workdir=sandbox, home=home, env=env, timeout=30)
    assert code == 0 and (sandbox / "inside.txt").exists()


def test_local_backend_is_not_isolated_and_says_so(make_sandbox, tier2, tmp_path):
    from sdcs_bench.sandbox.local import LocalBackend

    LocalBackend._warned = False
    backend = make_backend("local")
    with pytest.warns(UserWarning, match="no isolation"):
        backend.wrap(["true"], workdir=tmp_path, home=tmp_path, network=False, ro_binds=[])
    assert not leak_check(make_sandbox(), tmp_path, tier2, backend)["isolated"]


def test_leak_check_catches_a_copied_hidden_test_and_the_canary(make_sandbox, tier2, tmp_path):
    backend = make_backend("local")
    sandbox = make_sandbox()
    shutil.copyfile(tier2.hidden_dir / "tests" / "test_baseline.py", sandbox / "tests" / "copied.py")
    with warnings.catch_warnings(), pytest.raises(SandboxLeak, match="canary"):
        warnings.simplefilter("ignore")
        leak_check(sandbox, tmp_path, tier2, backend)
    (sandbox / "tests" / "copied.py").unlink()
    gold = tier2.requirements[0].gold.read_text()
    stripped = "\n".join(l for l in gold.splitlines() if tier2.canary not in l)
    (sandbox / "notes.txt").write_text(stripped)
    leak_check(sandbox, tmp_path, tier2, backend)  # content without the canary is fine...
    shutil.copyfile(tier2.requirements[0].gold, sandbox / "gold.patch")
    with pytest.raises(SandboxLeak):
        leak_check(sandbox, tmp_path, tier2, backend)  # ...but a gold file is not


def test_unknown_backend_names_the_choices():
    with pytest.raises(Exception, match="valid choices: auto, bwrap, local"):
        make_backend("docker-desktop")
