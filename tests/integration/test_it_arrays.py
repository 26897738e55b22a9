"""A random search of 6 trivial trials as one Slurm job array, through the real CLI, master
and the dev cluster (docs/job-arrays.md).

One ``sbatch`` for all six (one array id in every trial's job id), every trial COMPLETED with
its metric and its own logs, except one killed on its own while the others run on; ``det
job list`` shows the array as one line with its tasks counted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from it_helpers import LiveMaster, load_json, sacct_state, wait_for, write_experiment

pytestmark = [pytest.mark.slurm]

# Reports its metric, then waits for a file the test writes (so that the kill happens while
# every task runs), at most 120 s.
TRAIN = """\
import os, pathlib, time
import hpcdet.core

release = pathlib.Path(os.environ["DET_JOB_DIR"]).parent / "release"  # exp-N/release
with hpcdet.core.init() as core:
    print("trial", os.environ["DET_TRIAL_ID"], "task", os.environ.get("SLURM_ARRAY_TASK_ID"),
          flush=True)
    core.train.report_validation_metrics(steps_completed=1, metrics={"loss": 0.25})
    deadline = time.monotonic() + 120
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
"""


@pytest.fixture
def resource_manager_settings() -> dict[str, Any]:
    """The queue read every second (the default settings otherwise: arrays on)."""
    return {"pool_refresh_seconds": 1}


def describe(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    return dict(load_json(master.det("experiment", "describe", str(exp_id), "--json",
                                     check=True).stdout))


@pytest.mark.slurm_smoke
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_a_search_runs_as_one_array_and_one_trial_is_killed_alone(
        master: LiveMaster, tmp_path: Path) -> None:
    config = {"name": "arrays", "entrypoint": "python3 train.py", "max_restarts": 0,
              "hyperparameters": {"x": {"type": "int", "minval": 1, "maxval": 100}},
              "searcher": {"name": "random", "metric": "loss", "max_trials": 6,
                           "max_concurrent_trials": 6, "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 1}}
    path = write_experiment(tmp_path / "exp", config, {"train.py": TRAIN})
    created = master.det("experiment", "create", str(path), str(path.parent), check=True)
    exp_id = int(next(line for line in created.stdout.splitlines()
                      if line.startswith("Created experiment")).split()[-1])

    def all_running() -> list[dict[str, Any]] | None:
        trials = describe(master, exp_id)["trials"]
        return trials if len(trials) == 6 and all(
            t["state"] == "RUNNING" for t in trials) else None

    trials = wait_for(all_running, "six running trials", timeout=300)
    job_ids = [t["job_ids"][0] for t in trials]
    array_ids = {job_id.partition("_")[0] for job_id in job_ids}
    assert len(array_ids) == 1, job_ids  # one sbatch for all six
    assert sorted(job_id.partition("_")[2] for job_id in job_ids) == [str(i) for i in range(6)]

    array_id = array_ids.pop()
    wait_for(lambda: "array:" in master.det("job", "list", check=True).stdout,
             "the array line in det job list", timeout=30)
    listing = master.det("job", "list", check=True).stdout
    line = next(li for li in listing.splitlines() if f" {array_id} " in f" {li} ")
    assert "array: 6 RUNNING" in line and f"exp {exp_id}" in line, listing
    expanded = master.det("job", "list", "--expand", check=True).stdout
    assert f"{array_id}_0" in expanded and f"{array_id}_5" in expanded, expanded

    victim = trials[2]
    master.det("trial", "kill", str(victim["id"]), check=True)
    wait_for(lambda: describe(master, exp_id)["trials"][2]["state"] == "CANCELED",
             "the killed trial to end", timeout=120)
    assert sacct_state(victim["job_ids"][0], master.env) == "CANCELLED"
    others = [t for t in describe(master, exp_id)["trials"] if t["id"] != victim["id"]]
    assert all(t["state"] == "RUNNING" for t in others), others  # the rest go on

    (master.job_root / f"exp-{exp_id}" / "release").write_text("")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not describe(master, exp_id)["experiment"]["ended_at"]:
        time.sleep(2)
    answer = describe(master, exp_id)
    states = {t["id"]: t["state"] for t in answer["trials"]}
    assert states.pop(victim["id"]) == "CANCELED"
    assert list(states.values()) == ["COMPLETED"] * 5, answer["trials"]
    for trial in answer["trials"]:
        if trial["id"] == victim["id"]:
            continue
        assert trial["best_validation"]["metrics"]["loss"] == 0.25
        logs = master.det("trial", "logs", str(trial["id"]), check=True).stdout
        assert f"trial {trial['id']} task {trial['job_ids'][0].partition('_')[2]}" in logs, logs
