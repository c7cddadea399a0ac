# The docker backend's images (docs/containers.md): each built once with the docker SDK, without
# any image registry; the record (tag and image id) is what the trials using it take as input.
rule build_image:
    input:
        image_context,
    output:
        record=CACHE.image_record("{image}"),
    log:
        STUDY.log("build_image", "{image}"),
    benchmark:
        STUDY.benchmark("build_image", "{image}")
    conda:
        "../envs/specsnap.yaml"
    shell:
        "specsnap --log {log} build-image {wildcards.image} --record {output.record}"
