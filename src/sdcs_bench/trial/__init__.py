"""What a trial is made of, as data: the config tree (conf/), workloads, arms, session schedules
and the arm generators."""
