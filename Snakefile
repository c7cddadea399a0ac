# SpecSnap: one trial per cell of the study grid; `snakemake --cores 2` runs the default study.
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/common.smk"
include: "workflow/rules/repos.smk"
include: "workflow/rules/containers.smk"
include: "workflow/rules/storage.smk"
include: "workflow/rules/sandbox.smk"
include: "workflow/rules/sessions.smk"
include: "workflow/rules/inject.smk"
include: "workflow/rules/handoff.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/aggregate.smk"


rule all:
    default_target: True
    input:
        get_final_output(),
