"""The pipeline around trials: the plan (composed once per run), the stages Snakemake runs, the
run lock, workload validation and the aggregation into leaderboards."""
