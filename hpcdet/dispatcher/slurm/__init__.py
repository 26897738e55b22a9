"""Slurm: job scripts, sbatch/squeue/sacct/scontrol/sinfo/sacctmgr, and det sbatch's parsing.

``PLUGIN`` is everything scheduler-neutral code needs to know of Slurm
(:mod:`hpcdet.dispatcher.plugin`); the modules doing the work are imported on first use.
"""

import re

from hpcdet.dispatcher.plugin import SUPPORTED, Capabilities, SchedulerPlugin
from hpcdet.dispatcher.slurm import reasons

# sbatch's --output/--error name for a batch job's streams (%j: the job id); hpcdet keeps
# Slurm's default so a site's habits and tools find the files.
JOB_LOG_STEM = "slurm-%j"

PLUGIN = SchedulerPlugin(
    name="slurm",
    display_name="Slurm",
    config_section="slurm",
    args_key="sbatch_args",
    submit_command="sbatch",
    # As Slurm prints them: plain, array task (123_4), het component (123+0).
    job_id_pattern=re.compile(r"^\d+(?:[_+]\d+)?$"),
    job_id_form="digits only",
    log_names={stream: JOB_LOG_STEM.replace("%j", "{job_id}") + f".{stream}"
               for stream in ("out", "err")},
    default_output=f"{JOB_LOG_STEM}.out",
    reasons=reasons.REASONS,
    reason_words=reasons.reason_words,
    capabilities=Capabilities(
        arrays=SUPPORTED, subjob_priority=SUPPORTED, qos=SUPPORTED, exclude_nodes=SUPPORTED,
        signal_before_walltime=SUPPORTED, requeue=SUPPORTED, allocation=SUPPORTED,
        fair_share_accounts=SUPPORTED),
    status_apis=("cli", "pyslurm"),
    version_command=("scontrol", "version"),
    conf_variable="SLURM_CONF",
    modules={
        "backend": "hpcdet.dispatcher.slurm.backend",
        # resource_manager.transport type rest: the same backend through slurmrestd.
        "rest_backend": "hpcdet.dispatcher.slurm.rest.backend",
        "task": "hpcdet.dispatcher.slurm.task",
        "batch_args": "hpcdet.dispatcher.slurm.sbatch_args",
        "batch_command": "hpcdet.dispatcher.slurm.sbatch_command",
        "accounts": "hpcdet.dispatcher.slurm.accounts",
        "allocation": "hpcdet.dispatcher.slurm.allocation",
        "operator": "hpcdet.dispatcher.slurm.operator",
    },
)
