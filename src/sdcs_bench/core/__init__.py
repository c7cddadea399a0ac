"""What every part of SpecSnap shares: the one error type, the project's paths, atomic file writes,
git helpers and token counts. Depends on nothing else of the package."""
