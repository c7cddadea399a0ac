"""SpecSnap's exact stop for mini-swe-agent: a local environment that ends the run at the cleave.

Loaded by ``mini`` itself, inside the sandbox, from its own virtualenv (``PYTHONPATH`` = this
directory, ``--environment-class mswea_env.SpecSnapEnvironment``): it may import ``minisweagent``,
the standard library and ``cleave_hook`` beside it (stdlib only), nothing else of SpecSnap.

After every command the agent runs, it reads the session's guard state (``.git/specsnap/guard``,
written by SpecSnap's watcher, the only authority on the cleave). Once the cleave has fired it
raises :class:`Cleaved`, an ``InterruptAgentFlow`` whose message has role ``exit``: the remaining
commands of the same reply are never executed, no further model call is made, the trajectory is
saved and ``mini`` exits (status 0). Because the exception replaces the command's return value,
mini's trajectory marks the cleaving command too as "action was not executed"; its real output
and return code are kept in the exit message (``extra.cleaved_command``). A command can finish before the
watcher has seen the write it made, so when a command changed a qualifying ``.py`` file while the
guard is still ``armed``/``watch`` it waits briefly for the watcher's verdict (as
``cleave_hook.py`` does for the hook-based harnesses).
"""

from __future__ import annotations

import os
import time
from typing import Any

from minisweagent.environments.local import LocalEnvironment, LocalEnvironmentConfig
from minisweagent.exceptions import InterruptAgentFlow

from cleave_hook import WAIT_S, exempt, guard_state, qualifies  # beside this file: the guard's readers

REASON = "specsnap: this session was cleaved at its first .py edit; no further commands are allowed"


class Cleaved(InterruptAgentFlow):
    """The session's cleave fired: end the agent's run (exit status ``Cleaved``)."""


class SpecSnapEnvironmentConfig(LocalEnvironmentConfig):
    specsnap_repo: str = ""
    """The sandbox repository (default: the environment's cwd, else the process's cwd)."""


def py_files(repo: str, patterns: list[str]) -> dict[str, tuple[int, int]]:
    """Qualifying ``.py`` files of the working tree -> (mtime_ns, size)."""
    out = {}
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, repo).replace(os.sep, "/")
            if not qualifies(rel, patterns):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[rel] = (st.st_mtime_ns, st.st_size)
    return out


class SpecSnapEnvironment(LocalEnvironment):
    def __init__(self, *, config_class: type = SpecSnapEnvironmentConfig, **kwargs: Any) -> None:
        super().__init__(config_class=config_class, **kwargs)
        self.repo = self.config.specsnap_repo or self.config.cwd or os.getcwd()

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        state = guard_state(self.repo)
        if state == "cleaved":
            self._stop(action)
        patterns = exempt(self.repo)
        before = py_files(self.repo, patterns) if state in ("armed", "watch") else None
        output = super().execute(action, cwd, timeout=timeout)
        state = guard_state(self.repo)
        if state in ("armed", "watch") and before is not None and py_files(self.repo, patterns) != before:
            deadline = time.monotonic() + WAIT_S
            while state != "cleaved" and time.monotonic() < deadline:
                time.sleep(0.02)
                state = guard_state(self.repo)
        if state == "cleaved":
            self._stop(action, output)
        return output

    def _stop(self, action: dict, output: dict | None = None) -> None:
        extra: dict[str, Any] = {"exit_status": "Cleaved", "submission": ""}
        content = REASON
        if output is not None:  # the command ran (and made the edit): keep what it printed
            extra["cleaved_command"] = {"command": action.get("command", ""), "returncode": output.get("returncode"),
                                        "output": output.get("output", "")}
            content += f"\n\nThe last command ran (return code {output.get('returncode')}):\n{output.get('output', '')}"
        raise Cleaved({"role": "exit", "content": content, "extra": extra})
