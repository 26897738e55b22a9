"""Pools read from the real dev cluster, and every slot layout run by the real Slurm.

No master here: the pools come from ``read_pools`` (real ``sinfo``/``squeue``), the jobs
from ``build_job_spec`` rendered and submitted by the real :class:`SlurmBackend`, with the
harness command swapped for one that prints what each rank sees. node2 and node3 have two
stand-in GPUs each (character devices in ``gres.conf``); Slurm allocates them and sets
``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher import JobPhase, JobRef
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.master.queue.pools import Pool, pools_from_snapshot, read_pools
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings
from hpcdet.master.settings.pools import CustomPool, PartitionOverride, SlurmDefaults

pytestmark = [pytest.mark.slurm]

GPU_NODES = {"node2", "node3"}
# What each rank prints: one line, prefixed "N: " by srun --label.
REPORT = ('echo "rank=$SLURM_PROCID ntasks=$SLURM_NTASKS node=$SLURMD_NODENAME '
          'local=$SLURM_LOCALID cuda=${CUDA_VISIBLE_DEVICES-unset}"')
# How long a job may wait in the queue: other tests share the cluster.
DEADLINE_S = 600


def settings_with(tmp_path: Path, **rm: Any) -> MasterSettings:
    base = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                   master_host="127.0.0.1", cluster_name="it-pools")
    return MasterSettings(resource_manager=replace(base, **rm))


POOL_SETTINGS = {
    "default_compute_resource_pool": "batch",
    "partition_overrides": {"debug": PartitionOverride(description="CPU slots",
                                                       slot_type="cpu")},
    "resource_pools": (CustomPool("gpu-only", "batch", "the GPU nodes of batch",
                                  SlurmDefaults(("--exclude=node1",))),),
}


@pytest.fixture(scope="module")
def backend(slurm: dict[str, str]) -> SlurmBackend:
    return SlurmBackend()


@pytest.fixture
def pools(backend: SlurmBackend, tmp_path: Path) -> dict[str, Pool]:
    return pools_from_snapshot(read_pools(backend, settings_with(tmp_path, **POOL_SETTINGS)))


def test_pools_come_from_the_partitions(pools: dict[str, Pool]) -> None:
    assert {"batch", "debug", "gpu-only"} <= set(pools)
    batch, debug, gpu_only = pools["batch"], pools["debug"], pools["gpu-only"]
    assert (batch.slot_type, batch.gpus_per_node, batch.nodes_total) == ("cuda", 2, 3)
    assert batch.slots_total == 4 and batch.default_compute
    assert (debug.slot_type, debug.description, debug.slots_total) == ("cpu", "CPU slots", 12)
    assert (gpu_only.partition, gpu_only.is_custom, gpu_only.nodes_total) == ("batch", True, 2)
    assert gpu_only.slot_type == "cuda" and gpu_only.sbatch_args == ("--exclude=node1",)


@dataclass(frozen=True)
class Rank:
    rank: int
    ntasks: int
    node: str
    local: int
    cuda: str


@dataclass(frozen=True)
class Layout:
    """One row of the slot table and what every rank must see."""

    rm: dict[str, Any]
    pool: str
    slots: int
    slots_per_node: int | None
    nodes: int
    gpus_per_rank: int | None  # GPUs visible to each rank; None: not a GPU job


LAYOUTS = {
    # cuda + TRES: --gpus=4 over exactly 2 nodes, 2 ranks per node sharing its 2 GPUs.
    "cuda-tres-4": Layout({}, "batch", 4, None, 2, 2),
    "cuda-tres-per-node": Layout({}, "gpu-only", 4, 2, 2, 2),
    "cuda-tres-1": Layout({}, "batch", 1, None, 1, 1),
    # cuda with GRES only: --gres=gpu:2 on each of 2 nodes.
    "cuda-gres-4": Layout({"tres_supported": False}, "batch", 4, None, 2, 2),
    # cpu: one task per node with --cpus-per-task=spn, spn ranks per node in the step.
    "cpu-per-node": Layout({}, "debug", 4, 2, 2, None),
    "cpu-one-node": Layout({}, "debug", 3, None, 1, None),
}


@pytest.fixture
def submitted(backend: SlurmBackend) -> Iterator[list[str]]:
    """Ids of the jobs a test submitted; whatever is still queued is cancelled after it."""
    ids: list[str] = []
    yield ids
    backend.cancel(ids)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_each_rank_sees_its_slots(name: str, backend: SlurmBackend, tmp_path: Path,
                                  submitted: list[str]) -> None:
    layout = LAYOUTS[name]
    settings = settings_with(tmp_path, **POOL_SETTINGS, **layout.rm)
    pool = pools_from_snapshot(read_pools(backend, settings))[layout.pool]
    job_dir = tmp_path / "job"
    (job_dir / "context").mkdir(parents=True)
    config = {"resources": {"slots_per_trial": layout.slots},
              "slurm": {"slots_per_node": layout.slots_per_node, "sbatch_args": []}}
    run = TrialRun(0, 0, 1, str(job_dir), tag=f"pools-{uuid.uuid4().hex[:8]}")
    spec = replace(build_job_spec(settings, config, run, pool, files=LOCAL),
                   command=("bash", "-c", REPORT), time_limit="5")
    job_id = backend.submit(backend.render(spec))
    submitted.append(job_id)
    ranks = _ranks(job_dir, job_id, _wait(backend, JobRef(job_id, str(job_dir))))
    _check(layout, ranks)


def _wait(backend: SlurmBackend, job: JobRef) -> JobPhase:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        status = backend.poll([job])[job.job_id]
        if status.phase.is_terminal:
            return status.phase
        time.sleep(1)
    pytest.fail(f"job {job.job_id} did not finish within {DEADLINE_S}s "
                f"(last: {status.native_state} {status.reason})")


def _ranks(job_dir: Path, job_id: str, phase: JobPhase) -> list[Rank]:
    out = (job_dir / f"slurm-{job_id}.out").read_text()
    err = (job_dir / f"slurm-{job_id}.err").read_text()
    assert phase is JobPhase.COMPLETED, f"job {job_id}: {phase}\n{out}\n{err}"
    return sorted((_rank(line) for line in out.splitlines() if "rank=" in line),
                  key=lambda r: r.rank)


def _rank(line: str) -> Rank:
    fields = dict(item.split("=", 1) for item in line.split(": ", 1)[1].split())
    return Rank(int(fields["rank"]), int(fields["ntasks"]), fields["node"],
                int(fields["local"]), fields["cuda"])


def _check(layout: Layout, ranks: list[Rank]) -> None:
    per_node = layout.slots // layout.nodes
    assert [r.rank for r in ranks] == list(range(layout.slots))
    assert {r.ntasks for r in ranks} == {layout.slots}
    nodes = sorted({r.node for r in ranks})
    assert len(nodes) == layout.nodes
    for node in nodes:
        assert sorted(r.local for r in ranks if r.node == node) == list(range(per_node))
    if layout.gpus_per_rank is None:
        return
    assert set(nodes) <= GPU_NODES
    for rank in ranks:
        visible = rank.cuda.split(",")
        assert len(visible) == layout.gpus_per_rank, rank
        assert all(device.isdigit() for device in visible), rank
