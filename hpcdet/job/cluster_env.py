"""Where this process sits in the job: rank, world size, node, rendezvous address.

The launcher that started the ranks describes it in each rank's variables; the first of
these that is present wins (except that the MPI variables win over Slurm's where they
disagree: ``mpiexec`` inside a Slurm job, whose ranks inherit its daemons' ``SLURM_*``):

1. an ``srun`` task (``SLURM_PROCID``): Slurm's per-task variables
   (:mod:`hpcdet.job.rank_env.slurm`);
2. ``mpiexec``/``mpirun`` (:mod:`hpcdet.job.rank_env.mpi`): Open MPI's
   ``OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}``, MPICH/Hydra's (and Intel MPI's)
   ``PMI_RANK``/``PMI_SIZE``/``MPI_LOCALRANKID``/``MPI_LOCALNRANKS``, or PMIx's
   ``PMIX_RANK``, e.g. under PBS, which has no ``srun``;
3. nothing: a single process (a laptop, a unit test).

Every rank computes the same rendezvous on its own where the variables allow it:

* ``MASTER_ADDR`` is the loopback address when all ranks share one node (loopback needs no
  name resolution), else the first host of the step's node list (Slurm; rank 0 runs there
  with the default block distribution) or of ``$PBS_NODEFILE`` (``mpiexec`` fills each
  host's slots in turn).
* ``MASTER_PORT`` is drawn from ``random.Random(<job id digits>)`` in 20000-32767 (below the
  kernel's ephemeral port range, which outgoing connections use): the same on every rank
  of a job, and most likely different for two jobs sharing a first node. ``PBS_JOBID``
  ``12.server`` seeds with 12; an ``mpiexec`` outside a batch job uses its launch id.

Where an MPI launch's variables leave something open (ranks on several nodes without a
usable ``$PBS_NODEFILE``, PMIx's rank without a size), MPI itself answers through mpi4py
(:mod:`hpcdet.job.rank_env.mpi_world`): rank 0 broadcasts its address and port. Without
mpi4py, a ``MASTER_ADDR`` set by the user is used, else it is an error that says so.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

from hpcdet.job.rank_env import mpi_world
from hpcdet.job.rank_env.mpi import assume_block_layout, mpi_placement
from hpcdet.job.rank_env.placement import (
    LOCAL_ADDR,
    PORT_RANGE,
    Placement,
    deterministic_port,
    first_free_port,
    first_var,
    int_var,
    port_candidates,
)
from hpcdet.job.rank_env.slurm import parse_tasks_per_node, slurm_placement

__all__ = ["LOCAL_ADDR", "PORT_RANGE", "ClusterEnv", "deterministic_port", "parse_tasks_per_node"]


@dataclass(frozen=True)
class ClusterEnv:
    """One rank's place in the job, as its launcher describes it.

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
    # Which variables described the rank: slurm, openmpi, pmi, pmix or single.
    launcher: str = "single"

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ClusterEnv:
        """Read the launcher's variables from ``environ`` (default ``os.environ``).

        Under ``mpiexec`` this may call MPI (collectively, on every rank) for what the
        variables leave open; see the module's docstring.
        """
        env = os.environ if environ is None else environ
        placement = _launcher_placement(env)
        if placement is None:
            return cls.single_process(first_var(env, "SLURM_JOB_ID", "PBS_JOBID"))
        if not placement.complete:
            placement = _complete(placement, env)
        return _from_placement(placement)

    @classmethod
    def single_process(cls, job_id: str | None = None) -> ClusterEnv:
        """A world of one: rank 0 of 1 on this host."""
        # No other rank needs to agree on the port: the first free one drawn from the job
        # (or the pid) will do.
        port = first_free_port(port_candidates(job_id or str(os.getpid())))
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

        Rank and size variables are always overwritten: they must match the launcher's view.
        ``MASTER_ADDR``/``MASTER_PORT`` already present are kept, so a site or an experiment
        (``environment.environment_variables``) can route the rendezvous over another
        interface or port range. Returns the env with the address actually in effect.
        """
        env = os.environ if environ is None else environ
        addr = env.get("MASTER_ADDR") or self.master_addr
        port = int_var(env, "MASTER_PORT") if env.get("MASTER_PORT") else self.master_port
        effective = dataclasses.replace(self, master_addr=addr, master_port=port)
        env.update(effective.torch_env())
        return effective


def _launcher_placement(env: Mapping[str, str]) -> Placement | None:
    """Slurm's view, unless an ``mpiexec`` started this rank.

    ``mpiexec`` inside a Slurm allocation starts its daemons with ``srun``, one per node, so
    its ranks inherit the daemon's ``SLURM_PROCID``/``SLURM_NTASKS``; the MPI variables are
    the rank's own. Only Open MPI's launcher exports ``OMPI_COMM_WORLD_*``, so those always
    win (every rank then takes the same path); other MPI variables win where they contradict
    Slurm's. Under ``srun`` (``--mpi=pmix`` too) both agree and Slurm's complete view is kept.
    """
    slurm, mpi = slurm_placement(env), mpi_placement(env)
    if slurm is None or mpi is None:
        return slurm or mpi
    agree = mpi.rank == slurm.rank and mpi.size in (None, slurm.size)
    return slurm if agree and mpi.launcher != "openmpi" else mpi


def _complete(placement: Placement, env: Mapping[str, str]) -> Placement:
    """Fill what an MPI launch's variables left open: from MPI, else from a preset address."""
    if mpi_world.mpi4py_available():
        return mpi_world.complete_from_mpi(placement)
    preset = env.get("MASTER_ADDR")
    guessed = assume_block_layout(placement, preset) if preset else None
    if guessed is None:
        raise ValueError(
            f"the {placement.launcher} launcher's variables do not say where rank 0 runs or how "
            "many ranks there are; install mpi4py in the image (or set MASTER_ADDR in the "
            "experiment's environment.environment_variables)"
        )
    return guessed


def _from_placement(p: Placement) -> ClusterEnv:
    """The complete placement as a checked :class:`ClusterEnv`."""
    port = p.master_port if p.master_port is not None else deterministic_port(p.port_key or "0")
    cluster = ClusterEnv(
        rank=p.rank,
        size=_known(p.size, "size"),
        local_rank=_known(p.local_rank, "local rank"),
        local_size=_known(p.local_size, "local size"),
        cross_rank=_known(p.cross_rank, "node index"),
        cross_size=_known(p.cross_size, "node count"),
        job_id=p.job_id,
        nodelist=p.nodelist,
        master_addr=p.master_addr or LOCAL_ADDR,
        master_port=port,
        launcher=p.launcher,
    )
    _check_consistent(cluster)
    return cluster


def _known(value: int | None, what: str) -> int:
    # _complete fills every field or raises, so None here is a bug in a launcher module.
    if value is None:
        raise ValueError(f"the launcher's {what} is unknown")
    return value


def _check_consistent(cluster: ClusterEnv) -> None:
    problems = []
    if not 0 <= cluster.rank < cluster.size:
        problems.append(f"rank {cluster.rank} is outside world size {cluster.size}")
    if not 0 <= cluster.local_rank < cluster.local_size:
        problems.append(f"local rank {cluster.local_rank} outside local size {cluster.local_size}")
    if not 0 <= cluster.cross_rank < cluster.cross_size:
        problems.append(f"node id {cluster.cross_rank} outside node count {cluster.cross_size}")
    if problems:
        raise ValueError(f"inconsistent {cluster.launcher} environment: " + "; ".join(problems))
