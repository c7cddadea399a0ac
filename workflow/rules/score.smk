rule score:
    input:
        *REPO_INPUTS,
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
        sessions=lambda wildcards, input: " ".join(f"--session-record {p}" for p in input.sessions),
        injection=injection_flag,
    shell:
        "specsnap --log {log} score --trial {input.trial} --from $(dirname {input.snapshot}) "
        "--stage-dir $(dirname {output.stage}) {params.sessions} {params.injection}"
