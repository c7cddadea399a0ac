"""A full disk or a read-only results directory: one readable line on the terminal (not only in a
log that is itself on the full disk), no temporary file left behind, nothing finished lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, snakemake_says, specsnap

ONE_ARM = 'overrides=["agent=[ref_oracle]","arm=[Vanilla,State_MD_Only]","variant=[none]"]'


def _mount(target: Path, *options: str) -> None:
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(target)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {result.stderr.strip()}")


@pytest.fixture
def small_fs(tmp_path):
    """A tiny file system of our own for the results: full after a few stages."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _mount(mnt, "size=300k")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
                           str(workdir), *args], capture_output=True, text=True, env=os.environ.copy())


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(".specsnap-tmp.")]


@pytest.mark.pipeline
def test_a_full_disk_is_said_in_one_line_and_a_rerun_with_space_finishes(small_fs, tmp_path):
    results = small_fs / "results"
    run = snakemake(tmp_path / "w", "--cores", "2", "--config", f"results={results}", ONE_ARM)
    out = run.stdout + run.stderr
    assert run.returncode != 0
    # Which writer meets the full disk first is a race: one of our stages (it says so in one line,
    # on the terminal as well as in its log) or Snakemake writing a stage's benchmark record after
    # the stage finished (Snakemake says it in its own one line). Either way the cause is named.
    said = [line for line in out.splitlines() if line.startswith("specsnap: error:")]
    snakemake_said = [line for line in out.splitlines() if line == "OSError: [Errno 28] No space left on device"]
    assert said or snakemake_said, out[-3000:]
    assert all("no space left on the device" in line for line in said), said
    assert all("cannot write " in line and str(results) in line for line in said), said
    assert "Traceback" not in out
    assert not _temporaries(results), _temporaries(results)
    finished = {p: p.stat().st_mtime_ns for p in results.rglob("stage.json")}
    assert finished, "some stages finished before the disk was full"

    subprocess.run(["mount", "-o", "remount,size=50m", str(small_fs)], check=True)
    again = snakemake(tmp_path / "w", "--cores", "2", "--config", f"results={results}", ONE_ARM)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert all(p.stat().st_mtime_ns == m for p, m in finished.items()), "a finished stage was redone"
    assert not _temporaries(results)


def test_a_stage_on_a_full_disk_says_so_on_the_terminal_in_one_line(small_fs, tmp_path):
    """The stage itself meets the full disk (its log is on that disk too): the terminal still gets
    exactly one line naming the directory and the cause, and the stage leaves no partial output."""
    results = small_fs / "results"
    plan = specsnap("plan", "--results", str(results), "--override", "agent=[ref_oracle]",
                    "--override", "arm=[Vanilla]", "--override", "variant=[none]")
    assert plan.returncode == 0, plan.stderr
    trial = next((results).glob("*/plan/trials/*.json"))
    study = trial.parents[2]
    filler = small_fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)  # fill the disk to the last byte
    try:
        while os.write(fd, b"\0" * 512):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    stage_dir = study / "trials" / trial.stem / "scaffold"
    run = specsnap("--log", str(study / "logs" / "scaffold" / f"{trial.stem}.log"), "scaffold-sandbox",
                   "--trial", str(trial), "--stage-dir", str(stage_dir))
    assert run.returncode == 1, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("specsnap: error: cannot write "), run.stderr
    assert "no space left on the device" in run.stderr and str(results) in run.stderr, run.stderr
    assert not (stage_dir / "stage.json").exists() and not _temporaries(results)


def test_read_only_results_are_one_line(small_fs, tmp_path):
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    results = small_fs / "results"
    plan = specsnap("plan", "--results", str(results))
    assert plan.returncode == 1 and plan.stderr.count("\n") == 1, plan.stderr
    assert "the file system is read-only" in plan.stderr and str(results) in plan.stderr
    (tmp_path / "w").mkdir()
    run = snakemake(tmp_path / "w", "-n", "--config", f"results={results}")
    out = snakemake_says(run)
    assert run.returncode != 0 and out.startswith("specsnap: error: cannot write") and out.count("\n") == 0, out
    assert "read-only" in out


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    from sdcs_bench.core import fsutil

    target = tmp_path / "stage.json"
    target.write_text("old")

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError):
        fsutil.atomic_write(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["stage.json"]
    message = fsutil.disk_error_message(OSError(28, "No space left on device"), tmp_path)
    assert message.startswith(f"cannot write into {tmp_path}: no space left on the device")
