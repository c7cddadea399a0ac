rule score:
    input:
        unpack(last_session_stage),
        unpack(injection_record),
        sessions=session_records,
        trial=trial_config,
    output:
        scorecard=f"{TRIAL_DIR}/score/scorecard.json",
        stage=f"{TRIAL_DIR}/score/stage.json",
    log:
        f"{STUDY_DIR}/logs/score/{{trial}}.log",
    benchmark:
        f"{STUDY_DIR}/benchmarks/score/{{trial}}.tsv"
    conda:
        "../envs/specsnap.yaml"
    params:
        from_dir=lambda wildcards, input: Path(input.previous).parent,
        stage_dir=lambda wildcards, output: Path(output.stage).parent,
    shell:
        "specsnap --log {log} score --trial {input.trial} --from {params.from_dir} "
        "--stage-dir {params.stage_dir}"
