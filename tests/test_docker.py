"""The docker backend beyond the contract every isolating backend keeps (tests/test_sandbox.py):
its images, its limits, its errors, and a trial scored the same as under bwrap."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import specsnap

from sdcs_bench.sandbox import make_backend


def _run(backend, tmp_path, argv):
    work, home = tmp_path / "w", tmp_path / "h"
    work.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    return backend.run(argv, workdir=work, home=home, env={"PATH": "/usr/bin:/bin"}, timeout=60)


def test_limits_from_the_config_reach_the_container(docker_image, tmp_path):
    backend = make_backend("docker", {"image_record": str(docker_image),
                                      "limits": {"memory": "300m", "cpus": 0.5, "processes": 77}})
    code, out, err = _run(backend, tmp_path, ["sh", "-c",
        "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max; "
        "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"])
    assert code == 0, err
    assert out.decode().split() == ["77", str(300 * 1024 * 1024)]


def test_the_agent_holds_no_capability_and_cannot_gain_one(docker_image, tmp_path):
    backend = make_backend("docker", {"image_record": str(docker_image)})
    code, out, err = _run(backend, tmp_path, ["sh", "-c", "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; "
                                                         "mount -t tmpfs none /mnt && echo MOUNTED"])
    status = dict(line.split(":\t") for line in out.decode().splitlines() if ":\t" in line)
    assert status == {"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1"}, out
    assert b"MOUNTED" not in out


def test_a_killed_shim_takes_its_container_down_and_reap_removes_it(docker_image, docker_engine, tmp_path):
    """SIGKILL of the runner's process group (a killed study) cannot reach a container directly:
    its lifeline does, with nothing else called, and the backend's reap then removes it."""
    import signal
    import time

    from sdcs_bench.sandbox.base import sandbox_marker
    from sdcs_bench.sandbox.container import SANDBOX_LABEL

    backend = make_backend("docker", {"image_record": str(docker_image)})
    work, home = tmp_path / "w", tmp_path / "h"
    work.mkdir()
    home.mkdir()
    proc = backend.spawn(["sh", "-c", "sleep 3141 & sleep 3142"], workdir=work, home=home,
                         env={"PATH": "/usr/bin:/bin"})
    label = {"label": f"{SANDBOX_LABEL}={sandbox_marker(work)}"}
    deadline = time.monotonic() + 60
    while not docker_engine.containers.list(filters=label):
        assert time.monotonic() < deadline and proc.poll() is None, "the container never started"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while docker_engine.containers.list(filters=label) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not docker_engine.containers.list(filters=label), "the container kept running after its shim died"
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).startswith("sleep 314")]
    assert len(backend.reap(work)) == 1
    assert not docker_engine.containers.list(all=True, filters=label)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_an_image_tag_follows_its_own_build_context_only(clone, monkeypatch):
    """A changed Dockerfile is a new tag for its image and leaves every other image's tag alone."""
    from sdcs_bench.core.paths import project_root
    from sdcs_bench.sandbox.images import image_tag

    (clone / "containers" / "other").mkdir()
    (clone / "containers" / "other" / "Dockerfile").write_text("ARG ROOTFS\nFROM ${ROOTFS}\n")
    catalogue = clone / "containers" / "images.yaml"
    data = yaml.safe_load(catalogue.read_text())
    data["images"]["other"] = {"description": "a second image"}
    catalogue.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("SPECSNAP_ROOT", str(clone))  # undone after the test, as the cache below
    project_root.cache_clear()
    try:
        tags = {name: image_tag(name) for name in ("base", "other")}
        with (clone / "containers" / "base" / "Dockerfile").open("a") as fh:
            fh.write("RUN true\n")
        assert image_tag("base") != tags["base"] and image_tag("other") == tags["other"]
    finally:
        monkeypatch.undo()
        project_root.cache_clear()


def _fake_npm_install(home: Path, version: str) -> Path:
    """claude_code installed the way npm lays it out: hoisted dependencies, one nested copy that
    shadows a hoisted one, an optional dependency not installed, and an unrelated package."""
    modules = home / "npm" / "node_modules"

    def package(path: Path, **deps: dict) -> None:
        path.mkdir(parents=True)
        (path / "package.json").write_text(json.dumps({"name": path.name, **deps}))

    package(modules / "@anthropic-ai" / "claude-code", dependencies={"a": "1"},
            optionalDependencies={"@anthropic-ai/claude-code-linux-x64": "1", "not-installed": "1"})
    package(modules / "@anthropic-ai" / "claude-code-linux-x64")
    package(modules / "a", dependencies={"b": "2"})
    package(modules / "a" / "node_modules" / "b")  # a's own b shadows the hoisted one
    package(modules / "b")
    package(modules / "unrelated")
    (modules / ".bin").mkdir()
    (modules / ".bin" / "claude").symlink_to("../@anthropic-ai/claude-code/cli.js")
    (modules / "@anthropic-ai" / "claude-code" / "cli.js").write_text("#!/usr/bin/env node\n")
    (home / "npm" / ".specsnap-pins").mkdir()
    (home / "npm" / ".specsnap-pins" / "claude_code").write_text(f"@anthropic-ai/claude-code@{version}\n")
    return modules


