# On a cluster the aggregate runs in the main process: it reads every trial's small files and
# writes the study's tables, far less work than a cluster job's own start-up.
localrules:
    aggregate,


rule aggregate:
    input:
        cells=STUDY.cells,
        scorecards=scorecards(),
        ledgers=ledgers(),
        sessions=session_records(),
    output:
        scorecards=STUDY.scorecards,
        ledger=STUDY.ledger,
        calls=STUDY.calls,
        leaderboard=[STUDY.leaderboard(ext) for ext in LEADERBOARD_EXTS],
        record=STUDY.aggregate_record,
    log:
        STUDY.log("aggregate", "aggregate"),
    benchmark:
        STUDY.benchmark("aggregate", "aggregate")
    conda:
        "../envs/specsnap.yaml"
    params:
        study_dir=declared(lambda wildcards, output: os.path.dirname(output.scorecards)),
    shell:
        "specsnap --log {log} aggregate --study-dir {params.study_dir}"
