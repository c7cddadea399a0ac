# Between two sessions: the poison pill (docs/protocol.md) or withholding facts (docs/coherence.md).
rule inject:
    input:
        *REPO_INPUTS,
        unpack(previous_inject_stage),
        trial=TRIAL_FILE,
    output:
        **TRIAL.outputs("inject"),
    log:
        TRIAL.log("inject"),
    benchmark:
        TRIAL.benchmark("inject")
    conda:
        "../envs/specsnap.yaml"
    params:
        from_dir=declared(lambda wildcards, input: os.path.dirname(input.snapshot)),
        stage_dir=declared(lambda wildcards, output: os.path.dirname(output.stage)),
    shell:
        "specsnap --log {log} inject --trial {input.trial} --from {params.from_dir} "
        "--stage-dir {params.stage_dir}"
