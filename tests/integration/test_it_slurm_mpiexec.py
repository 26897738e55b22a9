"""The digits trial with ranks started by Open MPI's mpiexec, or srun --mpi=pmix, in Slurm.

``slurm.launcher: mpiexec`` replaces the srun step: mpiexec starts its daemons with srun, so
each rank inherits the daemon's ``SLURM_PROCID`` (the node index) and must take its rank
from ``OMPI_COMM_WORLD_*`` and its layout and rendezvous from mpi4py. The ranks print what
they read; the replicas must end with identical weights, as under srun.

Dev-cluster settings in the experiment's environment, not in what hpcdet renders: jobs run as
root here (Open MPI refuses root without ``OMPI_ALLOW_RUN_AS_ROOT*``), and all three "nodes"
are one host named alike, so Open MPI's shared-memory transport (vader) of two nodes collides
(measured: a segfault in ``mca_btl_vader_poll_handle_frag``); TCP alone works.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import LiveMaster
from test_it_pytorch_trial import (
    TOTAL_BATCHES,
    context_dir,
    ended,
    experiment_config,
    master_settings,
    trial_detail,
    trial_log,
    weight_hashes,
)

pytestmark = [pytest.mark.slurm, pytest.mark.torch]
__all__ = ["master_settings"]  # the fixture, shared with test_it_pytorch_trial

MPI_EVIDENCE = '''\
"""EvidenceTrial that also prints where each rank read its place from."""
import os

from evidence_trial import EvidenceTrial


class MpiEvidenceTrial(EvidenceTrial):
    def __init__(self, context):
        super().__init__(context)
        names = ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                 "SLURM_PROCID", "PMIX_RANK")
        print("it-launch " + " ".join(f"{n}={os.environ.get(n)}" for n in names), flush=True)
'''
LAUNCH_LINE = re.compile(r"it-launch (.*)$")


def launcher_config(tmp_path: Path, launcher: str, nodes: int) -> Path:
    """2 ranks per node on ``nodes`` nodes, started by ``launcher``."""
    config = experiment_config(tmp_path, f"it-{launcher}", 0.0, 2)
    config["resources"]["slots_per_trial"] = 2 * nodes
    config["entrypoint"] = "mpi_evidence:MpiEvidenceTrial"
    config["slurm"]["launcher"] = launcher
    config["environment"]["environment_variables"] += [
        "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_btl=self,tcp"]
    path = tmp_path / f"it-{launcher}.yaml"
    path.write_text(yaml.safe_dump(config))
    (context_dir(tmp_path) / "mpi_evidence.py").write_text(MPI_EVIDENCE)
    return path


def run_trial(master: LiveMaster, path: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """Create the experiment and wait until it COMPLETED; (experiment id, its trial)."""
    out = master.det("experiment", "create", str(path), str(context_dir(tmp_path)),
                     check=True).stdout
    exp_id = int(next(li for li in out.splitlines() if li.startswith("Created")).split()[-1])
    return exp_id, ended(master, exp_id)["trials"][0]


def launch_vars(lines: list[str]) -> dict[int, dict[str, str]]:
    """{RANK: the variables its it-launch line shows}."""
    found = {}
    for match in filter(None, map(LAUNCH_LINE.search, lines)):
        names = dict(item.split("=", 1) for item in match[1].split())
        found[int(names["RANK"])] = names
    return found


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_mpiexec_starts_two_nodes_of_two_ranks(master: LiveMaster, tmp_path: Path) -> None:
    exp_id, trial = run_trial(master, launcher_config(tmp_path, "mpiexec", 2), tmp_path)
    detail = trial_detail(master, trial["id"])["trial"]
    job_id = detail["job_ids"][0]
    script = (master.job_root / f"exp-{exp_id}" / f"trial-{trial['id']}" / "job-1.sh").read_text()
    assert "mpiexec -n 4 --map-by ppr:2:node --bind-to none \\" in script.splitlines()
    steps = subprocess.run(["sacct", "-n", "-P", "-j", job_id, "-o", "JobName,NNodes,NTasks"],
                           env=master.env, capture_output=True, text=True).stdout.split()
    assert "orted|2|2" in steps, steps  # mpiexec's daemons, one per node, not 4 srun ranks
    lines = trial_log(master, trial["id"])
    launched = launch_vars(lines)
    assert sorted(launched) == [0, 1, 2, 3], lines[-40:]
    for rank, names in launched.items():
        assert (names["WORLD_SIZE"], names["OMPI_COMM_WORLD_RANK"],
                names["OMPI_COMM_WORLD_SIZE"]) == ("4", str(rank), "4"), names
        # The daemon's Slurm task (the node's index), which the harness rightly ignored.
        assert names["SLURM_PROCID"] == str(rank // 2), names
    hashes = weight_hashes(lines)
    assert sorted(hashes) == [0, 1, 2, 3], hashes
    assert len({digest for _, digest in hashes.values()}) == 1, f"replicas differ: {hashes}"
    assert {batches for batches, _ in hashes.values()} == {TOTAL_BATCHES}


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_srun_with_pmix_starts_one_node_of_two_ranks(master: LiveMaster,
                                                    tmp_path: Path) -> None:
    # One node: over two, every slurmd of this one host makes the same PMIx directory in
    # /tmp and the step fails ("File exists"); real nodes have their own /tmp.
    exp_id, trial = run_trial(master, launcher_config(tmp_path, "srun-pmix", 1), tmp_path)
    script = (master.job_root / f"exp-{exp_id}" / f"trial-{trial['id']}" / "job-1.sh").read_text()
    assert "srun --mpi=pmix --kill-on-bad-exit=1" in script
    lines = trial_log(master, trial["id"])
    launched = launch_vars(lines)
    assert sorted(launched) == [0, 1], lines[-40:]
    for rank, names in launched.items():
        assert (names["SLURM_PROCID"], names["PMIX_RANK"], names["WORLD_SIZE"]) == (
            str(rank), str(rank), "2"), names
    hashes = weight_hashes(lines)
    assert sorted(hashes) == [0, 1] and len({d for _, d in hashes.values()}) == 1, hashes
