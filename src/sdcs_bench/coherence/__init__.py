"""The coherence-debt instruments (docs/coherence.md): what a session read, wrote, tested and
reverted, as one event stream for every harness; residency at edit time; abstention; and the
estimator enumeration that shows why read-derived instruments overstate missing facts."""
