"""SpecSnap: a benchmark of what survives when a coding agent's session is cut off mid-task."""

__version__ = "0.1.0"
