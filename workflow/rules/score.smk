rule score:
    input:
        *REPO_INPUTS,
        *SCORE_IMAGE_INPUTS,
        unpack(score_inputs),
        trial=TRIAL_FILE,
    output:
        **TRIAL.outputs("score"),
    log:
        TRIAL.log("score"),
    benchmark:
        TRIAL.benchmark("score")
    conda:
        "../envs/specsnap.yaml"
    resources:
        runtime=runtime_min("score"),
    params:
        from_dir=declared(lambda wildcards, input: os.path.dirname(input.snapshot)),
        stage_dir=declared(lambda wildcards, output: os.path.dirname(output.stage)),
        sessions=declared(
            lambda wildcards, input: " ".join(
                f"--session-record {p}" for p in input.sessions
            )
        ),
        records=stage_record_flags,
    shell:
        "specsnap --log {log} score --trial {input.trial} --from {params.from_dir} "
        "--stage-dir {params.stage_dir} {params.sessions} {params.records}"
