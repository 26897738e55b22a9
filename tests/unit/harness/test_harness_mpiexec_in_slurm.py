"""Which variables describe a rank when mpiexec runs inside a Slurm job (recorded sets)."""

from __future__ import annotations

from hpcdet.job.cluster_env import ClusterEnv

# Rank 1 of `mpiexec -n 2 --map-by ppr:2:node` in a 1-node Slurm job, as Open MPI 4.1.4
# started it on the dev cluster: the batch step's SLURM_PROCID=0 is inherited, not its own.
MPIEXEC_ONE_NODE_RANK_1 = {
    "SLURM_JOB_ID": "17", "SLURM_JOB_NODELIST": "node1", "SLURM_NNODES": "1",
    "SLURM_NTASKS": "2", "SLURM_TASKS_PER_NODE": "2", "SLURM_NODEID": "0",
    "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
    "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "PMIX_RANK": "1",
}

# Rank 3 of `srun --mpi=pmix` (1 node x 4 tasks): PMIx's rank agrees with Slurm's.
SRUN_PMIX_RANK_3 = {
    "SLURM_JOB_ID": "15", "SLURM_JOB_NODELIST": "node1", "SLURM_NNODES": "1",
    "SLURM_NTASKS": "4", "SLURM_TASKS_PER_NODE": "4", "SLURM_NODEID": "0",
    "SLURM_PROCID": "3", "SLURM_LOCALID": "3", "PMIX_RANK": "3",
}


def test_open_mpis_variables_win_over_the_inherited_slurm_task() -> None:
    env = ClusterEnv.from_environ(MPIEXEC_ONE_NODE_RANK_1)
    assert (env.launcher, env.rank, env.size, env.local_rank) == ("openmpi", 1, 2, 1)


def test_rank_0_under_mpiexec_also_reads_open_mpi() -> None:
    rank0 = {**MPIEXEC_ONE_NODE_RANK_1, "OMPI_COMM_WORLD_RANK": "0",
             "OMPI_COMM_WORLD_LOCAL_RANK": "0", "PMIX_RANK": "0"}
    rank1 = ClusterEnv.from_environ(MPIEXEC_ONE_NODE_RANK_1)
    env = ClusterEnv.from_environ(rank0)
    # Both ranks take the same path, so they agree on the rendezvous.
    assert (env.launcher, env.rank, env.size) == ("openmpi", 0, 2)
    assert (env.master_addr, env.master_port) == (rank1.master_addr, rank1.master_port)


def test_srun_with_pmix_keeps_slurms_complete_view() -> None:
    env = ClusterEnv.from_environ(SRUN_PMIX_RANK_3)
    assert (env.launcher, env.rank, env.size, env.local_rank, env.local_size) == (
        "slurm", 3, 4, 3, 4)


def test_a_pmi_rank_that_contradicts_slurm_wins() -> None:
    hydra = {**SRUN_PMIX_RANK_3, "PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1",
             "MPI_LOCALNRANKS": "2", "SLURM_PROCID": "0"}
    del hydra["PMIX_RANK"]
    env = ClusterEnv.from_environ(hydra)
    assert (env.launcher, env.rank, env.size) == ("pmi", 1, 2)
