"""Determined's slot table for Slurm, from a trial's config and its resource pool.

Every row: cuda/rocm with TRES (``--gpus`` / ``--gpus-per-node``), with GRES only
(``--gres``), with neither, and cpu; the allocation always has one task per node holding
its ranks' CPUs, and the srun step one rank per slot.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from hpcdet.dispatcher import JobSpec
from hpcdet.dispatcher.slurm.backend import SlurmBackend, gpu_directives
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.errors import ConfigError
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.slots import slot_layout
from hpcdet.master.scheduling.backend import gpu_request
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec, slot_mapping
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

RUN = TrialRun(7, 42, 1, "/shared/jobs/exp-7/trial-42")
GPU_POOL = Pool("batch", "batch", slot_type="cuda", gpus_per_node=2, cpus_per_node=4)
CPU_POOL = Pool("debug", "debug", slot_type="cpu", cpus_per_node=4)


def settings_with(**rm: Any) -> MasterSettings:
    return MasterSettings(resource_manager=replace(ResourceManagerSettings(), **rm))


def config(slots: int, per_node: int | None = None, **slurm: Any) -> dict[str, Any]:
    return {"resources": {"slots_per_trial": slots},
            "slurm": {"slots_per_node": per_node, "sbatch_args": [], **slurm}}


def layout(settings: MasterSettings, conf: dict[str, Any],
           pool: Pool) -> tuple[int, int, int, dict[str, str]]:
    """(nodes, ranks per node, CPUs per node, Slurm's GPU options) of the mapping."""
    m = slot_mapping(settings, conf, pool)
    spec = JobSpec(name="x", job_dir="/x", nodes=m.nodes, ranks_per_node=m.ranks_per_node,
                   command=("x",), cpus_per_rank=m.cpus_per_rank, gpus_per_node=m.gpus_per_node,
                   gpu_type=m.gpu_type)
    options = gpu_directives(spec, gpu_request(settings))
    return m.nodes, m.ranks_per_node, m.ranks_per_node * m.cpus_per_rank, {
        key: str(value) for key, value in options.items()}


TRES = settings_with()
GRES = settings_with(tres_supported=False)
NEITHER = settings_with(tres_supported=False, gres_supported=False)


@pytest.mark.parametrize(("settings", "conf", "pool", "expected"), [
    # cuda + TRES: --gpus=N on one node, --gpus-per-node over an exact count of several
    (TRES, config(1), GPU_POOL, (1, 1, 1, {"gpus": "1"})),
    (TRES, config(2), GPU_POOL, (1, 2, 2, {"gpus": "2"})),
    (TRES, config(4), GPU_POOL, (2, 2, 2, {"gpus-per-node": "2"})),
    (TRES, config(4, 2), GPU_POOL, (2, 2, 2, {"gpus-per-node": "2"})),
    (TRES, config(4, 1), GPU_POOL, (4, 1, 1, {"gpus-per-node": "1"})),
    (TRES, config(4), replace(GPU_POOL, gpus_per_node=0), (1, 4, 4, {"gpus": "4"})),
    (TRES, config(4, gpu_type="a100"), GPU_POOL, (2, 2, 2, {"gpus-per-node": "a100:2"})),
    (TRES, config(2, 1, gpu_type="a100"), GPU_POOL, (2, 1, 1, {"gpus-per-node": "a100:1"})),
    # rocm is a GPU slot type like cuda
    (TRES, config(4), replace(GPU_POOL, slot_type="rocm"), (2, 2, 2, {"gpus-per-node": "2"})),
    # cuda, GRES only: --gres=gpu[:type]:spn on ceil(N/spn) nodes
    (GRES, config(4), GPU_POOL, (2, 2, 2, {"gres": "gpu:2"})),
    (GRES, config(4, 1), GPU_POOL, (4, 1, 1, {"gres": "gpu:1"})),
    (GRES, config(2, gpu_type="a100"), GPU_POOL, (1, 2, 2, {"gres": "gpu:a100:2"})),
    # cuda, neither: no GPU option (the site makes sure the nodes have GPUs)
    (NEITHER, config(4), GPU_POOL, (2, 2, 2, {})),
    # cpu: --cpus-per-task=spn, N/spn nodes; without slots_per_node all on one node
    (TRES, config(4), CPU_POOL, (1, 4, 4, {})),
    (TRES, config(4, 2), CPU_POOL, (2, 2, 2, {})),
    (GRES, config(8, 4, gpu_type="a100"), CPU_POOL, (2, 4, 4, {})),
    # 0 slots (CPU-only, as in Determined): one rank on one node and no GPU in any pool
    (TRES, config(0), GPU_POOL, (1, 1, 1, {})),
    (TRES, config(0, 2, gpu_type="a100"), GPU_POOL, (1, 1, 1, {})),
    (GRES, config(0), GPU_POOL, (1, 1, 1, {})),
    (TRES, config(0), CPU_POOL, (1, 1, 1, {})),
])  # fmt: skip
def test_slot_table(settings: MasterSettings, conf: dict[str, Any], pool: Pool,
                    expected: tuple[int, int, int, dict[str, str]]) -> None:
    assert layout(settings, conf, pool) == expected


def test_the_experiments_gpu_type_wins_over_the_pools() -> None:
    pool = replace(GPU_POOL, gpu_type="v100")
    assert layout(TRES, config(2), pool)[3] == {"gpus": "v100:2"}
    assert layout(TRES, config(2, gpu_type="a100"), pool)[3] == {"gpus": "a100:2"}


def test_slots_that_do_not_split_over_gpu_nodes_are_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        slot_layout(config(3), GPU_POOL)
    [message] = caught.value.errors
    assert message.startswith("<config>.resources.slots_per_trial: 3 GPUs do not split evenly")
    assert "resource pool batch" in message and "slurm.slots_per_node (e.g. 1)" in message


def test_slots_per_node_must_divide_the_slots() -> None:
    with pytest.raises(ConfigError, match="6 is not a multiple of slurm.slots_per_node \\(4\\)"):
        slot_layout(config(6, 4), GPU_POOL)


def test_without_a_pool_all_slots_go_on_one_node() -> None:
    assert slot_layout(config(6)) == (1, 6)
    assert slot_layout(config(6, 3)) == (2, 3)


@pytest.mark.parametrize("gpu_type", ["a100:2", "a,b", "x y"])
def test_a_gpu_type_that_would_change_the_request_is_refused(gpu_type: str) -> None:
    with pytest.raises(ConfigError, match="<config>.slurm.gpu_type: .* is not a GPU type"):
        slot_mapping(TRES, config(2, gpu_type=gpu_type), GPU_POOL)
    with pytest.raises(ConfigError, match="gpu_type of resource pool batch"):
        slot_mapping(TRES, config(2), replace(GPU_POOL, gpu_type=gpu_type))


def test_the_job_spec_follows_the_pool() -> None:
    pool = replace(GPU_POOL, name="gpu-only", partition="batch", is_custom=True,
                   sbatch_args=("--exclude=node1", "--mem-per-cpu=1G"))
    conf = config(4, sbatch_args=["--mem-per-cpu=2G"])
    spec = build_job_spec(TRES, conf, RUN, pool, files=LOCAL)
    assert (spec.nodes, spec.ranks_per_node, spec.cpus_per_rank) == (2, 2, 1)
    assert (spec.gpus_per_node, spec.gpu_type) == (2, None)
    assert spec.partition == "batch"
    # The pool's first: sbatch takes the last of a repeated option, so the user's win.
    assert spec.sbatch_args == ("--exclude=node1", "--mem-per-cpu=1G", "--mem-per-cpu=2G")
    assert spec.environment["DET_SLOT_TYPE"] == "cuda"


def test_a_cpu_pool_gives_cpu_slots() -> None:
    spec = build_job_spec(TRES, config(2), RUN, CPU_POOL, files=LOCAL)
    assert spec.environment["DET_SLOT_TYPE"] == "cpu"
    assert spec.gpus_per_node == 0
    assert (spec.nodes, spec.ranks_per_node, spec.cpus_per_rank) == (1, 2, 1)


@pytest.mark.parametrize(("pool", "use_gpus", "image"), [
    (GPU_POOL, True, "/images/gpu.sif"), (CPU_POOL, False, "/images/cpu.sif")])
def test_the_container_follows_the_pools_slot_type(pool: Pool, use_gpus: bool,
                                                    image: str) -> None:
    # The images are only named here: the master does not look for them.
    settings = settings_with(container_run_type="apptainer", container_path_checks=False)
    conf = {**config(1), "environment": {"image": {"gpu": "/images/gpu.sif",
                                                   "cpu": "/images/cpu.sif"}},
            "checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt"}}
    container = build_job_spec(settings, conf, RUN, pool, files=LOCAL).container
    assert (container.use_gpus, container.image) == (use_gpus, image)


