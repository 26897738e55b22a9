"""A CPU-only trial (``resources.slots_per_trial: 0``, issue 29) on the dev OpenPBS server.

The master calls its queues cuda pools (``slot_type: cuda``), so any other slot count would
put ``ngpus`` in the job's ``select``; the 0-slot trial's job asks for one chunk of one CPU
and one MPI process, no ``ngpus``, and the stand-in trial runs its one rank to COMPLETED.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from it_helpers import STANDIN, STANDIN_ENTRYPOINT, LiveMaster, experiment_with_trials, wait_for
from it_pbs import create_experiment, pbs_master, qstat

pytestmark = [pytest.mark.pbs]


@pytest.fixture(scope="module")
def master() -> Iterator[LiveMaster]:
    with pbs_master("cpu-only", {"slot_type": "cuda"}) as live:
        yield live


def test_a_zero_slot_trial_runs_one_rank_without_ngpus(master: LiveMaster) -> None:
    config = {
        "entrypoint": STANDIN_ENTRYPOINT, "hyperparameters": {"lr": 0.1},
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": {"batches": 4}},
        "resources": {"slots_per_trial": 0},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(master.job_root / "ckpt")},
        "environment": {"environment_variables": ["STANDIN_BATCHES_PER_EPOCH=4"]},
        "max_restarts": 0,
    }
    exp_id = create_experiment(master, "cpu-only", config, {"standin.py": STANDIN.read_text()})
    exp = wait_for(lambda: (e := experiment_with_trials(master, exp_id))["experiment"]
                   ["ended_at"] and e, f"experiment {exp_id} to end", 300)
    [trial] = exp["trials"]
    logs = master.api(f"/trials/{trial['id']}/logs")["logs"]
    assert exp["experiment"]["state"] == "COMPLETED", (
        f"{exp}\n{[line['line'] for line in logs][-40:]}\n{master.log.read_text()[-3000:]}")
    assert {line["rank"] for line in logs} - {None} == {0}
    [job_id] = trial["job_ids"]
    record = qstat(job_id)
    assert (record["job_state"], record["Exit_status"]) == ("F", 0), record
    assert record["Resource_List"]["select"] == "1:ncpus=1:mpiprocs=1", record["Resource_List"]
    assert "ngpus" not in str(record["Resource_List"]), record["Resource_List"]
