"""Where this process sits in the job: rank, world size, node, rendezvous address.

Everything is derived from Slurm's per-task variables (the way submitit's
``SlurmJobEnvironment`` and ``TorchDistributedEnvironment`` do it), so every rank computes
the same rendezvous address and port on its own, without talking to the others:

* ``MASTER_ADDR`` is the first host of the step's node list (with Slurm's default block
  distribution, rank 0 runs there), or the loopback address when the step has one node:
  every rank is then on that node, and loopback needs no name resolution (node names in
  ``slurm.conf`` need not resolve: ``NodeName=node1 NodeAddr=10.0.0.7``, or a test
  cluster's ``NodeAddr=127.0.0.1``).
* ``MASTER_PORT`` is drawn from ``random.Random(<job id digits>)`` in 20000-32767 (below the
  kernel's ephemeral port range, which outgoing connections use): the same
  on every rank of a job, and most likely different for two jobs sharing a first node.

Without Slurm variables (a laptop, a unit test) the environment is a single process.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

from hpcdet.dispatcher.nodelist import first_host

# Below Linux's ephemeral range (32768-60999 by default), where any outgoing connection on
# the node may hold a port: a rendezvous port from there failed with EADDRINUSE in CI.
PORT_RANGE = (20000, 32767)
LOCAL_ADDR = "127.0.0.1"

# The step's view comes first: inside ``srun`` these describe the tasks of this step,
# which is what the ranks rendezvous over; the job-wide names are fallbacks.
_NODELIST_VARS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
_TASKS_PER_NODE_VARS = ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
_TASKS_PER_NODE_ITEM = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


@dataclass(frozen=True)
class ClusterEnv:
    """One rank's place in the job, as the scheduler describes it.

    Build it with :meth:`from_environ`; :meth:`export_torch_env` turns it into the
    variables ``torch.distributed``'s ``env://`` rendezvous reads.
    """

    rank: int
    size: int
    local_rank: int
    local_size: int
    cross_rank: int
    cross_size: int
    job_id: str | None
    nodelist: str | None
    master_addr: str
    master_port: int

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ClusterEnv:
        """Read Slurm's variables from ``environ`` (default ``os.environ``)."""
        env = os.environ if environ is None else environ
        if "SLURM_PROCID" not in env:
            return cls.single_process(env.get("SLURM_JOB_ID"))
        return _from_slurm(env)

    @classmethod
    def single_process(cls, job_id: str | None = None) -> ClusterEnv:
        """A world of one: rank 0 of 1 on this host."""
        # No other rank needs to agree on the port, so the pid is as good a seed as any.
        port = deterministic_port(job_id or str(os.getpid()))
        return cls(0, 1, 0, 1, 0, 1, job_id, None, LOCAL_ADDR, port)

    def torch_env(self) -> dict[str, str]:
        """The ``env://`` variables for this rank (plus torchrun's ``GROUP_*`` node layout)."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_size),
            "GROUP_RANK": str(self.cross_rank),
            "GROUP_WORLD_SIZE": str(self.cross_size),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }

    def export_torch_env(self, environ: MutableMapping[str, str] | None = None) -> ClusterEnv:
        """Set the ``env://`` variables in ``environ`` (default ``os.environ``).

        Rank and size variables are always overwritten: they must match Slurm's view.
        ``MASTER_ADDR``/``MASTER_PORT`` already present are kept, so a site or an experiment
        (``environment.environment_variables``) can route the rendezvous over another
        interface or port range. Returns the env with the address actually in effect.
        """
        env = os.environ if environ is None else environ
        addr = env.get("MASTER_ADDR") or self.master_addr
        port = _int_var(env, "MASTER_PORT") if env.get("MASTER_PORT") else self.master_port
        effective = dataclasses.replace(self, master_addr=addr, master_port=port)
        env.update(effective.torch_env())
        return effective


def deterministic_port(job_id: str) -> int:
    """A port in ``PORT_RANGE`` that depends only on the digits of ``job_id``.

    Array and heterogeneous job ids (``123_4``, ``123+1``) keep all their digits, so
    the members of an array get different ports.
    """
    digits = re.sub(r"\D", "", job_id)
    seed = int(digits) if digits else sum(job_id.encode())
    return random.Random(seed).randint(*PORT_RANGE)


def parse_tasks_per_node(value: str) -> list[int]:
    """Expand Slurm's compressed task counts: ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    counts: list[int] = []
    for item in value.split(","):
        match = _TASKS_PER_NODE_ITEM.match(item.strip())
        if match is None:
            raise ValueError(f"cannot parse tasks per node {value!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


def _from_slurm(env: Mapping[str, str]) -> ClusterEnv:
    rank = _int_var(env, "SLURM_PROCID")
    size = _int_var(env, "SLURM_NTASKS", "SLURM_NPROCS", default=1)
    cross_rank = _int_var(env, "SLURM_NODEID", default=0)
    cross_size = _int_var(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", default=1)
    job_id = _first(env, "SLURM_JOB_ID", "SLURM_JOBID")
    nodelist = _first(env, *_NODELIST_VARS)
    cluster = ClusterEnv(
        rank=rank,
        size=size,
        local_rank=_int_var(env, "SLURM_LOCALID", default=0),
        local_size=_local_size(env, cross_rank, size, cross_size),
        cross_rank=cross_rank,
        cross_size=cross_size,
        job_id=job_id,
        nodelist=nodelist,
        master_addr=_rendezvous_host(nodelist, cross_size),
        master_port=deterministic_port(job_id or "0"),
    )
    _check_consistent(cluster)
    return cluster


def _rendezvous_host(nodelist: str | None, nodes: int) -> str:
    if nodes == 1 or not nodelist:
        return LOCAL_ADDR
    return first_host(nodelist)


def _local_size(env: Mapping[str, str], node_id: int, size: int, nodes: int) -> int:
    """Tasks on this node, from the per-node counts, else the uniform count, else size/nodes."""
    compressed = _first(env, *_TASKS_PER_NODE_VARS)
    if compressed:
        counts = parse_tasks_per_node(compressed)
        if node_id < len(counts):
            return counts[node_id]
    if env.get("SLURM_NTASKS_PER_NODE"):
        return _int_var(env, "SLURM_NTASKS_PER_NODE")
    return max(1, size // max(1, nodes))


def _check_consistent(cluster: ClusterEnv) -> None:
    problems = []
    if not 0 <= cluster.rank < cluster.size:
        problems.append(f"rank {cluster.rank} is outside world size {cluster.size}")
    if not 0 <= cluster.local_rank < cluster.local_size:
        problems.append(f"local rank {cluster.local_rank} outside local size {cluster.local_size}")
    if not 0 <= cluster.cross_rank < cluster.cross_size:
        problems.append(f"node id {cluster.cross_rank} outside node count {cluster.cross_size}")
    if problems:
        raise ValueError("inconsistent Slurm environment: " + "; ".join(problems))


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if env.get(name):
            return env[name]
    return None


def _int_var(env: Mapping[str, str], *names: str, default: int | None = None) -> int:
    """The first of ``names`` that is set, as an int; ``default`` when none is."""
    raw = _first(env, *names)
    if raw is None:
        if default is None:
            raise ValueError(f"{names[0]} is not set")
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError(f"{names[0]}={raw!r} is not an integer") from None
