"""Grading from a JUnit XML report and the exit code only (never from printed text)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

HIDDEN_PREFIX = "specsnap_hidden"


def junit_key(nodeid: str, prefix: str = HIDDEN_PREFIX) -> tuple[str, str]:
    """The (classname, name) pytest writes for a node id of the hidden suite."""
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::")
    module = f"{prefix}/{path}"[: -len(".py")].replace("/", ".")
    return ".".join([module, *parts[:-1]]), parts[-1]


def read_outcomes(report: Path) -> dict[tuple[str, str], bool]:
    """(classname, name) -> passed, for every test case in the report. A case that appears more
    than once (e.g. a failing teardown) passes only if every appearance passed."""
    outcomes: dict[tuple[str, str], bool] = {}
    if not report.is_file():
        return outcomes
    try:
        root = ET.parse(report).getroot()
    except ET.ParseError:
        return outcomes
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        ok = not any(child.tag in ("failure", "error", "skipped") for child in case)
        outcomes[key] = outcomes.get(key, True) and ok
    return outcomes


def report_trusted(outcomes: dict[tuple[str, str], bool], exit_code: int | None) -> bool:
    """pytest exits 0 only when everything passed and 1 when some test failed; any other code
    (interrupted, internal error, usage error, nothing collected, killed) or a contradiction
    between code and report means nothing in the run can be trusted to have passed."""
    any_failed = not all(outcomes.values()) if outcomes else True
    return bool((exit_code == 0 and outcomes and not any_failed) or (exit_code == 1 and any_failed))


def passed_nodeids(nodeids: list[str], report: Path, exit_code: int | None) -> tuple[dict[str, bool], bool]:
    """Node id -> passed (a test missing from the report failed), and whether the run is trusted."""
    outcomes = read_outcomes(report)
    trusted = report_trusted(outcomes, exit_code)
    return {nid: trusted and outcomes.get(junit_key(nid), False) for nid in nodeids}, trusted
