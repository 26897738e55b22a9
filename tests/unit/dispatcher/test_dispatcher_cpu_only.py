"""``resources.slots_per_trial: 0`` (issue 29): a CPU-only trial, as in Determined.

The job is built by the master (:func:`build_job_spec`) in a *GPU* pool, where any other
slot count asks for GPUs, and rendered by the Slurm and PBS backends into golden scripts:
one rank on one node, no ``--gres``/``--gpus*`` nor ``ngpus``, and no ``--nv`` for
Apptainer (the ``cpu`` image and ``DET_SLOT_TYPE=cpu``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

JOB_DIR = "/shared/hpcdet/exp-7/trial-42"
RUN = TrialRun(7, 42, 1, JOB_DIR)
GPU_POOL = Pool("batch", "batch", slot_type="cuda", gpus_per_node=4, cpus_per_node=32,
                gpu_type="a100")


def settings(scheduler: str) -> MasterSettings:
    rm = replace(ResourceManagerSettings(), type=scheduler, master_host="login01",
                 master_port=8080, container_run_type="apptainer",
                 container_path_checks=False, job_storage_root="/shared/hpcdet")
    return MasterSettings(resource_manager=rm)


def cpu_only_config(section: str, slots: int = 0) -> dict[str, Any]:
    """The config; 0 slots ignores ``slots_per_node`` (one rank, whatever it says)."""
    args = "pbsbatch_args" if section == "pbs" else "sbatch_args"
    return {"resources": {"slots_per_trial": slots},
            section: {"slots_per_node": 4 if slots == 0 else slots, args: []},
            "environment": {"image": {"cuda": "/shared/images/cuda.sif",
                                      "cpu": "/shared/images/cpu.sif"}},
            "checkpoint_storage": {"type": "shared_fs", "host_path": "/shared/ckpt"}}


def slurm_script(slots: int = 0) -> str:
    spec = build_job_spec(settings("slurm"), cpu_only_config("slurm", slots), RUN, GPU_POOL,
                          files=LOCAL)
    return SlurmBackend(gpu_request="gres").render(spec).script


def pbs_script(slots: int = 0) -> str:
    spec = build_job_spec(settings("pbs"), cpu_only_config("pbs", slots), RUN, GPU_POOL,
                          files=LOCAL)
    return PbsBackend().render(spec).script


def test_slurm_golden_script(golden_check: Callable[[str, str], None]) -> None:
    golden_check("slurm_cpu_only.sbatch", slurm_script())


def test_pbs_golden_script(golden_check: Callable[[str, str], None]) -> None:
    golden_check("pbs_cpu_only.pbs", pbs_script())


def test_slurm_asks_for_one_task_and_no_gpu() -> None:
    script = slurm_script()
    directives = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    assert "#SBATCH --nodes=1" in directives and "#SBATCH --cpus-per-task=1" in directives
    assert not any("gres" in line or "gpus" in line for line in directives)
    assert "--nodes=1 --ntasks=1 --ntasks-per-node=1 --cpus-per-task=1" in script
    assert "--nv" not in script and "CUDA_VISIBLE_DEVICES" not in script
    assert "/shared/images/cpu.sif" in script and "cuda.sif" not in script
    assert "export DET_SLOT_TYPE=cpu" in script.splitlines()


def test_pbs_asks_for_one_rank_and_no_gpu() -> None:
    script = pbs_script()
    assert "#PBS -l select=1:ncpus=1:mpiprocs=1" in script.splitlines()
    assert "ngpus" not in script and "gpu_model" not in script and "--nv" not in script
    assert '-n 1 --map-by ppr:1:node' in script


@pytest.mark.parametrize("render", [slurm_script, pbs_script])
def test_one_slot_in_the_same_pool_still_asks_for_a_gpu(render: Callable[[int], str]) -> None:
    script = render(1)
    assert "--nv" in script
    assert any(word in script for word in ("--gres=gpu:a100:1", "ngpus=1"))
