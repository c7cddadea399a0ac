rule session:
    input:
        *REPO_INPUTS,
        *IMAGE_INPUTS,
        unpack(previous_session_stage),
        trial=TRIAL_FILE,
    output:
        **TRIAL.outputs("session_{k}"),
    log:
        TRIAL.log("session_{k}"),
    benchmark:
        TRIAL.benchmark("session_{k}")
    conda:
        "../envs/specsnap.yaml"
    resources:
        # one unit of the provider's API per running session: --resources api_anthropic=4 caps it
        **API_RESOURCES,
        runtime=runtime_min("session"),
    params:
        from_dir=declared(lambda wildcards, input: os.path.dirname(input.snapshot)),
        stage_dir=declared(lambda wildcards, output: os.path.dirname(output.stage)),
    shell:
        "specsnap --log {log} run-session --trial {input.trial} --session {wildcards.k} "
        "--from {params.from_dir} --stage-dir {params.stage_dir}"
