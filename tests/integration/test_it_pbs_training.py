"""Training on the dev OpenPBS server through the real ``det`` CLI and a live PBS master.

One master (``resource_manager.type: pbs``, run as ``user_a``: root may not submit)
serves the module. On the server's two execution hosts (``pbsn1``, ``pbsn2``, 2 cpus each):

1. the digits example, as a PyTorchTrial and as the Core API script, COMPLETES on 2 slots
   with ``pbs.slots_per_node: 1`` (one rank on each host, started by mpiexec), with its
   training and validation metrics and checkpoints in the master;
2. pause, then activate: the second job resumes from the checkpoint (its first batch is
   not batch 0);
3. a trial longer than the ``short`` queue's one-minute walltime: PBS sends SIGTERM at the
   limit (SIGKILL ``kill_delay`` = 5 s later), the trial checkpoints and exits, the master
   resubmits it, and it COMPLETES across two or more PBS jobs;
4. an adaptive ASHA search of 8 one-slot trials COMPLETES.

Test 1 trains the digits example (training over two hosts is its subject). The others
run the stand-in trial (``standin/standin.py``: the digits trial's reports, checkpoints and
preemption on the standard library, paced by a sleep per batch where a test must strike
mid-training; it prints each run's first batch).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from it_helpers import (
    REPO,
    STANDIN,
    STANDIN_ENTRYPOINT,
    LiveMaster,
    experiment_with_trials,
    trials_of,
    wait_for,
)
from it_pbs import create_experiment, pbs_master, qdel_all, qstat

pytestmark = [pytest.mark.pbs]
DIGITS = REPO / "examples" / "digits"
HOSTS = {"pbsn1", "pbsn2"}
HARNESS_RANK = re.compile(r"hpcdet harness: rank (\d+)/2 ")
FIRST_BATCH = re.compile(r"standin-first-batch=(\d+)")


@pytest.fixture(scope="module")
def master() -> Iterator[LiveMaster]:
    with pbs_master("train") as live:
        try:
            yield live
        finally:
            qdel_all(active_jobs(live))  # a failed test's, so they do not hold the hosts


def active_jobs(master: LiveMaster) -> list[str]:
    """The PBS jobs of this master's trials that have not ended."""
    experiments = master.api("/experiments").get("experiments", [])
    return [job["job_id"] for exp in experiments
            for trial in trials_of(master, exp["id"])
            for job in master.api(f"/trials/{trial['id']}")["trial"]["jobs"]
            if job["active"]]


def create(master: LiveMaster, config: dict[str, Any]) -> int:
    """Create the experiment on a copy of the digits example plus the stand-in trial."""
    files = {name: (DIGITS / name).read_text()
             for name in ("model_def.py", "train.py", "core_api.yaml")}
    return create_experiment(master, config["name"], config,
                             {**files, "standin.py": STANDIN.read_text()})


def experiment(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    """The experiment with its trials under ``"trials"``."""
    return experiment_with_trials(master, exp_id)


def trial_of(master: LiveMaster, trial_id: int) -> dict[str, Any]:
    return dict(master.api(f"/trials/{trial_id}"))


def ended(master: LiveMaster, exp_id: int, timeout: float = 300) -> dict[str, Any]:
    """The experiment once it has ended; fails with its first trial's log unless it
    COMPLETED."""
    exp: dict[str, Any] = wait_for(
        lambda: (e := experiment(master, exp_id))["experiment"]["ended_at"] and e,
        f"experiment {exp_id} to end", timeout)
    if exp["experiment"]["state"] != "COMPLETED":
        logs = [master.det("trial", "logs", str(t["id"])).stdout[-3000:]
                for t in exp["trials"][:1]]
        raise AssertionError(f"{exp}\n{logs}\n{master.log.read_text()[-3000:]}")
    return exp


def config(master: LiveMaster, name: str, *, epochs: int, slots: int = 1,
           entrypoint: str = STANDIN_ENTRYPOINT, pace: float = 0.0,
           **extra: Any) -> dict[str, Any]:
    """An experiment (the stand-in, unless ``entrypoint`` says otherwise) validating and
    checkpointing every epoch."""
    return {
        "name": name, "entrypoint": entrypoint,
        "hyperparameters": {"lr": 0.01, "hidden_size": 32, "global_batch_size": 64},
        "min_validation_period": {"epochs": 1}, "min_checkpoint_period": {"epochs": 1},
        "scheduling_unit": 1,  # look at preemption after every batch
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": {"epochs": epochs}},
        "resources": {"slots_per_trial": slots},
        "pbs": {"slots_per_node": 1},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(master.job_root / "ckpt")},
        "environment": {"environment_variables": [
            "OMP_NUM_THREADS=1", f"STANDIN_BATCH_SLEEP={pace}", "HPCDET_PREEMPT_POLL_SECONDS=1"]},
        "max_restarts": 0,
        **extra,
    }


