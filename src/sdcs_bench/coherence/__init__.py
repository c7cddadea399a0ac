"""The coherence-debt instruments: measurements of whether the facts an edit depends on were
available to the agent when it made the edit."""