def test_a_cpu_only_trial_in_a_gpu_pool_asks_for_no_gpu() -> None:
    settings = settings_with(container_run_type="apptainer", container_path_checks=False)
    conf = {**config(0, sbatch_args=["-c 3"]),
            "environment": {"image": {"cuda": "/images/gpu.sif", "cpu": "/images/cpu.sif"}},
            "checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt"}}
    spec = build_job_spec(settings, conf, RUN, GPU_POOL, files=LOCAL)
    assert (spec.nodes, spec.ranks_per_node, spec.cpus_per_rank) == (1, 1, 3)
    assert (spec.gpus_per_node, spec.gpu_type) == (0, None)
    assert spec.environment["DET_SLOT_TYPE"] == "cpu"
    assert (spec.container.use_gpus, spec.container.image) == (False, "/images/cpu.sif")
    script = SlurmBackend().render(spec).script
    assert "--gpus" not in script and "--gres" not in script and "--nv" not in script
    assert "--nodes=1 --ntasks=1 --ntasks-per-node=1 --cpus-per-task=3" in script


def test_a_cpu_only_trial_leaves_out_the_pools_gpu_options() -> None:
    # sbatch refuses --mem-per-gpu in a job without GPUs; the user's own args are kept.
    pool = replace(GPU_POOL, sbatch_args=("--mem-per-gpu=16G", "--cpus-per-gpu 4",
                                          "--mem-per-g=8G", "--gpu-bind=closest",
                                          "--exclude=node1", "--gres=nvme:1"))
    spec = build_job_spec(TRES, config(0, sbatch_args=["--mem=1G"]), RUN, pool, files=LOCAL)
    assert spec.sbatch_args == ("--exclude=node1", "--gres=nvme:1", "--mem=1G")
    script = SlurmBackend().render(spec).script.splitlines()
    assert "#SBATCH --cpus-per-task=1" in script
    assert build_job_spec(TRES, config(2), RUN, pool, files=LOCAL).sbatch_args == pool.sbatch_args