def metrics(master: LiveMaster, trial_id: int, group: str) -> list[dict[str, Any]]:
    return list(master.api(f"/trials/{trial_id}/metrics?group={group}")["metrics"])


def logs(master: LiveMaster, trial_id: int) -> list[dict[str, Any]]:
    return list(master.api(f"/trials/{trial_id}/logs")["logs"])


def first_batches(entries: list[dict[str, Any]], job_id: str) -> list[int]:
    """The ``it-first-batch`` numbers printed by ``job_id``'s ranks."""
    return [int(m[1]) for e in entries if e["job_id"] == job_id
            and (m := FIRST_BATCH.search(e["line"]))]


def only_trial(master: LiveMaster, exp_id: int) -> int:
    trials = wait_for(lambda: trials_of(master, exp_id), "the trial", 60)
    return int(trials[0]["id"])


def assert_trained_on_both_hosts(master: LiveMaster, exp: dict[str, Any], epochs: int) -> None:
    """COMPLETED on one PBS job over both hosts, ranks 0 and 1 logging, metrics and a
    checkpoint per epoch in the master."""
    trial = trial_of(master, exp["trials"][0]["id"])
    detail = trial["trial"]
    assert detail["state"] == "COMPLETED" and len(detail["jobs"]) == 1, detail
    job_id = detail["jobs"][0]["job_id"]
    hosts = set(re.findall(r"pbsn\d", str(detail["nodes"])))
    assert hosts == HOSTS, detail["nodes"]
    record = qstat(job_id)
    assert (record["job_state"], record["Exit_status"]) == ("F", 0), record
    assert set(re.findall(r"pbsn\d", record["exec_host"])) == HOSTS, record["exec_host"]
    # Each rank's lines, labelled by the rank itself under mpiexec, and its harness's
    # greeting naming it.
    entries = [e for e in logs(master, detail["id"]) if e["job_id"] == job_id]
    assert {e["rank"] for e in entries} - {None} == {0, 1}, entries[-20:]
    greeted = {m[1] for e in entries if (m := HARNESS_RANK.search(e["line"]))}
    assert greeted == {"0", "1"}, entries[-20:]
    validation = metrics(master, detail["id"], "validation")
    assert [m["metrics"]["epochs"] for m in validation] == list(range(1, epochs + 1)), validation
    assert validation[-1]["metrics"]["validation_loss"] < validation[0]["metrics"][
        "validation_loss"], validation
    assert metrics(master, detail["id"], "training"), "no training metrics"
    # The checkpoint GC keeps the best and the latest; the latest is the last step.
    steps = sorted(c["steps_completed"] for c in trial["checkpoints"])
    assert steps and steps[-1] == validation[-1]["steps_completed"], steps


@pytest.mark.torch
def test_digits_trial_and_core_api_complete_on_two_hosts(master: LiveMaster) -> None:
    epochs = 2
    trial_exp = create(master, config(master, "pbs-digits", epochs=epochs, slots=2,
                                      entrypoint="model_def:DigitsTrial"))
    core_exp = create(master, config(master, "pbs-core-api", epochs=epochs, slots=2,
                                     entrypoint="python3 train.py"))
    for exp_id in (trial_exp, core_exp):
        assert_trained_on_both_hosts(master, ended(master, exp_id), epochs)


