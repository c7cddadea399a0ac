"""Scripted hostile agents (the generic ``command`` harness running one shell script, no model) and
the checks every attack is judged by: no cleaved edit committed in a valid trial, no process
outliving its session, nothing the agent configured run by the host."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sdcs_bench.sandbox import make_backend
from sdcs_bench.sandbox.base import SANDBOX_MARKER
from sdcs_bench.sandbox.scaffold import scaffold
from sdcs_bench.session.runner import run_session
from sdcs_bench.trial import config
from sdcs_bench.trial.arms import Arm
from sdcs_bench.trial.schedule import effective_schedule
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.trial.workload_model import CleaveRule

# Where a program the agent planted leaves its mark when something *outside* every sandbox runs it:
# /var/tmp is read-only (bwrap) or absent (docker) inside a sandbox, and under `local` the agent's
# own processes carry the sandbox marker, which host-side tools never have.
PWN_DIR = Path("/var/tmp")


def hostile_agent(script: str, name: str = "hostile") -> dict[str, Any]:
    return {**config.entity("agent", "replay_command"),  # (agent_defaults filled in)
            "name": name, "harness": "command", "label": "test agent (hostile script)", "reference": False,
            "provider": "openai", "model": "none", "api_key_env": "OPENAI_API_KEY", "proxy": "replay",
            "replay_script": "conf/agent/replay/command.yaml",
            "options": {"argv": ["/bin/sh", "-c", script], "prompt_via": "stdin"}}


class Pwn:
    """A token whose marker files say that a planted program ran on the host."""

    def __init__(self) -> None:
        self.token = f"specsnap-pwned-{uuid.uuid4().hex[:12]}"

    def program(self, name: str, body: str = "") -> str:
        """Shell lines that write the program ``.git/<name>`` (outside the source tree, never a
        qualifying edit): it marks the host if run outside a sandbox, then does ``body``."""
        marker = PWN_DIR / f"{self.token}-{name}"
        return (f"mkdir -p .git/pwn && printf '%s\\n' '#!/bin/sh' "
                f"'[ -n \"${SANDBOX_MARKER}\" ] || {{ id -u > {marker}; }}' '{body}' > .git/pwn/{name} && "
                f"chmod +x .git/pwn/{name}")

    def path(self, name: str) -> str:
        return f"$PWD/.git/pwn/{name}"

    def marks(self) -> list[str]:
        return sorted(p.name.removeprefix(self.token + "-") for p in PWN_DIR.glob(f"{self.token}-*"))

    def clear(self) -> None:
        for p in PWN_DIR.glob(f"{self.token}-*"):
            p.unlink()


@dataclass
class Hostile:
    records: list[dict[str, Any]]
    workdir: Path
    start_head: str

    @property
    def record(self) -> dict[str, Any]:
        return self.records[-1]

    def git(self, *args: str) -> str:
        """Read the sandbox with git, as the test's own inspection: configuration and hooks the agent
        planted are switched off, so the test never runs them itself."""
        return inspect_git(self.workdir, *args)


def inspect_git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", SANDBOX_MARKER: "test-inspection", "GIT_NO_REPLACE_OBJECTS": "1"}
    safe = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "diff.external=",
            "-c", "core.attributesFile=/dev/null"]
    return subprocess.run(["git", *safe, *args], cwd=repo, capture_output=True, text=True, env=env).stdout


def backend_named(name: str, docker_record: Path | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "docker":
            return make_backend("docker", {"image_record": str(docker_record), "limits": {"memory": "1g", "cpus": 1, "processes": 256}})
        return make_backend(name)


def run_hostile(tmp_path: Path, scripts: list[str], backend, *, cleave: list[str] | None = None,
                timeout_s: float = 60, workdir: Path | None = None) -> Hostile:
    """Run one session per script in one tier_2 sandbox (session k runs ``scripts[k-1]``). Session 1
    keeps tier_2's rule (``first_py_edit``); ``cleave`` overrides each session's rule."""
    workload = load_workload("tier_2")
    arm = Arm.from_config(config.entity("arm", "AGENTS_MD_Only"))
    schedule = effective_schedule(workload, config.entity("variant", "none"))
    workdir = workdir or tmp_path / "sandbox"
    if not workdir.exists():
        scaffold(workload, arm, workdir)
    start = inspect_git(workdir, "rev-parse", "HEAD").strip()
    records = []
    for i, script in enumerate(scripts, start=1):
        spec = schedule[min(i, len(schedule)) - 1]
        if cleave is not None:
            spec = replace(spec, cleave=CleaveRule.parse(cleave[i - 1]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records.append(run_session(
                trial_id="hostile", index=i, session=spec, workload=workload, arm=arm,
                agent_cfg=hostile_agent(script), workdir=workdir, stage_dir=tmp_path / f"s{i}", backend=backend,
                timeout_s=timeout_s))
    return Hostile(records, workdir, start)


def committed_qualifying_changes(h: Hostile) -> list[str]:
    """Every qualifying path (a .py outside tests/) that a commit reachable from anything (any ref,
    reflog, stash, HEAD) changed since the scaffold: the cleaved edit landed if this is not empty."""
    revs = set(h.git("rev-list", "--all", "--reflog").split())
    for ref_file in (h.workdir / ".git").rglob("*"):  # hand-written refs anywhere under .git
        if ref_file.is_file() and not ref_file.is_symlink() and "objects" not in ref_file.parts:
            try:
                text = ref_file.read_text()
            except (OSError, UnicodeDecodeError):
                continue
            revs |= {w for w in text.split() if len(w) == 40 and all(c in "0123456789abcdef" for c in w)}
    changed = set()
    for rev in revs - {h.start_head}:
        if h.git("cat-file", "-t", rev).strip() != "commit":
            continue
        out = h.git("diff", "--name-only", "--no-renames", h.start_head, rev)
        changed |= {p for p in out.split() if p.endswith(".py") and not p.startswith("tests/")}
    return sorted(changed)


def sandbox_processes(workdir: Path) -> list[int]:
    """Processes still running that belong to this sandbox: by the marker in their environment, by
    a working directory inside it, or as the attacks' daemons (``sleep 3017N``)."""
    marker = f"{SANDBOX_MARKER}=".encode()
    root = str(workdir.resolve())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            env = Path(f"/proc/{entry}/environ").read_bytes()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if cwd.startswith(root) or (marker in env and root.encode() in env) or b"sleep\x003017" in cmd:
            found.append(int(entry))
    return found


