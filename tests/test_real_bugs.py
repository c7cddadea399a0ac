"""The real-repository corpus (docs/real_repos.md#the-corpus): the `real_bugs` study holds every
shipped real repository, every bug states its upstream source, and the study runs every row on its
closed form (slow: every repository's suite, twice)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from sdcs_bench.trial import config
from sdcs_bench.trial.workload import load_workload
from sdcs_bench.trial.workload_registry import registered_workloads

REPOSITORIES = sorted(w for w in registered_workloads() if load_workload(w).is_real_repo)
CORPUS = [w for w in REPOSITORIES if w not in ("click", "isort")]  # the repositories added with add-bug


def test_the_study_runs_every_shipped_real_repository():
    grid = config.read_yaml(config.conf_dir() / "study" / "real_bugs.yaml")["grid"]
    assert sorted(grid["workload"]) == REPOSITORIES


def test_the_corpus_has_at_least_forty_bugs_each_with_its_source_on_a_pypi_sdist_with_its_tests():
    bugs = {w: load_workload(w).requirements for w in CORPUS}
    assert sum(len(b) for b in bugs.values()) >= 40, {w: len(b) for w, b in bugs.items()}
    assert len(CORPUS) >= 5, CORPUS
    for w in CORPUS:
        wl = load_workload(w)
        assert wl.source.kind == "sdist" and wl.source_tests, w  # validated without a git host
        raw = yaml.safe_load((wl.root / "bugs.yaml").read_text())
        for entry in raw:
            assert entry.get("upstream") and entry.get("fix") and entry.get("fixed_in"), (w, entry["id"])
            assert "/" in entry["upstream"], (w, entry["id"])  # owner/name#N: a source anyone can look up


@pytest.mark.slow
@pytest.mark.pipeline
def test_every_row_of_the_real_bugs_study_lands_on_its_closed_form(tmp_path):
    from test_pipeline import run_grid

    board, run = run_grid(tmp_path, "real_bugs", "real-bugs")
    assert len(board) == 2 * len(REPOSITORIES)
    assert board["matches_expected"].all(), board.to_string()
    oracle = board.set_index(["workload", "agent"])
    for w in REPOSITORIES:
        assert oracle.loc[(w, "ref_oracle"), "net"] == len(load_workload(w).requirements)
        assert oracle.loc[(w, "ref_null"), "net"] == 0
    cards = pd.read_csv(run / "scorecards.csv")
    assert cards["valid"].all()