def test_pause_then_activate_resumes_from_the_checkpoint(master: LiveMaster) -> None:
    exp_id = create(master, config(master, "pbs-paused", epochs=4, pace=0.1))
    trial_id = only_trial(master, exp_id)
    wait_for(lambda: trial_of(master, trial_id)["checkpoints"], "a first checkpoint", 180)
    master.det("experiment", "pause", str(exp_id), check=True)
    paused = wait_for(lambda: (t := trial_of(master, trial_id)["trial"])["state"] == "PAUSED"
                      and not any(j["active"] for j in t["jobs"]) and t,
                      "the paused trial's job to end", 120)
    first_job = paused["jobs"][0]["job_id"]
    # Those still kept when the job ended (the GC may delete older ones later).
    saved = {c["steps_completed"] for c in trial_of(master, trial_id)["checkpoints"]}
    assert len(paused["jobs"]) == 1, paused
    master.det("experiment", "activate", str(exp_id), check=True)
    ended(master, exp_id)
    detail = trial_of(master, trial_id)
    trial = detail["trial"]
    assert trial["restarts"] == 0 and len(trial["jobs"]) == 2, trial
    entries = logs(master, trial_id)
    assert first_batches(entries, first_job) == [0], entries[-20:]
    resumed = first_batches(entries, trial["jobs"][1]["job_id"])
    # The second job starts at a checkpointed batch, not at 0.
    assert len(resumed) == 1 and resumed[0] > 0 and resumed[0] in saved, (resumed, saved)
    validation = metrics(master, trial_id, "validation")
    assert [m["metrics"]["epochs"] for m in validation] == [1, 2, 3, 4], validation


def test_a_trial_longer_than_the_queue_walltime_completes_across_jobs(
        master: LiveMaster) -> None:
    # The short queue's resources_max.walltime (one minute) becomes the job's walltime;
    # 30 epochs at 0.1 s a batch train for about 70 s.
    epochs = 30
    exp_id = create(master, config(master, "pbs-walltime", epochs=epochs, pace=0.1,
                                   resources={"slots_per_trial": 1, "resource_pool": "short"}))
    trial_id = only_trial(master, exp_id)
    ended(master, exp_id, timeout=400)
    trial = trial_of(master, trial_id)["trial"]
    assert trial["restarts"] == 0 and trial["interruptions"] >= 1, trial
    assert len(trial["jobs"]) >= 2, trial
    first = qstat(trial["jobs"][0]["job_id"])
    assert (first["queue"], first["Resource_List"]["walltime"]) == ("short", "00:01:00")
    # PBS ended the first job at its walltime: JOB_EXEC_KILL_WALLTIME (-29).
    assert first["Exit_status"] == -29 and "exceeded" in first["comment"], first
    entries = logs(master, trial_id)
    later = [first_batches(entries, job["job_id"]) for job in trial["jobs"][1:]]
    assert all(b and b[0] > 0 for b in later), later
    validation = metrics(master, trial_id, "validation")
    assert [m["metrics"]["epochs"] for m in validation] == list(range(1, epochs + 1))


def test_an_asha_search_of_eight_trials_completes(master: LiveMaster) -> None:
    # About a second an epoch: long enough for a stop (polled every second) to land
    # before a trial's last epoch.
    search = config(master, "pbs-asha", epochs=1, pace=0.04)
    search["hyperparameters"] = {
        "lr": {"type": "log", "base": 10, "minval": -3, "maxval": -1},
        "hidden_size": {"type": "int", "minval": 16, "maxval": 64},
        "global_batch_size": 64}
    search["searcher"] = {"name": "adaptive_asha", "metric": "validation_loss",
                          "smaller_is_better": True, "time_metric": "epochs", "max_time": 4,
                          "max_trials": 8, "mode": "aggressive", "max_rungs": 2, "divisor": 2,
                          "max_concurrent_trials": 4}
    exp_id = create(master, search)
    exp = ended(master, exp_id, timeout=600)
    trials = exp["trials"]
    assert len(trials) == 8 and all(t["state"] == "COMPLETED" for t in trials), trials
    lengths = sorted(max((m["metrics"]["epochs"] for m in metrics(master, t["id"],
                                                                   "validation")), default=0)
                     for t in trials)
    # Aggressive, 2 rungs of divisor 2: every trial reaches rung 1 (2 epochs), and at
    # least one, but not all, goes on to 4.
    assert lengths[0] >= 2 and lengths[-1] == 4 and lengths[0] < 4, lengths
