"""The OpenPBS / PBS Professional backend (``resource_manager.type: pbs``).

``PLUGIN`` is everything scheduler-neutral code needs to know of PBS
(:mod:`hpcdet.dispatcher.plugin`); the modules doing the work are imported on first use.
"""

import re

from hpcdet.dispatcher.pbs import reasons
from hpcdet.dispatcher.plugin import SUPPORTED, Capabilities, SchedulerPlugin, unsupported

PLUGIN = SchedulerPlugin(
    name="pbs",
    display_name="PBS",
    config_section="pbs",
    args_key="pbsbatch_args",
    submit_command="qsub",
    # As qsub prints them: 123.server, array jobs 123[].server / 123[4].server.
    job_id_pattern=re.compile(
        r"^\d{1,18}(?:\[\d{0,9}\])?(?:\.[A-Za-z0-9][A-Za-z0-9.-]{0,253})?$"),
    job_id_form="<number>.<server>",
    # Given a directory for -o/-e with -k oed, PBS writes <id>.OU and <id>.ER there while
    # the job runs (hpcdet/dispatcher/pbs/render.py).
    log_names={"out": "{job_id}.OU", "err": "{job_id}.ER"},
    # qsub's default: <job name>.o<sequence number>, in the submission directory.
    default_output="<name>.o<number>",
    reasons=reasons.REASONS,
    reason_words=reasons.reason_words,
    capabilities=Capabilities(
        arrays=SUPPORTED,
        subjob_priority=unsupported(
            "PBS changes no single subjob of a job array: qalter and qmove refuse subjob ids"),
        qos=unsupported("PBS has no QOS"),
        exclude_nodes=unsupported(
            "PBS cannot keep a job off named nodes (no equivalent of sbatch --exclude), so "
            "the exclude_node action cannot be honoured"),
        signal_before_walltime=unsupported(
            "PBS has no --signal equivalent: walltime sends SIGTERM, then SIGKILL after the "
            "queue's kill_delay"),
        requeue=SUPPORTED,
        allocation=unsupported("allocation mode needs Slurm (srun steps inside one job)"),
        fair_share_accounts=unsupported(
            "hpcdet does not manage pbs fair-share accounts: the site's administrator keeps "
            "them (PBS: sched_priv/resource_group); hpcdet passes each job's account"),
    ),
    version_command=("qstat", "--version"),
    conf_variable="PBS_CONF_FILE",
    modules={
        "backend": "hpcdet.dispatcher.pbs.backend",
        "task": "hpcdet.dispatcher.pbs.task",
        "batch_args": "hpcdet.dispatcher.pbs.qsub_args",
        "batch_command": "hpcdet.dispatcher.pbs.qsub_command",
        "operator": "hpcdet.dispatcher.pbs.operator",
    },
)
