"""Choosing a rendezvous address every rank can reach."""

from __future__ import annotations

import pytest

from hpcdet.errors import HpcdetError
from hpcdet.job.cluster_env import ClusterEnv
from hpcdet.job.process_group import check_resolvable, reachable_rendezvous

# Rank 1 of a 2-node job on a cluster whose node names are not host names (the dev
# cluster's slurm.conf: NodeName=node1 NodeHostname=vm NodeAddr=127.0.0.1).
UNRESOLVABLE_NODES = {
    "SLURM_JOB_ID": "88",
    "SLURM_JOB_NODELIST": "no-such-node-hpcdet[1-2].invalid",
    "SLURM_NNODES": "2",
    "SLURM_NTASKS": "2",
    "SLURM_TASKS_PER_NODE": "1(x2)",
    "SLURM_NODEID": "1",
    "SLURM_PROCID": "1",
    "SLURM_LOCALID": "0",
    "SLURM_LAUNCH_NODE_IPADDR": "10.1.2.3",
}


def test_unresolvable_first_node_falls_back_to_the_launch_node_address() -> None:
    cluster = ClusterEnv.from_environ(UNRESOLVABLE_NODES)
    assert reachable_rendezvous(cluster, UNRESOLVABLE_NODES).master_addr == "10.1.2.3"


def test_a_resolvable_first_node_is_kept() -> None:
    env = {**UNRESOLVABLE_NODES, "SLURM_JOB_NODELIST": "localhost,no-such-node.invalid"}
    cluster = ClusterEnv.from_environ(env)
    assert reachable_rendezvous(cluster, env).master_addr == "localhost"


def test_a_users_master_addr_is_kept() -> None:
    env = {**UNRESOLVABLE_NODES, "MASTER_ADDR": "10.9.9.9"}
    cluster = ClusterEnv.from_environ(env)
    assert reachable_rendezvous(cluster, env) == cluster


def test_no_fallback_when_the_step_does_not_start_on_the_batch_host() -> None:
    env = {**UNRESOLVABLE_NODES, "SLURM_STEP_NODELIST": "no-such-node-hpcdet2.invalid"}
    cluster = ClusterEnv.from_environ({**env, "SLURM_NNODES": "2"})
    assert reachable_rendezvous(cluster, env).master_addr == "no-such-node-hpcdet2.invalid"
    with pytest.raises(HpcdetError, match="does not resolve; set MASTER_ADDR"):
        check_resolvable(cluster)


def test_a_single_process_needs_no_rendezvous() -> None:
    cluster = ClusterEnv.from_environ({})
    assert reachable_rendezvous(cluster, {}) is cluster
