"""Allocation mode on the dev Slurm cluster through the real CLI and master.

A random search of 6 short trials in a 2-slot allocation: one allocation job in sacct,
every trial COMPLETED with its metrics and no job of its own. And the fallback: the
allocation is cancelled behind the master's back mid-search, and the trials left finish as
ordinary jobs.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from it_helpers import LiveMaster, load_json, sacct_state, wait_for, write_experiment

pytestmark = [pytest.mark.slurm]

TRAIN = '''\
import time

import hpcdet as det

info = det.get_cluster_info()
hparams = info.trial.hparams
with det.core.init() as core:
    for step in range(1, 4):
        time.sleep(float(hparams["pace"]))
        core.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    core.train.report_validation_metrics(steps_completed=3,
                                         metrics={"validation_loss": float(hparams["lr"])})
'''


def search_config(pace: float, trials: int = 6) -> dict[str, Any]:
    return {
        "name": "allocation-mode", "entrypoint": "python3 train.py",
        "hyperparameters": {"lr": {"type": "double", "minval": 0.01, "maxval": 0.1},
                            "pace": pace},
        "searcher": {"name": "random", "metric": "validation_loss", "max_trials": trials,
                     "max_length": {"batches": 3}},
        "resources": {"slots_per_trial": 1,
                      "allocation": {"slots": 2, "walltime": "00:15:00"}},
        "max_restarts": 2,
    }


def create(master: LiveMaster, tmp_path: Path, config: dict[str, Any]) -> int:
    path = write_experiment(tmp_path / "exp", config, {"train.py": TRAIN})
    result = master.det("experiment", "create", str(path), str(path.parent), check=True)
    line = next(li for li in result.stdout.splitlines() if li.startswith("Created experiment"))
    return int(line.split()[-1])


def describe(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    return dict(load_json(master.det("experiment", "describe", str(exp_id), "--json",
                                     check=True).stdout))


def allocations(master: LiveMaster, exp_id: int) -> list[dict[str, Any]]:
    """The experiment's allocations, from the API (det has no command for them)."""
    request = urllib.request.Request(f"{master.url}/api/v1/experiments/{exp_id}/allocations",
                                      headers={"X-Hpcdet-User": "tester"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return list(json.loads(response.read())["allocations"])


def wait_until_ended(master: LiveMaster, exp_id: int, timeout: float = 480) -> dict[str, Any]:
    return dict(wait_for(lambda: (lambda d: d if d["experiment"]["ended_at"] else None)(
        describe(master, exp_id)), f"experiment {exp_id} to end", timeout=timeout))


def explain(master: LiveMaster, answer: dict[str, Any]) -> str:
    lines = [f"{t['id']} {t['state']} jobs={t.get('job_ids')}" for t in answer["trials"]]
    return "\n".join(lines) + "\n" + master.log.read_text()[-4000:]


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_six_trials_run_as_steps_of_one_allocation(master: LiveMaster,
                                                   tmp_path: Path) -> None:
    exp_id = create(master, tmp_path, search_config(pace=1.0))
    answer = wait_until_ended(master, exp_id)
    trials = answer["trials"]
    assert answer["experiment"]["state"] == "COMPLETED", explain(master, answer)
    assert len(trials) == 6 and {t["state"] for t in trials} == {"COMPLETED"}, explain(
        master, answer)
    assert all(t["latest_validation"]["metrics"]["validation_loss"] > 0 for t in trials)
    assert all(not t["job_ids"] for t in trials), explain(master, answer)
    rows = wait_for(lambda: (lambda r: r if r[0]["ended_at"] else None)(
        allocations(master, exp_id)), "the allocation to be released", timeout=120)
    assert [(a["end_cause"], a["steps"]) for a in rows] == [("released", 6)], rows
    job_id = rows[0]["job_id"]
    assert sacct_state(job_id, master.env) == "COMPLETED"
    listed = subprocess.run(["sacct", "-n", "-P", "-j", job_id, "-o", "JobID"], env=master.env,
                            capture_output=True, text=True, check=True).stdout.split()
    steps = [s for s in listed if s.partition(".")[2].isdigit()]
    assert len(steps) >= 6, listed  # each trial an srun step of the allocation


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_trials_fall_back_to_jobs_when_the_allocation_is_cancelled(
        master: LiveMaster, tmp_path: Path) -> None:
    exp_id = create(master, tmp_path, search_config(pace=4.0))

    def two_running() -> Any:
        trials = describe(master, exp_id)["trials"]
        return sum(t["state"] == "RUNNING" for t in trials) >= 2 or None

    wait_for(two_running, "two trials running in the allocation", timeout=240)
    job_id = allocations(master, exp_id)[0]["job_id"]
    subprocess.run(["scancel", job_id], env=master.env, check=True)
    answer = wait_until_ended(master, exp_id)
    trials = answer["trials"]
    assert {t["state"] for t in trials} == {"COMPLETED"}, explain(master, answer)
    rows = allocations(master, exp_id)
    assert len(rows) == 1 and (rows[0]["end_cause"] or "").startswith("CANCELLED"), rows
    # The trials that were on it, and those not yet started, ran as jobs.
    assert sum(1 for t in trials if t["job_ids"]) >= 2, explain(master, answer)
