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
    shell:
        "specsnap --log {log} inject-poison-pill --trial {input.trial} --from $(dirname {input.snapshot}) "
        "--stage-dir $(dirname {output.stage})"
