"""Two ranks started by a real ``mpiexec`` (Open MPI) join torch.distributed (gloo).

As on PBS, where no ``srun`` exists: ClusterEnv reads the launcher's variables, exports the
``env://`` variables, and both ranks all-reduce. Once from Open MPI's own variables alone,
once from PMIx's rank alone, where mpi4py (MPI_COMM_WORLD) supplies size, node layout and
rank 0's address and port.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from hang_guard import HANG_GUARD_S

pytestmark = pytest.mark.torch

SCRIPT = """
import json, os, sys
import torch
import torch.distributed as dist
from hpcdet.job import process_group
from hpcdet.job.cluster_env import ClusterEnv

mode, out = sys.argv[1], sys.argv[2]
environ = dict(os.environ)
if mode == "pmix":  # as a PMIx launcher that exports only the rank
    environ = {k: v for k, v in environ.items() if not k.startswith(("OMPI_COMM_WORLD_", "PMI_"))}
mpi_before = "mpi4py.MPI" in sys.modules
cluster = ClusterEnv.from_environ(environ).export_torch_env()
process_group.init_process_group(cluster, "gloo", timeout_s=60)
value = torch.tensor([float(cluster.rank + 1)])
dist.all_reduce(value)
gathered = [None] * cluster.size
dist.all_gather_object(gathered, cluster.rank)
process_group.teardown(barrier=True)
result = {
    "launcher": cluster.launcher,
    "layout": [cluster.rank, cluster.size, cluster.local_rank, cluster.local_size,
               cluster.cross_rank, cluster.cross_size],
    "rendezvous": [cluster.master_addr, cluster.master_port],
    "world": [os.environ["RANK"], os.environ["WORLD_SIZE"]],
    "sum": value.item(),
    "gathered": gathered,
    "used_mpi4py": not mpi_before and "mpi4py.MPI" in sys.modules,
}
with open(os.path.join(out, f"rank-{cluster.rank}.json"), "w") as handle:
    json.dump(result, handle)
"""

# Variables of an outer launcher or rendezvous that must not leak into the ranks.
_OUTER = ("SLURM_", "PBS_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "GROUP_", "OMPI_", "PMI")


def _run(mpiexec: list[str], tmp_path: pathlib.Path, mode: str) -> list[dict[str, object]]:
    pytest.importorskip("torch")
    script = tmp_path / "ranks.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(_OUTER)}
    proc = subprocess.run([*mpiexec, "-n", "2", sys.executable, str(script), mode, str(tmp_path)],
                          env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)]


def _check_world_of_two(results: list[dict[str, object]]) -> None:
    for rank, result in enumerate(results):
        assert result["layout"] == [rank, 2, rank, 2, 0, 1]
        assert result["world"] == [str(rank), "2"]
        assert result["sum"] == 3.0  # 1 + 2, seen identically by both ranks
        assert result["gathered"] == [0, 1]
    addr, port = results[0]["rendezvous"]  # type: ignore[misc]
    assert addr == "127.0.0.1" and 20000 <= port <= 32767
    assert results[1]["rendezvous"] == results[0]["rendezvous"]


def test_openmpi_variables_alone_rendezvous_two_ranks(
    mpiexec: list[str], tmp_path: pathlib.Path
) -> None:
    results = _run(mpiexec, tmp_path, "env")
    _check_world_of_two(results)
    assert [r["launcher"] for r in results] == ["openmpi", "openmpi"]
    assert not any(r["used_mpi4py"] for r in results)  # the variables were enough


def test_pmix_rank_alone_takes_the_rest_from_mpi4py(
    mpiexec: list[str], mpi4py_installed: None, tmp_path: pathlib.Path
) -> None:
    results = _run(mpiexec, tmp_path, "pmix")
    _check_world_of_two(results)
    assert [r["launcher"] for r in results] == ["pmix", "pmix"]
    assert all(r["used_mpi4py"] for r in results)
