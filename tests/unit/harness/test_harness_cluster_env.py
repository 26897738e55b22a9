"""ClusterEnv from recorded Slurm and MPI launcher variable sets, and the env:// variables."""

from __future__ import annotations

import pathlib
import socket

import pytest

from hpcdet.job.cluster_env import (
    PORT_RANGE,
    ClusterEnv,
    deterministic_port,
    parse_tasks_per_node,
)
from hpcdet.job.rank_env import mpi_world
from hpcdet.job.rank_env.placement import first_free_port, port_candidates

# What srun set in each task of a 1-node x 2-task step (trimmed to the variables we read).
ONE_NODE_TWO_TASKS = {
    "SLURM_JOB_ID": "4242",
    "SLURM_JOB_NODELIST": "node1",
    "SLURM_NNODES": "1",
    "SLURM_NTASKS": "2",
    "SLURM_TASKS_PER_NODE": "2",
    "SLURM_NODEID": "0",
    "SLURM_PROCID": "1",
    "SLURM_LOCALID": "1",
}

# Rank 5 of a step over 3 of the job's 4 nodes, 2 tasks each.
STEP_ON_THREE_OF_FOUR_NODES = {
    "SLURM_JOB_ID": "5150",
    "SLURM_JOB_NODELIST": "gpu-[01-04]",
    "SLURM_STEP_NODELIST": "gpu-[02-04]",
    "SLURM_NNODES": "4",
    "SLURM_STEP_NUM_NODES": "3",
    "SLURM_NTASKS": "6",
    "SLURM_TASKS_PER_NODE": "2(x4)",
    "SLURM_STEP_TASKS_PER_NODE": "2(x3)",
    "SLURM_NODEID": "2",
    "SLURM_PROCID": "5",
    "SLURM_LOCALID": "1",
}

# Rank 1 of a 2-node x 1-task step.
TWO_NODES_ONE_TASK = {
    "SLURM_JOB_ID": "977",
    "SLURM_JOB_NODELIST": "x,y",
    "SLURM_NNODES": "2",
    "SLURM_NTASKS": "2",
    "SLURM_TASKS_PER_NODE": "1(x2)",
    "SLURM_NODEID": "1",
    "SLURM_PROCID": "1",
    "SLURM_LOCALID": "0",
}

# Rank 7 of a step with 2 tasks on each of 3 nodes plus 1 on a fourth (a[1-3,5]).
UNEVEN_FOUR_NODES = {
    "SLURM_JOB_ID": "123_4",
    "SLURM_JOB_NODELIST": "a[1-3,5]",
    "SLURM_NNODES": "4",
    "SLURM_NTASKS": "7",
    "SLURM_TASKS_PER_NODE": "2(x3),1",
    "SLURM_NODEID": "3",
    "SLURM_PROCID": "6",
    "SLURM_LOCALID": "0",
}


def test_one_node_two_tasks_rendezvous_over_loopback() -> None:
    env = ClusterEnv.from_environ(ONE_NODE_TWO_TASKS)
    assert (env.rank, env.size, env.local_rank, env.local_size) == (1, 2, 1, 2)
    assert (env.cross_rank, env.cross_size) == (0, 1)
    # "node1" need not resolve (slurm.conf NodeAddr); every rank is on this node anyway.
    assert env.master_addr == "127.0.0.1"
    assert env.job_id == "4242"
    assert not env.is_chief


def test_the_step_nodelist_and_counts_win_over_the_jobs() -> None:
    env = ClusterEnv.from_environ(STEP_ON_THREE_OF_FOUR_NODES)
    assert env.master_addr == "gpu-02"  # the step's first node, not the job's
    assert (env.rank, env.size, env.local_rank, env.local_size) == (5, 6, 1, 2)
    assert (env.cross_rank, env.cross_size) == (2, 3)


def test_job_nodelist_when_no_step_nodelist() -> None:
    env = ClusterEnv.from_environ({**STEP_ON_THREE_OF_FOUR_NODES, "SLURM_STEP_NODELIST": ""})
    assert env.master_addr == "gpu-01"


