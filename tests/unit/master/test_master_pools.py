"""Resource pools built from recorded partitions and master.yaml, the snapshot, choosing one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.partitions import NodeInfo, PartitionInfo
from hpcdet.errors import ConfigError
from hpcdet.master.db import make_engine, make_session_factory, session_scope
from hpcdet.master.queue.pools import (
    Pool,
    build_pools,
    pool_for_config,
    pools_from_snapshot,
    read_pools,
    resolve_pool,
    settings_pool,
)
from hpcdet.master.queue.snapshots import POOLS, store_snapshot
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings, load_settings
from hpcdet.master.settings.pools import (
    CustomPool,
    PartitionOverride,
    PriorityBand,
    SlurmDefaults,
)

CPU_NODE = NodeInfo("node1", "idle", 4, 1, 0, 0)
GPU_NODES = (NodeInfo("node2", "mixed", 4, 1, 2, 2, ("a100",)),
             NodeInfo("node3", "drained", 8, 0, 2, 0, ("a100",)))
BATCH = PartitionInfo("batch", True, (CPU_NODE, *GPU_NODES), jobs_pending=3)
DEBUG = PartitionInfo("debug", False, (CPU_NODE,), jobs_pending=0)
BANDS = (PriorityBand(1, 99, qos="normal"),)

# The same cluster as the dev cluster's sinfo prints it (see test_dispatcher_partitions).
SINFO = """\
batch*|node1|idle|4|1/3/0/4|(null)|gpu:0|
debug|node1|idle|4|1/3/0/4|(null)|gpu:0|
batch*|node2|mixed|4|1/3/0/4|gpu:a100:2(S:0)|gpu:a100:2(IDX:0-1)|
batch*|node3|drained|8|0/8/0/8|gpu:a100:2(S:0)|gpu:a100:0(IDX:N/A)|
"""


def settings_with(**rm: Any) -> MasterSettings:
    return MasterSettings(resource_manager=replace(ResourceManagerSettings(), **rm))


def pools_of(settings: MasterSettings,
             partitions: tuple[PartitionInfo, ...] = (BATCH, DEBUG)) -> dict[str, Pool]:
    return {pool.name: pool for pool in build_pools(partitions, settings)}


def test_every_partition_is_a_pool_with_slurms_counts() -> None:
    pools = pools_of(settings_with())
    assert list(pools) == ["batch", "debug"]
    batch = pools["batch"]
    assert (batch.partition, batch.slot_type, batch.is_custom) == ("batch", "cuda", False)
    assert (batch.nodes_up, batch.nodes_total) == (2, 3)
    assert (batch.slots_used, batch.slots_total) == (2, 4)  # GPUs
    assert (batch.gpus_per_node, batch.cpus_per_node, batch.gpu_types) == (2, 8, ("a100",))
    assert batch.jobs_pending == 3


def test_a_partition_without_gpus_counts_cpus() -> None:
    debug = pools_of(settings_with())["debug"]
    assert debug.slot_type == "cpu"
    assert (debug.slots_used, debug.slots_total, debug.gpus_per_node) == (1, 4, 0)


@pytest.mark.parametrize(("global_type", "override_type", "expected"), [
    (None, None, "cuda"), ("cpu", None, "cpu"), (None, "cpu", "cpu"),
    ("cpu", "rocm", "rocm"), ("rocm", None, "rocm"),
])  # fmt: skip
def test_slot_type_override_then_global_then_gpus(global_type: str | None,
                                                  override_type: str | None,
                                                  expected: str) -> None:
    overrides = {"batch": PartitionOverride(slot_type=override_type)}
    pool = pools_of(settings_with(slot_type=global_type, partition_overrides=overrides))["batch"]
    assert pool.slot_type == expected


def test_cpu_slot_type_on_gpu_nodes_counts_cpus() -> None:
    pool = pools_of(settings_with(slot_type="cpu"))["batch"]
    assert (pool.slots_used, pool.slots_total) == (2, 16)


def test_overrides_match_case_insensitively_and_append_sbatch_args() -> None:
    settings = settings_with(
        slurm_defaults=SlurmDefaults(("--mem-per-cpu=1G",), gpu_type="v100"),
        partition_overrides={"batch": PartitionOverride(
            description="CPU and GPU nodes", slurm=SlurmDefaults(("--mem-per-cpu=2G",), "a100"),
            priority_bands=BANDS)})
    partition = replace(BATCH, name="Batch")
    pool = pools_of(settings, (partition, DEBUG))["Batch"]
    assert pool.description == "CPU and GPU nodes"
    assert pool.sbatch_args == ("--mem-per-cpu=1G", "--mem-per-cpu=2G")
    assert pool.gpu_type == "a100" and pool.priority_bands == BANDS
    debug = pools_of(settings)["debug"]
    assert (debug.sbatch_args, debug.gpu_type, debug.priority_bands) == (
        ("--mem-per-cpu=1G",), "v100", None)


def test_a_custom_pool_is_carved_out_of_its_partition() -> None:
    settings = settings_with(
        slurm_defaults=SlurmDefaults(("--mem-per-cpu=1G",)),
        partition_overrides={"batch": PartitionOverride(
            slurm=SlurmDefaults(("--hint=nomultithread",)), priority_bands=BANDS)},
        resource_pools=(CustomPool("gpu-only", "batch", "the GPU nodes of batch",
                                   SlurmDefaults(("--exclude=node1",), gpu_type="a100")),))
    pool = pools_of(settings)["gpu-only"]
    assert (pool.partition, pool.is_custom, pool.description) == (
        "batch", True, "the GPU nodes of batch")
    assert pool.sbatch_args == ("--mem-per-cpu=1G", "--hint=nomultithread", "--exclude=node1")
    assert (pool.nodes_total, pool.nodes_up, pool.slots_total, pool.cpus_per_node) == (2, 1, 4, 8)
    assert pool.slot_type == "cuda" and pool.gpu_type == "a100"
    assert pool.priority_bands == BANDS  # its partition's, having none of its own
    assert pool.jobs_pending == 3


def test_a_custom_pool_of_cpu_nodes_only_is_cpu() -> None:
    custom = CustomPool("cpu-only", "batch", slurm=SlurmDefaults(("-w node1",)))
    pool = pools_of(settings_with(resource_pools=(custom,)))["cpu-only"]
    assert (pool.slot_type, pool.nodes_total, pool.slots_total) == ("cpu", 1, 4)


def test_a_custom_pool_on_a_missing_partition_is_listed_empty() -> None:
    custom = CustomPool("ghost", "nowhere", "not there", priority_bands=BANDS)
    pool = pools_of(settings_with(resource_pools=(custom,)))["ghost"]
    assert (pool.partition, pool.nodes_total, pool.slots_total) == ("nowhere", 0, 0)


def test_defaults_are_slurms_unless_master_yaml_names_them() -> None:
    pools = pools_of(settings_with())
    assert [p.name for p in pools.values() if p.default_compute] == ["batch"]
    assert [p.name for p in pools.values() if p.default_aux] == ["batch"]
    pools = pools_of(settings_with(default_compute_resource_pool="DEBUG",
                                   default_aux_resource_pool="debug"))
    assert pools["debug"].default_compute and pools["debug"].default_aux
    assert not pools["batch"].default_compute


def test_the_snapshot_round_trips_through_json(recorded_runner: Any) -> None:
    settings = settings_with(partition_overrides={"batch": PartitionOverride(
        priority_bands=BANDS, slurm=SlurmDefaults(("--exclusive",)))})
    runner = recorded_runner({"sinfo": SINFO, "squeue": "batch\n"})
    data = read_pools(SlurmBackend(runner=runner), settings)
    pools = pools_from_snapshot(json.loads(json.dumps(data)))
    assert pools == pools_of(settings, (replace(BATCH, jobs_pending=1), DEBUG))
    assert pools["batch"].priority_bands == BANDS


def test_read_pools_uses_the_backends_runner_and_commands(recorded_runner: Any) -> None:
    runner = recorded_runner({"sinfo": SINFO})

    read_pools(SlurmBackend(runner=runner, squeue="/opt/bin/squeue"), settings_with())
    assert [call[0] for call in runner.calls] == ["sinfo", "/opt/bin/squeue"]


def test_resolve_pool_by_name_case_or_default() -> None:
    settings = settings_with(default_aux_resource_pool="debug")
    pools = pools_of(settings)
    assert resolve_pool(settings, pools, "batch").name == "batch"
    assert resolve_pool(settings, pools, "DEBUG").name == "debug"
    assert resolve_pool(settings, pools, None).name == "batch"
    assert resolve_pool(settings, pools, None, aux=True).name == "debug"


def test_an_unknown_pool_names_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_pool(settings_with(), pools_of(settings_with()), "gpus", where="<config>.x")
    assert caught.value.errors == ["<config>.x: unknown resource pool 'gpus' (known: batch, "
                                   "debug)"]


def test_no_default_anywhere_is_an_error() -> None:
    pools = pools_of(settings_with(), (replace(BATCH, is_default=False), DEBUG))
    with pytest.raises(ConfigError, match="none given, and neither master.yaml nor Slurm"):
        resolve_pool(settings_with(), pools, None)


def test_settings_pool_without_a_snapshot() -> None:
    settings = settings_with(
        slot_type=None, default_compute_resource_pool="batch",
        partition_overrides={"batch": PartitionOverride(slot_type="cuda")},
        resource_pools=(CustomPool("gpu-only", "batch", slurm=SlurmDefaults(("-x n1",))),))
    assert settings_pool(settings).slot_type == "cuda"
    assert settings_pool(settings).partition == "batch"
    custom = settings_pool(settings, "GPU-ONLY")
    assert (custom.name, custom.partition, custom.sbatch_args) == ("gpu-only", "batch",
                                                                  ("-x n1",))
    assert settings_pool(settings, "debug").slot_type == "cpu"
    assert settings_pool(settings_with()).partition is None  # Slurm's default partition
    assert settings_pool(settings_with(slot_type="rocm"), "x").slot_type == "rocm"


def test_pool_for_config_reads_the_snapshot(migrated_db_url: str) -> None:
    engine = make_engine(migrated_db_url)
    sessions = make_session_factory(engine)
    settings = settings_with()
    config = {"resources": {"resource_pool": "debug"}}
    try:
        assert pool_for_config(sessions, settings, config).nodes_total == 0  # no snapshot yet
        data = {"pools": [p.to_json() for p in build_pools((BATCH, DEBUG), settings)]}
        with session_scope(sessions) as session:
            store_snapshot(session, POOLS, data)
        assert pool_for_config(sessions, settings, config).nodes_total == 1
        with session_scope(sessions) as session:
            assert pool_for_config(session, settings, {}).name == "batch"
            with pytest.raises(ConfigError, match=r"<config>.resources.resource_pool: unknown"):
                pool_for_config(session, settings, {"resources": {"resource_pool": "x"}})
    finally:
        engine.dispose()


def test_a_cpu_only_trial_gets_the_default_aux_pool(migrated_db_url: str) -> None:
    # As in Determined: slots_per_trial 0 without resource_pool runs in the aux pool.
    engine = make_engine(migrated_db_url)
    sessions = make_session_factory(engine)
    settings = settings_with(default_compute_resource_pool="batch",
                             default_aux_resource_pool="debug")
    cpu_only = {"resources": {"slots_per_trial": 0}}
    try:
        assert pool_for_config(sessions, settings, cpu_only).name == "debug"  # no snapshot
        data = {"pools": [p.to_json() for p in build_pools((BATCH, DEBUG), settings)]}
        with session_scope(sessions) as session:
            store_snapshot(session, POOLS, data)
        assert pool_for_config(sessions, settings, cpu_only).name == "debug"
        assert pool_for_config(sessions, settings, {"resources": {"slots_per_trial": 1}}
                               ).name == "batch"
        named = {"resources": {"slots_per_trial": 0, "resource_pool": "batch"}}
        assert pool_for_config(sessions, settings, named).name == "batch"
    finally:
        engine.dispose()


@pytest.fixture
def recorded_runner() -> Any:
    """A runner answering each command with recorded text (by argv[0]'s base name)."""

    class Runner:
        def __init__(self, answers: dict[str, str]) -> None:
            self.answers = answers
            self.calls: list[tuple[str, ...]] = []

        def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str:
            self.calls.append(tuple(argv))
            return self.answers.get(str(argv[0]).rsplit("/", 1)[-1], "")

    return Runner


def _settings_from(tmp_path: Path, text: str) -> MasterSettings:
    path = tmp_path / "master.yaml"
    path.write_text(text)
    return load_settings(path, environ={})


def test_a_pbs_master_takes_its_pools_qsub_options_from_the_pbs_block(tmp_path: Path) -> None:
    text = ("resource_manager:\n  type: pbs\n  task_container_defaults:\n"
            "    slurm: {sbatch_args: ['--mem=1G']}\n"
            "    pbs: {pbsbatch_args: ['-l mem=1gb']}\n")
    pools = pools_of(_settings_from(tmp_path, text))
    assert pools["batch"].sbatch_args == ("-l mem=1gb",)
    slurm = _settings_from(tmp_path, text.replace("type: pbs", "type: slurm"))
    assert pools_of(slurm)["batch"].sbatch_args == ("--mem=1G",)


def test_a_pools_qsub_options_are_checked_as_qsub_options(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"task_container_defaults\.pbs\.pbsbatch_args"):
        _settings_from(tmp_path, "resource_manager:\n  task_container_defaults:\n"
                                 "    pbs: {pbsbatch_args: ['-q express']}\n")
