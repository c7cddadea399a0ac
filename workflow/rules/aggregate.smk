# On a cluster the aggregate runs in the main process: it reads every trial's small files and
# writes the study's tables, far less work than a cluster job's own start-up.
localrules:
    aggregate,
    report,


rule aggregate:
    input:
        cells=STUDY.cells,
        statistics=STUDY.statistics_file,
        prices=STUDY.prices_file,
        scorecards=scorecards(),
        ledgers=ledgers(),
        sessions=session_records(),
    output:
        scorecards=STUDY.scorecards,
        ledger=STUDY.ledger,
        calls=STUDY.calls,
        paired=STUDY.paired,
        leaderboard=[STUDY.leaderboard(ext) for ext in LEADERBOARD_EXTS],
        plots=directory(STUDY.plots_dir),
        record=STUDY.aggregate_record,
    log:
        STUDY.log("aggregate", "aggregate"),
    benchmark:
        STUDY.benchmark("aggregate", "aggregate")
    conda:
        "../envs/specsnap.yaml"
    # (its plots are drawn side by side)
    threads: 2
    params:
        run_dir=declared(lambda wildcards, output: os.path.dirname(output.scorecards)),
    shell:
        "specsnap --log {log} aggregate --run-dir {params.run_dir}"


# The static HTML report (docs/report.md): a page per trial, read from the trials' own records.
rule report:
    input:
        record=STUDY.aggregate_record,
        leaderboard=STUDY.leaderboard("json"),
        scorecards=STUDY.scorecards,
        plots=STUDY.plots_dir,
        records=report_records(),
    output:
        directory(STUDY.report_dir),
    log:
        STUDY.log("report", "report"),
    benchmark:
        STUDY.benchmark("report", "report")
    conda:
        "../envs/specsnap.yaml"
    # (its trial pages are written side by side)
    threads: 2
    params:
        run_dir=declared(lambda wildcards, input: os.path.dirname(input.record)),
    shell:
        "specsnap --log {log} report --run-dir {params.run_dir}"