def test_two_nodes_one_task_each() -> None:
    env = ClusterEnv.from_environ(TWO_NODES_ONE_TASK)
    assert (env.rank, env.size, env.local_rank, env.local_size) == (1, 2, 0, 1)
    assert (env.cross_rank, env.cross_size) == (1, 2)
    assert env.master_addr == "x"


def test_compressed_tasks_per_node_picks_this_nodes_count() -> None:
    env = ClusterEnv.from_environ(UNEVEN_FOUR_NODES)
    assert (env.rank, env.size, env.local_size, env.cross_rank) == (6, 7, 1, 3)
    assert env.master_addr == "a1"
    first_node = ClusterEnv.from_environ({**UNEVEN_FOUR_NODES, "SLURM_NODEID": "1"})
    assert first_node.local_size == 2


def test_ntasks_per_node_when_no_per_node_list() -> None:
    env_vars = {**TWO_NODES_ONE_TASK, "SLURM_TASKS_PER_NODE": "", "SLURM_NTASKS_PER_NODE": "1"}
    assert ClusterEnv.from_environ(env_vars).local_size == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2", [2]), ("2(x3)", [2, 2, 2]), ("2,1", [2, 1]), ("2(x3),1", [2, 2, 2, 1])],
)
def test_parse_tasks_per_node(value: str, expected: list[int]) -> None:
    assert parse_tasks_per_node(value) == expected


def test_parse_tasks_per_node_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="tasks per node"):
        parse_tasks_per_node("2(y3)")


def test_no_slurm_variables_is_a_single_process() -> None:
    env = ClusterEnv.from_environ({})
    assert (env.rank, env.size, env.local_rank, env.local_size) == (0, 1, 0, 1)
    assert (env.cross_rank, env.cross_size) == (0, 1)
    assert env.master_addr == "127.0.0.1"
    assert env.is_chief


def test_every_rank_of_a_job_computes_the_same_port() -> None:
    ranks = [
        ClusterEnv.from_environ({**ONE_NODE_TWO_TASKS, "SLURM_PROCID": str(r)}) for r in (0, 1)
    ]
    assert ranks[0].master_port == ranks[1].master_port
    assert ranks[0].master_port == deterministic_port("4242")


def test_port_is_deterministic_in_range_and_differs_between_jobs() -> None:
    ports = {deterministic_port(str(job)) for job in range(1000, 1050)}
    assert all(PORT_RANGE[0] <= port <= PORT_RANGE[1] for port in ports)
    assert len(ports) > 40  # distinct jobs almost always get distinct ports
    assert deterministic_port("123_4") == deterministic_port("123_4")
    assert deterministic_port("123_4") != deterministic_port("123_5")


def test_a_port_already_held_on_the_node_is_passed_over() -> None:
    first = deterministic_port("4242")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("", first))
        holder.listen()
        chosen = first_free_port(port_candidates("4242"))
    draws = port_candidates("4242")
    assert next(draws) == first
    assert chosen != first and chosen == next(draws)  # the next of the same seeded draws
    assert PORT_RANGE[0] <= chosen <= PORT_RANGE[1]
    assert first_free_port(port_candidates("4242")) == first  # free again once released


def test_a_world_of_one_does_not_take_a_held_port() -> None:
    first = deterministic_port("77")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("", first))
        holder.listen()
        assert ClusterEnv.single_process("77").master_port != first


def test_inconsistent_variables_are_reported() -> None:
    with pytest.raises(ValueError, match="rank 2 is outside world size 2"):
        ClusterEnv.from_environ({**ONE_NODE_TWO_TASKS, "SLURM_PROCID": "2"})
    with pytest.raises(ValueError, match="SLURM_NTASKS='two' is not an integer"):
        ClusterEnv.from_environ({**ONE_NODE_TWO_TASKS, "SLURM_NTASKS": "two"})


def test_export_torch_env_sets_the_env_variables() -> None:
    target: dict[str, str] = {"RANK": "9"}
    env = ClusterEnv.from_environ(ONE_NODE_TWO_TASKS).export_torch_env(target)
    assert target == {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "0",
        "GROUP_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(deterministic_port("4242")),
    }
    assert env.master_addr == "127.0.0.1"


