"""Our own module boundaries (import-linter and grimp), including the files that run alone
inside a sandbox and so may import nothing of the project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from conftest import ROOT

STANDALONE = ["sdcs_bench.agents.reference_policy", "sdcs_bench.trial.policy_rules", "sdcs_bench.scoring.probe_conftest", "sdcs_bench.sandbox.reaper",
              "sdcs_bench.sandbox.guard"]


def test_import_linter_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--config", str(ROOT / ".importlinter")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("module", STANDALONE)
def test_sandbox_side_files_import_only_the_standard_library(module):
    graph = grimp.build_graph("sdcs_bench", include_external_packages=True, cache_dir=None)
    imported = graph.find_modules_directly_imported_by(module)
    assert imported, "grimp saw no imports at all: the check would prove nothing"
    assert all(name.split(".")[0] in sys.stdlib_module_names for name in imported), imported
