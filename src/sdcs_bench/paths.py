"""Where the project tree (conf/, tiers/) and a study's results live."""

from __future__ import annotations

import os
import tempfile
from functools import cache
from pathlib import Path

from .errors import SpecSnapError


@cache
def project_root() -> Path:
    """The checkout that holds conf/ and tiers/ (override with SPECSNAP_ROOT)."""
    env = os.environ.get("SPECSNAP_ROOT")
    candidates = [Path(env)] if env else list(Path(__file__).resolve().parents)
    for cand in candidates:
        if (cand / "conf" / "config.yaml").is_file() and (cand / "tiers").is_dir():
            return cand.resolve()
    raise SpecSnapError(
        "cannot find the SpecSnap project tree (a directory with conf/config.yaml and tiers/); "
        "install from a clone or set SPECSNAP_ROOT"
    )


def conf_dir() -> Path:
    return project_root() / "conf"


def default_work_root() -> Path:
    """Scratch space for live sandboxes; stable per trial so agents see the same path each session."""
    return Path(os.environ.get("SPECSNAP_WORK_ROOT") or Path(tempfile.gettempdir()) / "specsnap-work")
