"""Waiting for the agent's process (session/runner.py ``_wait_exit``): woken by its exit through a
pidfd, with the timeouts ``Popen.wait`` took (any positive number, infinity included)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sdcs_bench.session.runner import _wait_exit


def test_an_exit_is_returned_with_its_code():
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(0.1); sys.exit(3)"])
    assert _wait_exit(proc, 60) == 3


@pytest.mark.parametrize("timeout", [float("inf"), 1e12])
def test_a_timeout_no_poll_can_hold_is_still_waited_out(timeout):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    assert _wait_exit(proc, timeout) == 0


def test_a_process_still_running_at_its_timeout_raises_as_popen_wait_does():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            _wait_exit(proc, 0.2)
        assert proc.poll() is None  # (still running: the caller kills it)
    finally:
        proc.kill()
        proc.wait()
