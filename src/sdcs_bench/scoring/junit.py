"""Reading pytest's JUnit XML report (one witness of a run: ``verdicts.py`` cross-checks it)."""

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
