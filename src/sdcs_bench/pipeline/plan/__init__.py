"""The study plan: conf/ composed once per run into ``results/<run>/plan/`` (docs/architecture.md).

One module per job:

- :mod:`.grid`: the grid's axes, their defaults, and the trials a grid makes (the planner and
  ``specsnap list studies`` both walk it);
- :mod:`.overrides`: a run's ``--config`` keys, its overrides, and its directory's name;
- :mod:`.compat`: what can run with what (an agent's readiness and declared capabilities,
  handoffs, continuation modes, metered cuts), checked before any work;
- :mod:`.planner`: :func:`make_plan`, one trial per cell over one memo, and :func:`ensure_plan`;
- :mod:`.settings`: the budget, prices and statistics a plan carries, and a rerun's subset;
- :mod:`.files`: the plan's files, rendered, written, read and packed;
- :mod:`.current`: whether the plan on disk is still what planning would write.

A trial's sandbox and docker images are chosen beside the images' code (:mod:`sdcs_bench.pipeline.images`).
The names below are the package's face for the workflow's rules and the run's start-up.
"""

from sdcs_bench.pipeline.plan.current import INPUTS_FILE, plan_is_current
from sdcs_bench.pipeline.plan.files import (
    API_PROVIDERS,
    CELLS_VAR,
    STUDY_FILE,
    Plan,
    pack_cells,
    read_cells,
    unpack_cells,
    write_plan,
)
from sdcs_bench.pipeline.plan.grid import GRID_AXES, grid_size
from sdcs_bench.pipeline.plan.overrides import check_run_config, run_name
from sdcs_bench.pipeline.plan.planner import ensure_plan, make_plan

__all__ = [
    "API_PROVIDERS", "CELLS_VAR", "GRID_AXES", "INPUTS_FILE", "STUDY_FILE", "Plan", "check_run_config", "ensure_plan",
    "grid_size", "make_plan", "pack_cells", "plan_is_current", "read_cells", "run_name", "unpack_cells", "write_plan",
]
