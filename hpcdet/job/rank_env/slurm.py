"""A task started by ``srun``: everything comes from Slurm's per-task variables.

The way submitit's ``SlurmJobEnvironment`` reads them: the rendezvous host is the first
host of the step's node list (with Slurm's default block distribution, rank 0 runs
there), or the loopback address when the step has one node: every rank is then on that
node, and loopback needs no name resolution (node names in ``slurm.conf`` need not
resolve: ``NodeName=node1 NodeAddr=10.0.0.7``, or a test cluster's ``NodeAddr=127.0.0.1``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from hpcdet.hostlist import first_host
from hpcdet.job.rank_env.placement import LOCAL_ADDR, Placement, first_var, int_var

# The step's view comes first: inside ``srun`` these describe the tasks of this step,
# which is what the ranks rendezvous over; the job-wide names are fallbacks.
_NODELIST_VARS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
_TASKS_PER_NODE_VARS = ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
_TASKS_PER_NODE_ITEM = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def slurm_placement(env: Mapping[str, str]) -> Placement | None:
    """This task's place from Slurm's variables; ``None`` outside an ``srun`` task."""
    if "SLURM_PROCID" not in env:
        return None
    size = int_var(env, "SLURM_NTASKS", "SLURM_NPROCS", default=1)
    cross_rank = int_var(env, "SLURM_NODEID", default=0)
    cross_size = int_var(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", default=1)
    job_id = first_var(env, "SLURM_JOB_ID", "SLURM_JOBID")
    nodelist = first_var(env, *_NODELIST_VARS)
    return Placement(
        launcher="slurm",
        rank=int_var(env, "SLURM_PROCID"),
        size=size,
        local_rank=int_var(env, "SLURM_LOCALID", default=0),
        local_size=_local_size(env, cross_rank, size, cross_size),
        cross_rank=cross_rank,
        cross_size=cross_size,
        job_id=job_id,
        nodelist=nodelist,
        master_addr=_rendezvous_host(nodelist, cross_size),
        port_key=job_id or "0",
    )


def parse_tasks_per_node(value: str) -> list[int]:
    """Expand Slurm's compressed task counts: ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    counts: list[int] = []
    for item in value.split(","):
        match = _TASKS_PER_NODE_ITEM.match(item.strip())
        if match is None:
            raise ValueError(f"cannot parse tasks per node {value!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


def _rendezvous_host(nodelist: str | None, nodes: int) -> str:
    if nodes == 1 or not nodelist:
        return LOCAL_ADDR
    return first_host(nodelist)


def _local_size(env: Mapping[str, str], node_id: int, size: int, nodes: int) -> int:
    """Tasks on this node, from the per-node counts, else the uniform count, else size/nodes."""
    compressed = first_var(env, *_TASKS_PER_NODE_VARS)
    if compressed:
        counts = parse_tasks_per_node(compressed)
        if node_id < len(counts):
            return counts[node_id]
    if env.get("SLURM_NTASKS_PER_NODE"):
        return int_var(env, "SLURM_NTASKS_PER_NODE")
    return max(1, size // max(1, nodes))