def test_a_cpu_only_trial_without_a_pool_goes_to_the_aux_pool() -> None:
    settings = settings_with(slot_type="cuda", default_compute_resource_pool="gpu",
                             default_aux_resource_pool="cpu")
    assert build_job_spec(settings, config(0), RUN, files=LOCAL).partition == "cpu"
    assert build_job_spec(settings, config(1), RUN, files=LOCAL).partition == "gpu"
    named = {**config(0), "resources": {"slots_per_trial": 0, "resource_pool": "gpu"}}
    assert build_job_spec(settings, named, RUN, files=LOCAL).partition == "gpu"


def test_without_a_pool_master_yaml_decides() -> None:
    settings = settings_with(slot_type="cuda", default_compute_resource_pool="gpu")
    spec = build_job_spec(settings, config(2), RUN, files=LOCAL)
    assert spec.partition == "gpu" and spec.environment["DET_SLOT_TYPE"] == "cuda"
    assert (spec.nodes, spec.gpus_per_node) == (1, 2)
    assert build_job_spec(settings_with(), config(2), RUN, files=LOCAL).partition is None


def test_the_rendered_script_asks_for_the_mapping() -> None:
    script = SlurmBackend().render(build_job_spec(TRES, config(4), RUN, GPU_POOL,
                                                  files=LOCAL)).script
    for line in ("#SBATCH --gpus-per-node=2", "#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1",
                 "#SBATCH --cpus-per-task=2", "#SBATCH --partition=batch"):
        assert line in script.splitlines()
    assert "--nodes=2 --ntasks=4 --ntasks-per-node=2 --cpus-per-task=1" in script


def test_a_users_cpus_per_task_sizes_each_rank() -> None:
    spec = build_job_spec(TRES, config(4, sbatch_args=["-c 3", "--mem=1G"]), RUN, GPU_POOL,
                          files=LOCAL)
    assert (spec.ranks_per_node, spec.cpus_per_rank) == (2, 3)
    script = SlurmBackend().render(spec).script.splitlines()
    assert "#SBATCH --cpus-per-task=6" in script  # 2 ranks x 3 CPUs
    assert spec.sbatch_args == ("--mem=1G",)


def test_cpus_per_gpu_replaces_the_allocations_cpus_per_task() -> None:
    spec = build_job_spec(TRES, config(4, sbatch_args=["--cpus-per-gpu 4"]), RUN, GPU_POOL,
                          files=LOCAL)
    assert spec.cpus_per_rank == 1
    script = SlurmBackend().render(spec).script.splitlines()
    assert "#SBATCH --cpus-per-gpu=4" in script
    assert not any(line.startswith("#SBATCH --cpus-per-task") for line in script)


def test_a_bad_cpus_per_task_is_named() -> None:
    with pytest.raises(ConfigError, match="'--cpus-per-task=0' needs a positive number"):
        build_job_spec(TRES, config(1, sbatch_args=["--cpus-per-task=0"]), RUN, GPU_POOL,
                       files=LOCAL)
