"""How a reference policy asks the session's controller before it goes on (docs/agents.md): a
question is a file written whole into the control directory, its answer a file ``ack.<name>``
beside it. The cut handshake asks ``go.<...>`` after each action of a session cut at an edit: the
controller answers only once its watcher has judged every write made before the question, and at
the cut it never answers, so the policy is killed waiting, before its next action, at any load.

Standard library only: both policy scripts run inside the sandbox, where there is no SpecSnap
package, and load this file by its path (it is bound into the sandbox beside them).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

ASK_DIR = Path(".git/specsnap")
WAIT_S = 60.0  # no answer in this time: the watcher is gone, and the policy stops


def ask(name: str, question: str = "", *, wait: bool = True) -> bool:
    """Put ``question`` to the controller as ``name``; with ``wait``, wait for its answer. False when
    none came in ``WAIT_S``."""
    tmp = ASK_DIR / f"{name}.tmp"
    tmp.write_text(question)
    tmp.rename(ASK_DIR / name)
    if not wait:
        return True
    ack = ASK_DIR / f"ack.{name}"
    deadline = time.monotonic() + WAIT_S
    while not ack.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def go_name(asked: int) -> str:
    """The name of the ``asked``-th cut-handshake question of this process (never an earlier
    session's name)."""
    return f"go.{os.getpid()}.{asked}.{os.urandom(4).hex()}"

