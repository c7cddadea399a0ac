"""The one error type users see: a precise message, optionally with the valid choices."""

from __future__ import annotations

from collections.abc import Iterable


class SpecSnapError(Exception):
    """Bad input or a broken precondition, reported before any work starts (exit code 2)."""

    def __init__(self, message: str, choices: Iterable[str] | None = None) -> None:
        self.message = message
        self.choices = sorted(choices) if choices is not None else None
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.choices is None:
            return self.message
        valid = ", ".join(self.choices) if self.choices else "(none)"
        return f"{self.message}; valid choices: {valid}"


HINTS_DOC = "docs/real_repos.md#hints"  # how to write a repository's hint files


class ArmNotApplicable(SpecSnapError):
    """An arm that places a file of the workload's own directory (``source: {workload: PATH}``) asked
    for on a workload without that file. The planner skips that (workload, arm) cell, saying so in one
    line (:meth:`record`, :func:`skipped_line`), and stops only when every cell of the grid is skipped;
    anywhere else it is an error like any other."""

    def __init__(self, arm: str, path: str, workload_file: str, workload: str) -> None:
        self.arm, self.path, self.workload_file, self.workload = arm, path, workload_file, workload
        super().__init__(f"arm {arm}: file {path} is the workload's own {workload_file}, which workload {workload} "
                         f"does not have; the arm runs only on workloads that provide it ({HINTS_DOC} says how to "
                         "write one)")

    def __reduce__(self):  # (pickles with its fields, as a multiprocessing pool hands it back)
        return type(self), (self.arm, self.path, self.workload_file, self.workload)

    @property
    def reason(self) -> str:
        return (f"it places the workload's own {self.workload_file} as {self.path}, which {self.workload} "
                "does not have")

    def record(self) -> dict[str, str]:
        """What the plan and the leaderboard keep of a skipped cell."""
        return {"workload": self.workload, "arm": self.arm, "file": self.workload_file, "reason": self.reason}


def skipped_line(record: dict[str, str]) -> str:
    """A skipped (workload, arm) cell in one line, from its :meth:`ArmNotApplicable.record`."""
    return f"arm {record['arm']} skipped on workload {record['workload']}: {record['reason']} ({HINTS_DOC} says how " \
           "to write one)"


def unknown(kind: str, name: str, choices: Iterable[str]) -> SpecSnapError:
    return SpecSnapError(f"unknown {kind} {name!r}", choices)


def one_line(exc: BaseException) -> str:
    """A library's multi-line message (Hydra, OmegaConf, YAML) as one line, without key dumps."""
    text = str(exc) + (f"\n{exc.__cause__}" if exc.__cause__ is not None else "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("full_key", "object_type", "reference_type", "See https"))]
    return "; ".join(lines) or type(exc).__name__
