"""A random search of 4 trivial trials as one PBS job array (``qsub -J``), through the real
CLI, a live PBS master and the dev OpenPBS server (docs/job-arrays.md).

One ``qsub`` for all four (every trial's job id a subjob ``N[i].server`` of one array), one
trial killed on its own (``qdel`` of its subjob) while the others run on, the rest
COMPLETED with their metric and their own logs (their subjob's ``PBS_JOBID`` in each); ``det job
list`` shows the array as one line with its subjobs counted.

The searcher keeps at most ``max_concurrent_trials`` trials alive, so the array's own
throttle (``-J 0-N%M``) never limits a search; 4 trials of one slot fill the server's two
hosts of 2 cpus. Run under ``flock /tmp/hpcdet-pbs.lock``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from it_helpers import LiveMaster, trials_of, wait_for
from it_pbs import create_experiment, pbs_master, qdel_all, qstat

pytestmark = [pytest.mark.pbs]
SUBJOB = re.compile(r"^(\d+)\[(\d+)\]\.\S+$")
# Reports its metric, then waits (at most 120 s) for a file the test writes, so that the
# kill happens while every subjob runs.
TRAIN = """\
import os, pathlib, time
import hpcdet.core

release = pathlib.Path(os.environ["DET_JOB_DIR"]).parent / "release"  # exp-N/release
with hpcdet.core.init() as core:
    print("trial", os.environ["DET_TRIAL_ID"], "job", os.environ.get("PBS_JOBID"), flush=True)
    core.train.report_validation_metrics(steps_completed=1, metrics={"loss": 0.25})
    deadline = time.monotonic() + 120
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
"""


@pytest.fixture
def master() -> Iterator[LiveMaster]:
    with pbs_master("arrays", {"pool_refresh_seconds": 1}) as live:
        try:
            yield live
        finally:  # a failed test's subjobs, so they do not hold the hosts for the next test
            for exp in live.api("/experiments").get("experiments", []):
                if not exp.get("ended_at"):  # the master qdels what it submitted, queued or not
                    live.det("experiment", "kill", str(exp["id"]))
            jobs = live.api("/jobs").get("jobs", [])  # and what it may not know of yet
            qdel_all([row["job_id"] for row in jobs if not row.get("external")])


def trials(master: LiveMaster, exp_id: int) -> list[dict[str, Any]]:
    return trials_of(master, exp_id)


def test_a_search_runs_as_one_pbs_array_and_one_trial_is_killed_alone(
        master: LiveMaster) -> None:
    config = {"entrypoint": "python3 train.py", "max_restarts": 0,
              "hyperparameters": {"x": {"type": "int", "minval": 1, "maxval": 100}},
              "searcher": {"name": "random", "metric": "loss", "max_trials": 4,
                           "max_concurrent_trials": 4, "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 1}}
    exp_id = create_experiment(master, "pbs-arrays", config, {"train.py": TRAIN})

    def all_running() -> list[dict[str, Any]] | None:
        found = trials(master, exp_id)
        return found if len(found) == 4 and all(t["state"] == "RUNNING" for t in found) else None

    running = wait_for(all_running, "four running trials", timeout=180)
    job_ids = [t["job_ids"][0] for t in running]
    parts = [SUBJOB.match(job_id) for job_id in job_ids]
    assert all(parts), job_ids
    assert len({p[1] for p in parts if p}) == 1, job_ids  # one qsub for all four
    assert sorted(p[2] for p in parts if p) == ["0", "1", "2", "3"]
    number = parts[0][1] if parts[0] else ""
    assert qstat(f"{number}[].{job_ids[0].split('.', 1)[1]}")["array"] == "True"

    wait_for(lambda: "array:" in master.det("job", "list", check=True).stdout,
             "the array line in det job list", timeout=30)
    listing = master.det("job", "list", check=True).stdout
    line = next(li for li in listing.splitlines() if "array:" in li)
    assert "array: 4 R" in line and f"exp {exp_id}" in line, listing
    expanded = master.det("job", "list", "--expand", check=True).stdout
    assert all(job_id in expanded for job_id in job_ids), expanded

    victim = running[1]
    master.det("trial", "kill", str(victim["id"]), check=True)
    wait_for(lambda: trials(master, exp_id)[1]["state"] == "CANCELED",
             "the killed trial to end", timeout=60)
    record = qstat(victim["job_ids"][0])
    assert record["job_state"] in ("X", "F") and record["substate"] == 91, record
    others = [t for t in trials(master, exp_id) if t["id"] != victim["id"]]
    assert all(t["state"] == "RUNNING" for t in others), others  # the rest go on

    (master.job_root / f"exp-{exp_id}" / "release").write_text("")
    wait_for(lambda: master.api(f"/experiments/{exp_id}")["experiment"]["ended_at"],
             "the experiment to end", timeout=120)
    states = {t["id"]: t["state"] for t in trials(master, exp_id)}
    assert states.pop(victim["id"]) == "CANCELED"
    assert list(states.values()) == ["COMPLETED"] * 3, states
    for trial in trials(master, exp_id):
        if trial["id"] == victim["id"]:
            continue
        assert trial["best_validation"]["metrics"]["loss"] == 0.25
        job_id = trial["job_ids"][0]
        logs = master.det("trial", "logs", str(trial["id"]), check=True).stdout
        assert f"trial {trial['id']} job {job_id}" in logs, logs
        job_dir = master.job_root / f"exp-{exp_id}" / f"trial-{trial['id']}"
        assert (job_dir / f"{job_id}.OU").is_file() and (job_dir / f"exit-{job_id}").is_file()
