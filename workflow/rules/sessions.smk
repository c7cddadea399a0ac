rule session:
    input:
        *REPO_INPUTS,
        *IMAGE_INPUTS,
        unpack(previous_session_stage),
        trial=TRIAL_FILE,
    output:
        **TRIAL.outputs("session_{k}", carry=False),
    log:
        TRIAL.log("session_{k}"),
    benchmark:
        TRIAL.benchmark("session_{k}")
    wildcard_constraints:
        trial=NO_STATE_TRIAL,
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


# A session of a trial whose continuation carries the harness's own state (resume, compact): the
# same job, which also leaves that state (carry.tar.gz) for the next session. (A rule of its own, so
# the sessions of every other trial declare what they always did.)
use rule session as session_state with:
    output:
        **TRIAL.outputs("session_{k}", carry=True),
    wildcard_constraints:
        trial=STATE_TRIAL,
