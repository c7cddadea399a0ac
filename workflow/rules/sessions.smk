rule session:
    input:
        unpack(previous_session_stage),
        trial=trial_config,
    output:
        stage=f"{TRIAL_DIR}/session_{{k}}/stage.json",
        snapshot=f"{TRIAL_DIR}/session_{{k}}/snapshot.tar.gz",
    log:
        f"{STUDY_DIR}/logs/session/{{trial}}.session_{{k}}.log",
    benchmark:
        f"{STUDY_DIR}/benchmarks/session/{{trial}}.session_{{k}}.tsv"
    conda:
        "../envs/specsnap.yaml"
    resources:
        # one unit of the provider's API per running session: --resources api_anthropic=4 caps it
        **{f"api_{p}": api_units(p) for p in API_PROVIDERS},
    params:
        from_dir=lambda wildcards, input: Path(input.previous).parent,
        stage_dir=lambda wildcards, output: Path(output.stage).parent,
    shell:
        "specsnap --log {log} run-session --trial {input.trial} --session {wildcards.k} "
        "--from {params.from_dir} --stage-dir {params.stage_dir}"
