"""A pytest plugin that writes each test's outcome, by node id, to the JSON file named by
``$SPECSNAP_OUTCOMES``: what ``specsnap add-repository`` reads of a repository's own suite run
once on its pin (which tests pass, and why each other one does not).

Loaded inside the sandbox with ``-p outcomes_plugin`` from this file's directory; standalone
(standard library only: pytest calls its hooks by name).
"""

from __future__ import annotations

import json
import os

_outcomes: dict[str, dict[str, str]] = {}


def _first_line(report) -> str:
    text = getattr(report, "longreprtext", "") or ""
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        text = str(report.longrepr[2])
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # the first line of the last block of E lines: the final error, not its "+ where" details
    last = max((i for i, ln in enumerate(lines) if ln.startswith("E ")), default=None)
    if last is not None:
        while last and lines[last - 1].startswith("E "):
            last -= 1
        return " ".join(lines[last].split())[:300]
    return (lines[-1] if lines else "")[:300]


def pytest_runtest_logreport(report) -> None:
    current = _outcomes.get(report.nodeid)
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
        _outcomes[report.nodeid] = {"outcome": outcome, "why": str(report.wasxfail)[:300]}
        return
    if report.failed:
        if current is None or current["outcome"] in ("passed", "skipped"):
            what = "failed" if report.when == "call" else f"error in {report.when}"
            _outcomes[report.nodeid] = {"outcome": what, "why": _first_line(report)}
    elif report.skipped:
        if current is None:
            _outcomes[report.nodeid] = {"outcome": "skipped", "why": _first_line(report)}
    elif report.when == "call" and current is None:
        _outcomes[report.nodeid] = {"outcome": "passed", "why": ""}


def pytest_collectreport(report) -> None:
    if report.failed:
        _outcomes[report.nodeid or "<collection>"] = {"outcome": "collection error", "why": _first_line(report)}


def pytest_sessionfinish(session) -> None:
    path = os.environ.get("SPECSNAP_OUTCOMES")
    if path:
        with open(path, "w") as fh:
            json.dump(_outcomes, fh, indent=1, sort_keys=True)
