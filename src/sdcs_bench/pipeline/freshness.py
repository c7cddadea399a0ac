"""Which finished stages are up to date, decided by content where modification times were lost.

Snakemake reruns a job whose input is newer than its oldest output. Modification times say that
truthfully while results stay where they were made, but not after results travel: ``dvc pull``
or ``dvc checkout`` (and ``cp``, ``rsync`` without ``-t``, unpacking an archive) writes every file
anew, in whatever order, so finished stages look older than their inputs. Snakemake's own
fallback, the input checksums in ``.snakemake/metadata``, stays behind with the clone that ran.

So every stage records what it was made from: ``inputs`` in its ``stage.json`` (and in
``aggregate.json`` for the study's tables), the SHA-256 of each input file Snakemake gives it,
by its path under the run directory. :func:`restore_order`, run by ``specsnap plan`` before
Snakemake builds its DAG, walks each trial's stages in order and, for a finished stage whose
outputs are older than its inputs, compares those digests with the inputs on disk:

- all equal: the stage's outputs were made from exactly these bytes, so their modification time
  is set to their newest input's (never later), which is what it would be had they travelled with
  their times; Snakemake then sees the stage as done;
- any differs (a trial config rewritten because ``conf/`` changed, a predecessor that reran), or
  the stage wrote no record, or an output is missing: nothing is touched, here or downstream, and
  Snakemake reruns the stage as it would anyway.

A stage whose outputs are already newer than its inputs is not read at all (no hashing on an
ordinary run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from sdcs_bench.core.fsutil import sha256_file
from sdcs_bench.pipeline.layout import RunLayout, TrialLayout

INPUTS_KEY = "inputs"


def input_record(run_dir: Path, paths: Iterable[Path | str]) -> dict[str, str]:
    """``{path under the run directory: sha256}`` of a job's inputs. Inputs outside the run
    directory (a real repository's cached source and environment, which the rules take as
    ``ancient``) are not recorded: they never make a stage stale."""
    root = Path(run_dir).resolve()
    record = {}
    for path in paths:
        try:
            rel = Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        record[rel] = sha256_file(Path(path))
    return dict(sorted(record.items()))


def _mtime_ns(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _bring_up_to_date(run_dir: Path, record_file: Path, outputs: list[Path]) -> str | None:
    """``"current"`` when the job's outputs are no older than its recorded inputs, ``"restored"``
    when they were older but made from the very same bytes (their times are then set to the newest
    input's), ``None`` when the job must run (no record, an output missing, an input changed)."""
    out_times = [_mtime_ns(p) for p in outputs]
    if None in out_times:
        return None
    try:
        inputs = json.loads(record_file.read_text()).get(INPUTS_KEY)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(inputs, dict) or not inputs:
        return None
    in_paths = {rel: run_dir / rel for rel in inputs}
    in_times = [_mtime_ns(p) for p in in_paths.values()]
    if None in in_times:
        return None
    newest_input = max(in_times)
    if min(out_times) >= newest_input:
        return "current"
    if any(sha256_file(path) != inputs[rel] for rel, path in in_paths.items()):
        return None
    for path, mtime in zip(outputs, out_times):
        if mtime < newest_input:
            os.utime(path, ns=(newest_input, newest_input))
    return "restored"


SNAKEMAKE_DIR_STAMP = ".snakemake_timestamp"  # what Snakemake dates a directory output by


def _with_benchmark(outputs: Iterable[str], benchmark: str) -> list[Path]:
    """A job's outputs as Snakemake weighs them: its benchmark file counts when it exists, and a
    directory output counts with the time stamp Snakemake leaves inside it."""
    paths = [Path(p) for p in outputs]
    paths += [p / SNAKEMAKE_DIR_STAMP for p in paths if (p / SNAKEMAKE_DIR_STAMP).exists()]
    return [*paths, Path(benchmark)] if Path(benchmark).exists() else paths


def restore_order(run_dir: Path, trials: dict[str, list[str]]) -> list[str]:
    """Give finished stages whose recorded inputs equal the current ones their place after those
    inputs in time (see the module's description). ``trials``: each trial's stages in order.
    Returns the jobs whose times were restored (``trial/stage``, ``aggregate``)."""
    run_dir = Path(run_dir)
    run = RunLayout(str(run_dir))
    restored, complete = [], True
    for trial, stages in trials.items():
        layout = TrialLayout(str(run_dir), trial)
        for stage in stages:
            state = _bring_up_to_date(run_dir, Path(layout.stage_json(stage)),
                                      _with_benchmark(layout.outputs(stage).values(), layout.benchmark(stage)))
            if state is None:
                complete = False
                break  # this stage runs, and with it every later stage of the trial
            if state == "restored":
                restored.append(f"{trial}/{stage}")
    if complete:
        outputs = _with_benchmark(run.aggregate_outputs(), run.benchmark("aggregate", "aggregate"))
        state = _bring_up_to_date(run_dir, Path(run.aggregate_record), outputs)
        if state == "restored":
            restored.append("aggregate")
        if state is not None and _bring_up_to_date(
                run_dir, Path(run.report_record),
                _with_benchmark([run.report_dir], run.benchmark("report", "report"))) == "restored":
            restored.append("report")
    return restored