def assert_held(h: Hostile, pwn: Pwn | None = None, commits: bool = True) -> None:
    """The guarantee: the trial is invalid, or no cleaved edit is committed; nothing ran on the host;
    no process of the session is left."""
    left = sandbox_processes(h.workdir)
    for pid in left:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    assert not left, f"processes outlived their session: {left}"
    if pwn is not None:
        marks = pwn.marks()
        pwn.clear()
        assert not marks, f"a program the agent configured ran on the host: {marks}"
    valid = all((r["cleave"].get("integrity") or {"ok": True}).get("ok") for r in h.records)
    if valid and commits:
        assert committed_qualifying_changes(h) == [], [r["cleave"] for r in h.records]


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# -- scripted agents that make model calls ----------------------------------------------------------
# One model call to the session's proxy (its address is in $SPECSNAP_TEST_ENDPOINT, see
# ``calling_agent``), as a shell command: it appends the HTTP status (200 answered, 403 refused) to
# ``.git/calls`` (outside the source tree, never a qualifying edit) and never fails.
MODEL_CALL = ("python3 -c 'import json, os, urllib.request, urllib.error\n"
              "req = urllib.request.Request(os.environ[\"SPECSNAP_TEST_ENDPOINT\"] + \"/v1/chat/completions\",\n"
              "    data=json.dumps({\"model\": \"none\", \"messages\": [{\"role\": \"user\", \"content\": \"go\"}]}).encode(),\n"
              "    headers={\"Content-Type\": \"application/json\",\n"
              "             \"Authorization\": \"Bearer \" + os.environ[\"SPECSNAP_TEST_TOKEN\"]})\n"
              "try:\n    status = urllib.request.urlopen(req, timeout=60).status\n"
              "except urllib.error.HTTPError as exc:\n    status = exc.code\n"
              "except OSError as exc:\n    status = repr(exc)\n"
              "open(\".git/calls\", \"a\").write(f\"{status}\\n\")'")


def calling_agent(script: str, name: str = "hostile-calling") -> dict[str, Any]:
    """A hostile scripted agent that can reach its session's model proxy (``MODEL_CALL``)."""
    agent = hostile_agent(script, name)
    agent["options"] = {**agent["options"], "env": {"SPECSNAP_TEST_ENDPOINT": "{endpoint}",
                                                    "SPECSNAP_TEST_TOKEN": "{api_key}"}}  # (its stand-in token)
    return agent


def run_calling(tmp_path: Path, script: str, backend, *, cleave: str | None = None, timeout_s: float = 60) -> Hostile:
    """One tier_2 session (as :func:`run_hostile`) whose script may make model calls (``MODEL_CALL``)."""
    workload = load_workload("tier_2")
    arm = Arm.from_config(config.entity("arm", "AGENTS_MD_Only"))
    spec = effective_schedule(workload, config.entity("variant", "none"))[0]
    if cleave is not None:
        spec = replace(spec, cleave=CleaveRule.parse(cleave))
    workdir = tmp_path / "sandbox"
    scaffold(workload, arm, workdir)
    start = inspect_git(workdir, "rev-parse", "HEAD").strip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = run_session(trial_id="hostile", index=1, session=spec, workload=workload, arm=arm,
                             agent_cfg=calling_agent(script), workdir=workdir, stage_dir=tmp_path / "s1",
                             backend=backend, timeout_s=timeout_s)
    return Hostile([record], workdir, start)


def calls_made(h: Hostile) -> list[str]:
    """The statuses the script's model calls got, in order (``MODEL_CALL``)."""
    path = h.workdir / ".git" / "calls"
    return path.read_text().splitlines() if path.is_file() and not path.is_symlink() else []
