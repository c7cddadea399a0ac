rule inject:
    input:
        unpack(previous_inject_stage),
        trial=trial_config,
    output:
        stage=f"{TRIAL_DIR}/inject/stage.json",
        snapshot=f"{TRIAL_DIR}/inject/snapshot.tar.gz",
    log:
        f"{STUDY_DIR}/logs/inject/{{trial}}.log",
    benchmark:
        f"{STUDY_DIR}/benchmarks/inject/{{trial}}.tsv"
    conda:
        "../envs/specsnap.yaml"
    params:
        from_dir=lambda wildcards, input: Path(input.previous).parent,
        stage_dir=lambda wildcards, output: Path(output.stage).parent,
    shell:
        "specsnap --log {log} inject-poison-pill --trial {input.trial} --from {params.from_dir} "
        "--stage-dir {params.stage_dir}"
