"""A study killed with SIGKILL mid-session: no agent process survives it (under bwrap and under the
unisolated local backend, including a process that left the agent's process group), and the
rerun cleans what the killed session left and finishes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sdcs_bench.sandbox.base import SANDBOX_MARKER
from sdcs_bench.sandbox.bwrap import BwrapBackend

SLEEPER = """\
name: sleeper
harness: command
label: test agent
reference: false
provider: openai
model: none
api_key_env: OPENAI_API_KEY
proxy: replay
replay_script: conf/agent/replay/command.yaml
options:
  # Slow until the flag exists: starts a process that leaves its process group, then waits.
  argv: ["/bin/sh", "-c", "[ -e {flag} ] && exit 0; setsid sleep 301 & sleep 302"]
  prompt_via: stdin
  ro_binds: ["{flagdir}"]  # bwrap shows nothing of the host but what is named
"""


def _marked() -> list[int]:
    """Processes carrying a SpecSnap sandbox marker (an agent, or anything it started) of this test
    run's sandboxes: their private HOME is under this run's work root (another SpecSnap run on the
    machine is not ours to count)."""
    mine = ("HOME=" + os.environ["SPECSNAP_WORK_ROOT"]).encode()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(item.startswith(SANDBOX_MARKER.encode() + b"=") for item in env) and \
                    any(item.startswith(mine) for item in env):
                pids.append(int(entry))
    return pids


def _snakemake(clone: Path, workdir: Path, backend: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(clone / "Snakefile"), "--directory", str(workdir),
            "--cores", "1", *extra, "--config", "study=mine",
            f'overrides=["agent=[sleeper]","sandbox.backend={backend}"'
            + (',"sandbox.allow_unconfined=true"' if backend == "local" else "") + "]"]  # (a scripted agent, not a policy)


@pytest.mark.pipeline
@pytest.mark.parametrize("backend", ["bwrap", "local"])
def test_a_killed_study_leaves_no_agent_running_and_resumes(clone, tmp_path, backend):
    if backend == "bwrap" and not BwrapBackend.available():
        pytest.skip("bubblewrap is not available here")
    # The flag must be visible inside bwrap, whose /tmp is private: its directory is bound read-only.
    flag = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="specsnap-test-")) / "fast"
    flag.parent.chmod(0o755)  # (readable by the sandbox's own user, which is not root)
    (clone / "conf" / "agent" / "sleeper.yaml").write_text(
        SLEEPER.replace("{flagdir}", str(flag.parent)).replace("{flag}", str(flag)))
    assert not _marked(), "agent processes of another test are still running"
    workdir = tmp_path / "work"
    study = subprocess.Popen(_snakemake(clone, workdir, backend), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(_marked()) < 3:  # the shell, its sleep and the sleep that left the group (plus the supervisor)
        assert study.poll() is None and time.monotonic() < deadline, "the agent never started"
        time.sleep(0.2)
    os.killpg(study.pid, signal.SIGKILL)  # the whole study: Snakemake and its job, at once
    study.wait()
    deadline = time.monotonic() + 15
    while _marked() and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = _marked()
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"agent processes survived the killed study: {survivors}"

    homes = list(Path(os.environ["SPECSNAP_WORK_ROOT"]).glob("mine*/*/home-1"))
    assert homes, "the killed session's private HOME is there to be cleaned"
    flag.touch()
    unlock = subprocess.run(_snakemake(clone, workdir, backend, "--unlock"), capture_output=True, text=True)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    rerun = subprocess.run(_snakemake(clone, workdir, backend, "--rerun-incomplete"), capture_output=True, text=True)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]
    assert not any(p.exists() for p in homes), "the rerun left the killed session's HOME behind"
    assert list(workdir.glob("results/*/leaderboard.csv"))
    assert not _marked()
    shutil.rmtree(flag.parent)
