rule aggregate:
    input:
        cells=f"{PLAN_DIR}/cells.tsv",
        scorecards=scorecards(),
    output:
        scorecards=f"{STUDY_DIR}/scorecards.csv",
        ledger=f"{STUDY_DIR}/ledger.csv",
        leaderboard=multiext(f"{STUDY_DIR}/leaderboard", ".csv", ".md", ".json"),
    log:
        f"{STUDY_DIR}/logs/aggregate.log",
    benchmark:
        f"{STUDY_DIR}/benchmarks/aggregate.tsv"
    conda:
        "../envs/specsnap.yaml"
    params:
        study_dir=lambda wildcards, output: Path(output.scorecards).parent,
    shell:
        "specsnap --log {log} aggregate --study-dir {params.study_dir}"
