"""A CPU-only trial (``resources.slots_per_trial: 0``, issue 29) on the real dev Slurm cluster.

As in Determined, 0 slots is one process and no GPU. The trial runs in ``batch``, which
with ``slot_type: null`` is a cuda pool (node2 and node3 have two stand-in GPUs each), so
any other slot count would ask Slurm for GPUs: here the dry run's script, the submitted
script and Slurm's accounting (``ReqTRES``/``AllocTRES``) all show none, and the stand-in
trial (``standin/standin.py``, a few batches) runs one rank to COMPLETED. It runs twice:
with the local transport, and with Slurm through slurmrestd (``transport: rest``: the
script's ``#SBATCH`` lines become the job description, docs/admin/slurmrestd.md).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import (
    TRANSPORTS,
    LiveMaster,
    experiment_with_trials,
    sacct_row,
    sacct_state,
    standin_config,
    standin_context,
    transport_settings,
    wait_for,
)

pytestmark = [pytest.mark.slurm]


@pytest.fixture
def resource_manager_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    # Not the conftest's slot_type cpu: batch must be the cuda pool it is by its GPUs.
    return {"slot_type": None, **transport_settings(request)}


def cpu_only_config() -> dict[str, Any]:
    return standin_config("cpu-only", {"batches": 4}, ["STANDIN_BATCHES_PER_EPOCH=4"],
                          slots=0, resources={"resource_pool": "batch"})


@pytest.mark.parametrize("resource_manager_settings", TRANSPORTS, indirect=True)
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_a_zero_slot_trial_runs_one_rank_and_asks_for_no_gpu(
        master: LiveMaster, tmp_path: Path, resource_manager_settings: dict[str, Any]) -> None:
    # Once Slurm has been read, batch is what it is by its nodes: a GPU pool.
    pools = wait_for(lambda: {p["name"]: p for p in master.api("/resource-pools")
                              ["resource_pools"]}, "the pools snapshot", 60)
    assert pools["batch"]["slot_type"] == "cuda", pools
    context = standin_context(tmp_path / "context")
    path = tmp_path / "cpu-only.yaml"
    path.write_text(yaml.safe_dump(cpu_only_config()))

    dry = master.det("experiment", "create", "--dry-run", str(path), str(context),
                     check=True).stdout
    _assert_no_gpu_request(dry)

    done = master.det("experiment", "create", str(path), str(context), "--follow",
                      timeout=300)
    out = done.stdout + done.stderr
    exp_id = int(next(li for li in out.splitlines() if li.startswith("Created")).split()[-1])
    answer = experiment_with_trials(master, exp_id)
    [trial] = answer["trials"]
    logs = master.api(f"/trials/{trial['id']}/logs")["logs"]
    assert answer["experiment"]["state"] == "COMPLETED", (
        f"{out}\n{answer}\n{[line['line'] for line in logs][-40:]}\n"
        f"{master.log.read_text()[-3000:]}")
    assert trial["state"] == "COMPLETED"
    assert {line["rank"] for line in logs} - {None} == {0}  # one rank

    [job_id] = trial["job_ids"]
    assert sacct_state(job_id, master.env) == "COMPLETED"
    row = sacct_row(job_id, master.env, "State,Partition,ReqTRES,AllocTRES")
    tres = "|".join(row)
    state, partition, req, alloc = row
    assert (state, partition) == ("COMPLETED", "batch"), tres
    assert "gpu" not in req and "gpu" not in alloc, tres
    assert "cpu=1" in req.split(","), tres  # one rank of one CPU
    # Through slurmrestd no sbatch ran: Slurm records no submit line.
    submit_line = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "SubmitLine"],
                                 env=master.env, capture_output=True, text=True).stdout
    assert submit_line.startswith("sbatch") != ("transport" in resource_manager_settings)

    [script] = master.job_root.glob(f"**/trial-{trial['id']}/job-1.sh")
    _assert_no_gpu_request(script.read_text())


def _assert_no_gpu_request(script: str) -> None:
    assert "#SBATCH --partition=batch" in script.splitlines(), script
    assert "--gres" not in script and "--gpus" not in script, script
    assert "--ntasks=1 --ntasks-per-node=1" in script, script
    assert "export DET_SLOT_TYPE=cpu" in script.splitlines(), script