def test_a_harness_image_carries_its_package_and_what_it_depends_on_and_nothing_else(tmp_path, monkeypatch):
    from sdcs_bench.agents.install import pins
    from sdcs_bench.pipeline.images import carried
    from sdcs_bench.sandbox.images import image_digest

    monkeypatch.setenv("SPECSNAP_HARNESS_HOME", str(tmp_path / "h"))
    absent = carried("harness-claude_code")
    assert absent.key == pins()["claude_code"].spec and absent.trees == ()  # not installed: a key, nothing to copy
    modules = _fake_npm_install(tmp_path / "h", pins()["claude_code"].version)
    got = carried("harness-claude_code")
    assert set(got.trees) == {modules / "@anthropic-ai" / "claude-code", modules / "@anthropic-ai" / "claude-code-linux-x64",
                              modules / "a", modules / "a" / "node_modules" / "b", modules / ".bin" / "claude"}
    assert image_digest("harness-claude_code", got) == image_digest("harness-claude_code", absent)  # the pin, not bytes
    from sdcs_bench.sandbox.images import Carried

    assert image_digest("harness-claude_code", Carried("@anthropic-ai/claude-code@0.0.1", got.where)) != image_digest(
        "harness-claude_code", got), "another pin is another image"
    assert image_digest("harness-claude_code", Carried(got.key, str(tmp_path / "elsewhere"))) != image_digest(
        "harness-claude_code", got), "another place is another image (it carries the install at its own path)"
    for bad, says in (("harness-nope", "unknown harness of image harness-<harness> 'nope'; valid choices: aider,"),
                      ("env-tier_2", "unknown workload of image env-<workload> 'tier_2'; valid choices: click, humanize, isort"),
                      ("nope", "unknown image 'nope'; valid choices: base, env-<name>, harness-<name>, harnesses, job")):
        with pytest.raises(Exception, match=re.escape(says)):
            carried(bad) if "-" in bad else image_digest(bad)


def test_the_backend_mounts_nothing_its_image_carries(docker_image, tmp_path):
    """A generated image carries a harness or a repository environment at its host path: the host's
    copy is not mounted over it, nor is a directory that holds it (the shared npm prefix)."""
    backend = make_backend("docker", {"image_record": str(docker_image)})
    home = tmp_path / "harnesses"
    package = home / "npm" / "node_modules" / "pkg"
    other = tmp_path / "other"
    for path in (package, other, tmp_path / "w", tmp_path / "h"):
        path.mkdir(parents=True)
    argv = backend.wrap(["true"], workdir=tmp_path / "w", home=tmp_path / "h", network=False,
                        ro_binds=[home, package, other])
    mounted = {m["target"] for m in json.loads(argv[argv.index("--") - 1])["mounts"]}
    assert {str(home), str(package), str(other)} <= mounted
    backend.image["provides"] = [str(package)]
    argv = backend.wrap(["true"], workdir=tmp_path / "w", home=tmp_path / "h", network=False,
                        ro_binds=[home, package, other])
    mounted = {m["target"] for m in json.loads(argv[argv.index("--") - 1])["mounts"]}
    assert str(other) in mounted and not {str(home), str(package)} & mounted
    assert str(Path(sys.executable).resolve().parents[1]) in mounted or any(
        Path(sys.executable).resolve().is_relative_to(m) for m in mounted), "the runtime stays mounted"


def test_an_unknown_image_or_no_engine_is_one_line_before_any_work(tmp_path):
    bad = specsnap("plan", "--results", str(tmp_path / "r"), "--override", "sandbox.backend=docker",
                   "--override", "sandbox.docker.image=nope")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "unknown image (sandbox.docker.image) 'nope'; valid choices: auto, base, harnesses" in bad.stderr
    gone = specsnap("plan", "--results", str(tmp_path / "r"), "--override", "sandbox.backend=docker",
                    env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert gone.returncode == 2 and gone.stderr.count("\n") == 1, gone.stderr
    assert "no Docker engine answers" in gone.stderr and "containers/engine.sh start" in gone.stderr
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").rglob("*.json"))


def _study(clone: Path, workdir: Path, backend: str, *extra: str) -> subprocess.CompletedProcess:
    overrides = f'overrides=["agent=[ref_oracle]","arm=[Vanilla]","sandbox.backend={backend}"]'
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(clone / "Snakefile"), "--directory",
                           str(workdir), "--cores", "2", *extra, "--config", "study=mine", f"name=mine_{backend}",
                           overrides], capture_output=True, text=True)


SAME = ("raw", "net", "n_requirements", "requirements", "baseline_ok", "protected_ok", "violations", "valid",
        "tampered", "tamper_evidence", "tes", "expected")


