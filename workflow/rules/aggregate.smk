rule aggregate:
    input:
        cells=STUDY.cells,
        scorecards=scorecards(),
        ledgers=ledgers(),
    output:
        scorecards=STUDY.scorecards,
        ledger=STUDY.ledger,
        calls=STUDY.calls,
        leaderboard=[STUDY.leaderboard(ext) for ext in LEADERBOARD_EXTS],
    log:
        STUDY.log("aggregate", "aggregate"),
    benchmark:
        STUDY.benchmark("aggregate", "aggregate")
    conda:
        "../envs/specsnap.yaml"
    params:
        study_dir=declared(lambda wildcards, output: Path(output.scorecards).parent),
    shell:
        "specsnap --log {log} aggregate --study-dir {params.study_dir}"
