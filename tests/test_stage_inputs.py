"""A stage reads only its trial file, its predecessor's outputs and the workload's files: with
`conf/` moved away after planning, every stage of a trial still runs and scores the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import specsnap

from sdcs_bench.pipeline.layout import RunLayout
from sdcs_bench.pipeline.plan.files import read_cells

# A reference policy whose arm files come from `source:` texts under conf/arm/texts, a replay agent
# whose script lies under conf/agent/replay, and a poison-pill variant (the inject stage).
GRID = ["agent=[ref_verbatim_notes,replay_command]", "arm=[State_MD_Only]", "variant=[none,poison_v2]", "seed=[0]"]
VOLATILE = {"wall_s", "tail", "started", "finished", "at_s", "wall_time", "write_to_exit_s", "latency_s"}
# Which hidden tests get sentinel twins, and their names, are drawn afresh for every scoring run
# (they must be unpredictable); how many are planted is not.
DRAWN = {"list"}


def _stable(data):
    """A scorecard without what measures time (wall times, the test runner's own timing line) and
    without the sentinels' random draw."""
    if isinstance(data, dict):
        return {k: _stable(v) for k, v in data.items() if k not in VOLATILE and not (k in DRAWN and "planted" in data)}
    if isinstance(data, list):
        return [_stable(v) for v in data]
    return data


def _differences(a, b, path=""):
    """Where two scorecards differ, as paths (what the assertion reports when they do)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str) for d in _differences(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.200} != {b!r:.200}"]


def _run_stages(clone: Path, results: Path, plan: RunLayout) -> dict[str, dict]:
    """Every stage of every planned trial through the CLI, in order; the scorecards by trial."""
    cards = {}
    for cell in read_cells(Path(plan.cells)):
        trial, order = cell["trial"], cell["stages"].split(",")
        layout = RunLayout(str(results)).trial(trial)
        for i, stage in enumerate(order):
            here, before = Path(layout.stage_dir(stage)), Path(layout.stage_dir(order[i - 1])) if i else None
            common = ["--trial", plan.trial_file(trial), "--stage-dir", str(here)]
            if stage == "scaffold":
                args = ["scaffold-sandbox", *common]
            elif stage == "inject":
                args = ["inject-poison-pill", *common, "--from", str(before)]
            elif stage == "score":
                args = ["score", *common, "--from", str(before)]
            else:
                args = ["run-session", *common, "--from", str(before), "--session", stage.split("_")[1]]
            result = specsnap("--root", str(clone), *args, cwd=clone)
            assert result.returncode == 0, (stage, result.stderr[-3000:])
        cards[trial] = json.loads(Path(layout.file("score", "scorecard.json")).read_text())
    return cards


@pytest.mark.pipeline
def test_every_stage_runs_with_conf_moved_away_and_scores_the_same(clone, tmp_path):
    planned = specsnap("plan", "--results", str(tmp_path / "r"), "--name", "run", *(
        a for o in GRID for a in ("--override", o)), cwd=clone)
    assert planned.returncode == 0, planned.stderr
    plan = RunLayout(str(tmp_path / "r" / "run"))
    assert len(read_cells(Path(plan.cells))) == 4
    with_conf = _run_stages(clone, tmp_path / "with-conf" / "run", plan)

    (clone / "conf").rename(clone / "conf.away")
    assert "conf/config.yaml does not exist" in specsnap("--root", str(clone), "list", "agents", cwd=clone).stderr
    without_conf = _run_stages(clone, tmp_path / "without-conf" / "run", plan)

    assert _stable(with_conf) == _stable(without_conf), _differences(_stable(with_conf), _stable(without_conf))
    poisoned = [c for t, c in without_conf.items() if "poison_v2" in t]
    assert poisoned and all(c["poison"]["version"] == "v2" for c in poisoned)
    replayed = [c for t, c in without_conf.items() if "replay_command" in t]
    assert replayed and all(c["tokens"]["source"] == "proxy" and c["tokens"]["total"] > 0 for c in replayed)
    verbatim = without_conf["tier_2__State_MD_Only__ref_verbatim_notes__none__s0"]
    assert verbatim["net"] == verbatim["expected"]["net"] == 8  # the arm's notes file reached the sandbox
