# Before every session after the first, in a continuation mode but reset (docs/protocol.md#continuation-modes):
# what crosses to session k (a trace, a summary, the harness's own state), recorded.
rule handoff:
    input:
        *REPO_INPUTS,
        unpack(handoff_inputs),
        trial=TRIAL_FILE,
    output:
        **TRIAL.outputs("handoff_{k}"),
    log:
        TRIAL.log("handoff_{k}"),
    benchmark:
        TRIAL.benchmark("handoff_{k}")
    conda:
        "../envs/specsnap.yaml"
    resources:
        # a summary's model call: one unit of its provider's API, for at most a session's time
        **HANDOFF_API_RESOURCES,
        runtime=runtime_min("session"),
    params:
        from_dir=declared(lambda wildcards, input: os.path.dirname(input.snapshot)),
        stage_dir=declared(lambda wildcards, output: os.path.dirname(output.stage)),
        sessions=declared(
            lambda wildcards, input: " ".join(
                f"--session-stage {os.path.dirname(p)}" for p in input.sessions
            )
        ),
    shell:
        "specsnap --log {log} handoff --trial {input.trial} --session {wildcards.k} --from {params.from_dir} "
        "--stage-dir {params.stage_dir} {params.sessions}"