def test_export_torch_env_keeps_a_preset_rendezvous() -> None:
    target = {"MASTER_ADDR": "gpu-02-ib", "MASTER_PORT": "31000"}
    env = ClusterEnv.from_environ(STEP_ON_THREE_OF_FOUR_NODES).export_torch_env(target)
    assert (target["MASTER_ADDR"], target["MASTER_PORT"]) == ("gpu-02-ib", "31000")
    assert (env.master_addr, env.master_port) == ("gpu-02-ib", 31000)
    assert target["RANK"] == "5"


# Rank 1 of ``mpiexec -n 2`` (Open MPI 4.1.4) on one host, as recorded (trimmed).
OPENMPI_ONE_NODE = {
    "OMPI_COMM_WORLD_RANK": "1",
    "OMPI_COMM_WORLD_SIZE": "2",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    "OMPI_COMM_WORLD_NODE_RANK": "1",
    "OMPI_MCA_ess_base_jobid": "1070596097",
    "OMPI_MCA_orte_num_nodes": "1",
    "PMIX_NAMESPACE": "1070596097",
    "PMIX_RANK": "1",
}

# Rank 3 of ``mpiexec -n 4`` over two hosts inside PBS job 12.pbs-server, 2 ranks each.
OPENMPI_TWO_NODES = {
    "OMPI_COMM_WORLD_RANK": "3",
    "OMPI_COMM_WORLD_SIZE": "4",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    "PMIX_NAMESPACE": "1070596097",
    "PMIX_RANK": "3",
    "PBS_JOBID": "12.pbs-server",
}

# Rank 2 of MPICH's Hydra ``mpiexec -n 3`` on one host.
HYDRA_ONE_NODE = {"PMI_RANK": "2", "PMI_SIZE": "3", "MPI_LOCALRANKID": "2",
                  "MPI_LOCALNRANKS": "3", "PBS_JOBID": "77.head"}


