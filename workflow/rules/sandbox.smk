rule scaffold:
    input:
        trial=trial_config,
    output:
        stage=f"{TRIAL_DIR}/scaffold/stage.json",
        snapshot=f"{TRIAL_DIR}/scaffold/snapshot.tar.gz",
    log:
        f"{STUDY_DIR}/logs/scaffold/{{trial}}.log",
    benchmark:
        f"{STUDY_DIR}/benchmarks/scaffold/{{trial}}.tsv"
    conda:
        "../envs/specsnap.yaml"
    params:
        stage_dir=lambda wildcards, output: Path(output.stage).parent,
    shell:
        "specsnap --log {log} scaffold-sandbox --trial {input.trial} --stage-dir {params.stage_dir}"
