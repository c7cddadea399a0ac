# The docker backend's images (docs/containers.md): each built once with the docker SDK, without
# any image registry. The record (tag and image id) is named by the digest of the image's build
# context, so a changed Dockerfile is a new record: exactly that image is rebuilt, and exactly the
# trials that run in it rerun (their plan names the new record).
rule build_image:
    input:
        unpack(image_needs),
    output:
        record=CACHE.image_record("{image}", "{digest}"),
    log:
        STUDY.log("build_image", "{image}.{digest}"),
    benchmark:
        STUDY.benchmark("build_image", "{image}.{digest}")
    conda:
        "../envs/specsnap.yaml"
    params:
        # the results directory (results/_cache/images/<name>/<digest>.json): an env image finds its
        # environment's cache there
        results=lambda wildcards, output: os.path.dirname(
            os.path.dirname(os.path.dirname(os.path.dirname(output.record)))
        ),
    shell:
        "specsnap --log {log} build-image {wildcards.image} --results {params.results:q} --record {output.record}"
