# Only with a default storage provider (workflow/profiles/kubernetes): the plan the main process
# composed is uploaded as it is, so remote jobs read exactly this run's plan (never conf/).
if IN_STORAGE:

    localrules:
        publish_plan,

    rule publish_plan:
        input:
            local(f"{PLAN_DIR}/{{plan_file}}"),
        output:
            f"{PLAN_DIR}/{{plan_file}}",
        wildcard_constraints:
            plan_file=r"cells\.tsv|(statistics|prices|budget)\.json|(trials|repos)/[^/]+\.json",
        shell:
            "cp {input} {output}"
