rule scaffold:
    input:
        *REPO_INPUTS,
        trial=TRIAL_FILE,
    output:
        **TRIAL.outputs("scaffold"),
    log:
        TRIAL.log("scaffold"),
    benchmark:
        TRIAL.benchmark("scaffold")
    conda:
        "../envs/specsnap.yaml"
    params:
        stage_dir=declared(lambda wildcards, output: os.path.dirname(output.stage)),
    shell:
        "specsnap --log {log} scaffold-sandbox --trial {input.trial} --stage-dir {params.stage_dir}"