@pytest.fixture
def without_mpi4py(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in an image without mpi4py: the branches that need no MPI call."""
    monkeypatch.setattr(mpi_world, "mpi4py_available", lambda: False)


def test_slurm_wins_over_mpi_variables_that_agree() -> None:
    env = ClusterEnv.from_environ({**HYDRA_ONE_NODE, "PMI_RANK": "1", "PMI_SIZE": "2",
                                   **TWO_NODES_ONE_TASK})
    assert (env.launcher, env.rank, env.master_addr) == ("slurm", 1, "x")


def test_open_mpis_variables_win_over_slurms() -> None:
    # Only Open MPI's mpiexec sets them; inside a Slurm job its ranks inherit the SLURM_*
    # of its daemon (see test_harness_mpiexec_in_slurm.py).
    env = ClusterEnv.from_environ({**OPENMPI_ONE_NODE, **TWO_NODES_ONE_TASK})
    assert (env.launcher, env.rank, env.master_addr) == ("openmpi", 1, "127.0.0.1")


def test_openmpi_on_one_node_needs_no_mpi_call(without_mpi4py: None) -> None:
    env = ClusterEnv.from_environ(OPENMPI_ONE_NODE)
    assert env.launcher == "openmpi"
    assert (env.rank, env.size, env.local_rank, env.local_size) == (1, 2, 1, 2)
    # NODE_RANK is Open MPI's rank among the node's processes, not the node's index.
    assert (env.cross_rank, env.cross_size) == (0, 1)
    assert env.master_addr == "127.0.0.1"
    assert env.master_port == deterministic_port("1070596097")  # no job id: the launch's


def test_hydra_pmi_variables_and_the_pbs_job_id_port(without_mpi4py: None) -> None:
    env = ClusterEnv.from_environ(HYDRA_ONE_NODE)
    assert env.launcher == "pmi"
    assert (env.rank, env.size, env.local_rank, env.local_size) == (2, 3, 2, 3)
    assert (env.job_id, env.master_port) == ("77.head", deterministic_port("77"))


def _nodefile(tmp_path: pathlib.Path, hosts: list[str]) -> str:
    path = tmp_path / "nodefile"
    path.write_text("".join(f"{host}\n" for host in hosts))
    return str(path)


def test_pbs_nodefile_gives_rank_0s_host_and_the_node_index(
    tmp_path: pathlib.Path, without_mpi4py: None
) -> None:
    nodefile = _nodefile(tmp_path, ["cn7", "cn7", "cn9", "cn9"])
    env = ClusterEnv.from_environ({**OPENMPI_TWO_NODES, "PBS_NODEFILE": nodefile})
    assert (env.master_addr, env.cross_rank, env.cross_size) == ("cn7", 1, 2)
    assert (env.job_id, env.master_port) == ("12.pbs-server", deterministic_port("12"))
    assert env.nodelist == "cn7,cn9"
    rank_0 = ClusterEnv.from_environ({**OPENMPI_TWO_NODES, "PBS_NODEFILE": nodefile,
                                      "OMPI_COMM_WORLD_RANK": "0",
                                      "OMPI_COMM_WORLD_LOCAL_RANK": "0"})
    assert (rank_0.master_addr, rank_0.cross_rank, rank_0.master_port) == (
        "cn7", 0, env.master_port)


def test_a_hosts_lines_add_up_wherever_they_stand(
    tmp_path: pathlib.Path, without_mpi4py: None
) -> None:
    # Open MPI merges a host's lines: cn7 has slots 0-1 and cn9 2-3, as in a grouped file.
    nodefile = _nodefile(tmp_path, ["cn7", "cn9", "cn7", "cn9"])
    env = ClusterEnv.from_environ({**OPENMPI_TWO_NODES, "PBS_NODEFILE": nodefile})
    assert (env.master_addr, env.cross_rank, env.cross_size) == ("cn7", 1, 2)


@pytest.mark.parametrize(
    "hosts",
    [
        ["cn7", "cn7", "cn7", "cn9"],  # rank 3 alone on cn9, but the launcher says local 1 of 2
        ["cn7", "cn7", "cn9"],  # fewer slots than ranks
    ],
)
def test_a_nodefile_that_disagrees_with_the_launcher_is_not_trusted(
    tmp_path: pathlib.Path, hosts: list[str], without_mpi4py: None
) -> None:
    environ = {**OPENMPI_TWO_NODES, "PBS_NODEFILE": _nodefile(tmp_path, hosts)}
    with pytest.raises(ValueError, match="install mpi4py"):
        ClusterEnv.from_environ(environ)


def test_several_nodes_without_nodefile_or_mpi4py_is_an_error_that_names_the_fix(
    without_mpi4py: None,
) -> None:
    with pytest.raises(ValueError, match="openmpi launcher.*install mpi4py.*MASTER_ADDR"):
        ClusterEnv.from_environ({**OPENMPI_TWO_NODES, "PBS_NODEFILE": "/nonexistent"})


def test_a_preset_master_addr_stands_in_for_mpi4py(without_mpi4py: None) -> None:
    env = ClusterEnv.from_environ({**OPENMPI_TWO_NODES, "MASTER_ADDR": "10.0.0.7"})
    assert (env.master_addr, env.cross_rank, env.cross_size) == ("10.0.0.7", 1, 2)


def test_pmix_rank_alone_is_not_enough_without_mpi4py(without_mpi4py: None) -> None:
    with pytest.raises(ValueError, match="pmix launcher"):
        ClusterEnv.from_environ({"PMIX_RANK": "0", "PMIX_NAMESPACE": "ns"})


def test_inconsistent_mpi_variables_are_reported(without_mpi4py: None) -> None:
    with pytest.raises(ValueError, match="inconsistent openmpi environment: rank 2 is outside"):
        ClusterEnv.from_environ({**OPENMPI_ONE_NODE, "OMPI_COMM_WORLD_RANK": "2"})
    with pytest.raises(ValueError, match="PMI_SIZE='x' is not an integer"):
        ClusterEnv.from_environ({**HYDRA_ONE_NODE, "PMI_SIZE": "x"})


def test_pbs_job_id_seeds_a_single_process() -> None:
    env = ClusterEnv.from_environ({"PBS_JOBID": "12.vm"})
    assert (env.job_id, env.master_port, env.launcher) == ("12.vm", deterministic_port("12"),
                                                            "single")