@pytest.mark.pipeline
def test_a_trial_scores_the_same_under_docker_as_under_bwrap_and_a_changed_dockerfile_rebuilds(
        clone, tmp_path, docker_image):
    from sdcs_bench.sandbox.bwrap import BwrapBackend

    if not BwrapBackend.available():
        pytest.skip("bubblewrap is not usable here")
    work = tmp_path / "work"
    cards = {}
    for backend in ("bwrap", "docker"):
        run = _study(clone, work, backend)
        assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
        (card,) = (work / "results" / f"mine_{backend}").glob("trials/*/score/scorecard.json")
        cards[backend] = json.loads(card.read_text())
        sessions = sorted((work / "results" / f"mine_{backend}").glob("trials/*/session_*/stage.json"))
        assert sessions and {json.loads(s.read_text())["session"]["sandbox_backend"] for s in sessions} == {backend}
    assert {k: cards["docker"][k] for k in SAME} == {k: cards["bwrap"][k] for k in SAME}
    assert cards["docker"]["net"] == cards["docker"]["expected"]["net"] > 0

    with (clone / "containers" / "base" / "Dockerfile").open("a") as fh:
        fh.write("# a change\n")
    dry = _study(clone, work, "docker", "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    planned = dry.stdout + dry.stderr
    assert "rule build_image:" in planned and "base" in planned
    assert _study(clone, work, "bwrap", "-n").stdout.count("rule ") == 0, "a bwrap run does not use the image"


def test_a_harness_reaches_its_proxy_port_and_nothing_else(docker_image, tmp_path):
    """With the ports it needs named (the session's proxy), a container has no network but a relay
    to exactly those ports of the host's 127.0.0.1: another local service stays out of reach."""
    import socket
    import threading

    def echo_server():
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(4)

        def serve():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.sendall(b"echo:" + conn.recv(1024))

        threading.Thread(target=serve, daemon=True).start()
        return server

    proxy, other = echo_server(), echo_server()
    p, q = proxy.getsockname()[1], other.getsockname()[1]
    script = ("import socket\nfor port in (%d, %d):\n try:\n  s = socket.create_connection(('127.0.0.1', port), timeout=5)\n"
              "  s.sendall(b'hi'); print(port, s.recv(100).decode() or 'closed')\n except OSError as e:\n  print(port, 'refused')" % (p, q))
    backend = make_backend("docker", {"image_record": str(docker_image)})
    work, home = tmp_path / "w", tmp_path / "h"
    work.mkdir()
    home.mkdir()
    try:
        code, out, err = backend.run([sys.executable, "-I", "-c", script], workdir=work, home=home,
                                     env={"PATH": "/usr/bin:/bin"}, timeout=60, network=True, ports=(p,))
    finally:
        proxy.close()
        other.close()
    assert code == 0, err
    assert out.decode().splitlines() == [f"{p} echo:hi", f"{q} refused"], (out, err)


@pytest.mark.pipeline
def test_a_real_harness_runs_in_its_image_as_it_does_under_bwrap(clone, tmp_path, docker_image):
    """The real Claude Code CLI, driven by its replay script: in its own image (harness-claude_code:
    Node and the pinned CLI copied in, nothing of it mounted from the host), reaching only its session's proxy through the relay, its
    sessions end as they do under bwrap (cleaved by the watcher, then a full second session)."""
    from sdcs_bench.agents.install import installed, pins
    from sdcs_bench.sandbox.bwrap import BwrapBackend

    if not installed(pins()["claude_code"]):
        pytest.skip("the pinned Claude Code CLI is not installed (specsnap install-harnesses)")
    if not BwrapBackend.available():
        pytest.skip("bubblewrap is not usable here")
    work = tmp_path / "work"
    seen = {}
    for backend in ("bwrap", "docker"):
        run = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", str(clone / "Snakefile"), "--directory", str(work), "--cores",
             "2", "--config", "study=mine", f"name=harness_{backend}",
             f'overrides=["agent=[replay_claude_code]","arm=[State_MD_Only]","sandbox.backend={backend}"]'],
            capture_output=True, text=True)
        assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
        records = [json.loads(p.read_text())["session"] for p in
                   sorted((work / "results" / f"harness_{backend}").glob("trials/*/session_*/stage.json"))]
        assert {r["sandbox_backend"] for r in records} == {backend}
        seen[backend] = [(r["session"], r["status"], r["exit_code"], r["model_calls"], r["cleave"]["fired"])
                         for r in records]
    assert seen["docker"] == seen["bwrap"] == [("S1", "cleaved", 0, 1, True), ("S2", "ok", 0, 3, False)]
    # Its sessions ran in the image that carries the pinned CLI, its scoring in base.
    images = {p.parent.name: json.loads(p.read_text()) for p in (work / "results" / "_cache" / "images").glob("*/*.json")}
    assert set(images) == {"harness-claude_code", "base"}
    assert images["harness-claude_code"]["carries"] == pins()["claude_code"].spec
    assert any(p.endswith("/@anthropic-ai/claude-code") for p in images["harness-claude_code"]["provides"])
