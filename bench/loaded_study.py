"""A reference study under load: every trial must still land on its closed form.

    python bench/loaded_study.py [--study cut_sweep] [--override 'variant=[none]']... [--cores 2]
                                 [--cpu-hogs N] [--no-io-hog]

Runs the study from scratch (`snakemake --cores 2` in a fresh directory) with a CPU hog on every core
and a disk writer beside it (bench/hogs.py: bounded, started before the run and stopped after it,
whatever happens), then prints how many trials landed on their reference policy's closed form (and
every one that did not, with why), whether every trial was valid, the run's wall time, the load
averages and what the hogs did meanwhile. Exit status 1 when any trial is off its closed form. The
cut of a gold-patch policy rests on a handshake, not on timing (docs/agents.md): this is the proof
that it holds on a machine that is anything but quiet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd
from hogs import Hogs
from smoke_study import ROOT, run_snakemake


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="cut_sweep")
    parser.add_argument("--override", action="append", default=[], help="a Hydra override of the study, e.g. 'variant=[none]'")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--cpu-hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--no-io-hog", action="store_true")
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it (default: a temporary one)")
    args = parser.parse_args()
    before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        env = {**os.environ, "SPECSNAP_WORK_ROOT": str(tmp / "work")}
        config = [f"study={args.study}", "name=loaded"]
        if args.override:
            config.append("overrides=" + json.dumps(args.override))
        with Hogs(cpu=args.cpu_hogs, io_dir=None if args.no_io_hog else tmp / "io-hog") as hogs:
            wall, _ = run_snakemake(["-s", str(ROOT / "Snakefile"), "--directory", str(tmp), "--cores",
                                     str(args.cores), "--config", *config], ROOT, env)
            during = os.getloadavg()
        cards = pd.read_csv(tmp / "results" / "loaded" / "scorecards.csv")
    matched = cards["matches_expected"].eq(True)
    no_form = cards["matches_expected"].isna()
    print(f"{args.study}{' ' + ' '.join(args.override) if args.override else ''}: {len(cards)} trials, "
          f"snakemake --cores {args.cores}, under load")
    print(f"  on their closed forms: {int(matched.sum())}/{len(cards)}"
          + (f" ({int(no_form.sum())} without one)" if no_form.any() else ""))
    print(f"  valid: {int(cards['valid'].sum())}/{len(cards)}")
    for row in cards[~matched].itertuples():
        print(f"  OFF: {row.trial}: raw {row.raw}, net {row.net}, valid {row.valid}"
              + (f" ({row.invalid_reasons})" if not row.valid else ""))
    print(f"  {wall:.1f} s wall ({wall / 60:.1f} min)")
    print(f"  {hogs.summary()}")
    print(f"  load average before: {' '.join(f'{x:.2f}' for x in before)}; at the run's end: "
          f"{' '.join(f'{x:.2f}' for x in during)}")
    sys.exit(0 if matched.all() and cards["valid"].all() else 1)


if __name__ == "__main__":
    main()
