# Real repositories (docs/real_repos.md): the pinned source is downloaded once per pin and the
# repository's own environment built once per pin; every trial of every run reuses both.
# Both download from PyPI, so on a cluster they run in the main process (compute nodes often have
# no network); the cache they fill is on the file system the nodes share.
localrules:
    source,
    environment,


rule source:
    input:
        repo=source_plan,
    output:
        record=CACHE.source_record("{pin}"),
    log:
        STUDY.log("source", "{pin}"),
    benchmark:
        STUDY.benchmark("source", "{pin}")
    conda:
        "../envs/specsnap.yaml"
    shell:
        "specsnap --log {log} fetch-source --repo-plan {input.repo}"


rule environment:
    input:
        repo=environment_plan,
    output:
        record=CACHE.env_record("{env}"),
    log:
        STUDY.log("environment", "{env}"),
    benchmark:
        STUDY.benchmark("environment", "{env}")
    conda:
        "../envs/specsnap.yaml"
    shell:
        "specsnap --log {log} build-env --repo-plan {input.repo}"
