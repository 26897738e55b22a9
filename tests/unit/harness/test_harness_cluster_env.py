"""ClusterEnv from recorded Slurm variable sets, and the env:// variables it exports."""

from __future__ import annotations

import pytest

from hpcdet.harness.cluster_env import (
    PORT_RANGE,
    ClusterEnv,
    deterministic_port,
    parse_tasks_per_node,
)

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
