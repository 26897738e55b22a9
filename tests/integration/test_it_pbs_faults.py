"""Faults, external jobs and priorities on the real dev OpenPBS server, through a live
master with ``resource_manager.type: pbs`` and the real ``det`` CLI.

1. ``qdel`` of a running trial's job by someone else (the ``hpcdet`` PBS manager) ends the
   trial ERROR (``max_restarts: 0``), the state history naming the cancelled job;
2. ``kill -9`` of the master mid-training (the stand-in trial, ``standin/standin.py``),
   restarted on the same database: the PBS job is adopted again (no second ``qsub``) and
   the trial COMPLETES with every epoch's validation;
3. ``det job list`` shows a plain ``qsub`` job of ``user_b`` as EXTERNAL, in PBS's order;
4. three waiting trials of ``resources.priority`` 80, 42 and 10 (the worst submitted first)
   behind an external job that fills both hosts get PBS priorities (``qsub -p``) in the
   order 10, 42, 80, and ``det job list`` lists them so; ``det job update --ahead-of``
   reorders them (``qalter -p``: 10, 80, 42), and once the external job is deleted PBS
   *starts* them in that order. That is the scheduler's business: it needs
   ``job_sort_key: "job_priority HIGH" ALL`` in ``sched_config`` (``scripts/dev-pbs up``
   sets it); without it PBS starts them first come, first served (measured).

The other trials run a short sleeper (no training): what is under test there is hpcdet's
handling of PBS's jobs, not the harness.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from it_helpers import (
    STANDIN,
    STANDIN_ENTRYPOINT,
    LiveMaster,
    experiment_with_trials,
    load_json,
    trials_of,
    wait_for,
)
from it_pbs import PBS_BIN, USER, create_experiment, pbs_as, pbs_master, qdel_all, qstat

pytestmark = pytest.mark.pbs

SLEEPER = "import sys, time\nprint('trial started', flush=True)\ntime.sleep(float(sys.argv[1]))\n"


def sleeper_config(seconds: float, **extra: Any) -> dict[str, Any]:
    """A one-slot trial sleeping ``seconds``, never restarted."""
    return {"entrypoint": f"python3 sleeper.py {seconds}", "max_restarts": 0,
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
            **extra}


def trial_of(master: LiveMaster, exp_id: int) -> dict[str, Any] | None:
    trials = trials_of(master, exp_id)
    return dict(master.api(f"/trials/{trials[0]['id']}")["trial"]) if trials else None


def running_job(master: LiveMaster, exp_id: int) -> tuple[dict[str, Any], str]:
    """(trial, PBS job id) once the experiment's trial runs."""
    def probe() -> tuple[dict[str, Any], str] | None:
        trial = trial_of(master, exp_id)
        if not trial or trial["state"] != "RUNNING" or not trial["jobs"]:
            return None
        return trial, str(trial["jobs"][-1]["job_id"])
    found: tuple[dict[str, Any], str] = wait_for(probe, f"experiment {exp_id} to run", 180)
    return found


def ended(master: LiveMaster, exp_id: int, timeout: float = 180) -> dict[str, Any]:
    answer = wait_for(lambda: (lambda a: a if a["experiment"]["ended_at"] else None)(
        experiment_with_trials(master, exp_id)), f"experiment {exp_id} to end", timeout)
    return dict(answer)


@pytest.fixture
def pbs_jobs() -> Iterator[list[str]]:
    """PBS job ids the test started or made hpcdet start: deleted at its end, whatever
    happened (the master stops right after the test, maybe before it cancelled them)."""
    jobs: list[str] = []
    yield jobs
    qdel_all(jobs)


def test_qdel_outside_hpcdet_ends_the_trial_in_error(pbs_jobs: list[str]) -> None:
    with pbs_master("qdel") as master:
        exp_id = create_experiment(master, "qdel", sleeper_config(300), {"sleeper.py": SLEEPER})
        trial, job_id = running_job(master, exp_id)
        pbs_jobs.append(job_id)
        pbs_as("hpcdet", f"{PBS_BIN}/qdel", job_id)  # the PBS manager, not the trial's owner
        answer = ended(master, exp_id)
        described = load_json(master.det("trial", "describe", str(trial["id"]), "--json",
                                          check=True).stdout)["trial"]
    assert answer["experiment"]["state"] == "ERROR", answer
    assert described["state"] == "ERROR" and described["restarts"] == 0, described
    assert [j["job_id"] for j in described["jobs"]] == [job_id]
    cause = described["history"][-1]["cause"]
    assert job_id in cause and "CANCELLED" in cause, described["history"]
    assert "max_restarts (0) reached" in cause, cause
    record = qstat(job_id)
    assert record["job_state"] == "F" and record["Job_Owner"].startswith(f"{USER}@"), record


def paced_config(epochs: int, pace: float, storage: str) -> dict[str, Any]:
    """The stand-in trial on one slot, paced, validating and checkpointing every epoch."""
    return {"entrypoint": STANDIN_ENTRYPOINT, "max_restarts": 0,
            "hyperparameters": {"lr": 0.01, "hidden_size": 32, "global_batch_size": 64},
            "min_validation_period": {"epochs": 1}, "min_checkpoint_period": {"epochs": 1},
            "searcher": {"name": "single", "metric": "validation_loss",
                         "smaller_is_better": True, "max_length": {"epochs": epochs}},
            "checkpoint_storage": {"type": "shared_fs", "host_path": storage},
            "environment": {"environment_variables": [f"STANDIN_BATCH_SLEEP={pace}"]}}


def validated_epochs(master: LiveMaster, trial_id: int) -> list[int]:
    reports = master.api(f"/trials/{trial_id}/metrics?group=validation")["metrics"]
    return [int(report["metrics"]["epochs"]) for report in reports]


def test_master_killed_mid_training_adopts_its_pbs_job_again(pbs_jobs: list[str]) -> None:
    with pbs_master("kill9") as master:
        files = {"standin.py": STANDIN.read_text()}
        storage = master.job_root / "checkpoints"  # under an allowed storage root
        exp_id = create_experiment(master, "kill9", paced_config(5, 0.1, str(storage)), files)
        trial, job_id = running_job(master, exp_id)
        pbs_jobs.append(job_id)
        wait_for(lambda: validated_epochs(master, trial["id"]), "a first validation", 180)
        master.kill9()
        with pytest.raises(httpx.TransportError):  # every process of it is gone
            httpx.get(f"{master.url}/api/v1/master", timeout=2)
        assert qstat(job_id)["job_state"] == "R"  # PBS keeps running it without the master
        time.sleep(4)  # the master is down a while; the trial trains and buffers its reports
        master.start()
        assert trial_of(master, exp_id)["state"] == "RUNNING"  # type: ignore[index]
        answer = ended(master, exp_id)
        final = trial_of(master, exp_id)
        epochs = validated_epochs(master, trial["id"])
    assert answer["experiment"]["state"] == "COMPLETED", (answer, master.log.read_text()[-3000:])
    assert final is not None and final["state"] == "COMPLETED", final
    assert [j["job_id"] for j in final["jobs"]] == [job_id], final  # no second qsub
    assert final["restarts"] == 0 and final["interruptions"] == 0, final
    assert epochs == [1, 2, 3, 4, 5], epochs  # every validation, including the outage's
    assert qstat(job_id)["Exit_status"] == 0


def qsub_blocker(name: str) -> str:
    """A plain qsub job of ``user_b`` (not hpcdet's) holding both hosts until deleted."""
    out = pbs_as("user_b", f"{PBS_BIN}/qsub", "-N", name, "-l", "select=2:ncpus=2",
                 "-l", "place=scatter", "-l", "walltime=00:10:00", "-j", "oe", "-o", "/dev/null",
                 "--", "/bin/sleep", "600")
    return out.strip()


def job_rows(master: LiveMaster) -> list[dict[str, Any]]:
    return list(load_json(master.det("job", "list", "--json", check=True).stdout)["jobs"])


def queue_positions(master: LiveMaster, job_ids: list[str]) -> list[str]:
    """The jobs of ``job_ids`` in ``det job list``'s order, once all are listed."""
    def probe() -> list[str] | None:
        listed = [row["job_id"] for row in job_rows(master) if row["job_id"] in job_ids]
        return listed if len(listed) == len(job_ids) else None
    found: list[str] = wait_for(probe, f"{job_ids} in det job list", 60)
    return found


def pbs_priority(job_id: str) -> int:
    return int(qstat(job_id)["Priority"])


def queued_job(master: LiveMaster, exp_id: int) -> str:
    """The PBS job of the experiment's trial once PBS has queued it."""
    def probe() -> str | None:
        trial = trial_of(master, exp_id)
        ids = [str(j["job_id"]) for j in (trial or {}).get("jobs", []) if j["job_id"]]
        return ids[0] if ids and qstat(ids[0])["job_state"] == "Q" else None
    found: str = wait_for(probe, f"experiment {exp_id}'s job to be queued", 120)
    return found


def test_external_job_and_priority_order_on_pbs(pbs_jobs: list[str]) -> None:
    # The whole cluster per trial (2 hosts x 2 cpus): they run one at a time, in PBS's order.
    whole = {"resources": {"slots_per_trial": 4}, "pbs": {"slots_per_node": 2}}
    with pbs_master("prio", {"pool_refresh_seconds": 1}) as master:
        blocker = qsub_blocker("it-pbs-blocker")
        pbs_jobs.append(blocker)
        # Both hosts whole: it may wait for other jobs on the shared dev server to end.
        wait_for(lambda: qstat(blocker)["job_state"] == "R", "the blocker to run", 300)
        exp_ids = {}
        for priority in (80, 42, 10):  # the worst first: FIFO would start it first
            config = sleeper_config(1, **whole)
            config["resources"]["priority"] = priority
            exp_ids[priority] = create_experiment(master, f"prio-{priority}", config,
                                                  {"sleeper.py": SLEEPER})
        jobs = {priority: queued_job(master, exp_id) for priority, exp_id in exp_ids.items()}
        pbs_jobs.extend(jobs.values())
        order = [jobs[10], jobs[42], jobs[80]]
        priorities = [pbs_priority(job_id) for job_id in order]
        assert priorities == sorted(priorities, reverse=True) and len(set(priorities)) == 3, (
            dict(zip(order, priorities, strict=True)))
        assert queue_positions(master, [blocker, *jobs.values()]) == [blocker, *order]
        rows = {row["job_id"]: row for row in job_rows(master)}
        assert rows[blocker]["type"] == "EXTERNAL" and rows[blocker]["external"] is True
        assert (rows[blocker]["slurm_user"], rows[blocker]["state"]) == ("user_b", "SCHEDULED")
        assert all(rows[j]["type"] == "EXPERIMENT" and rows[j]["state"] == "QUEUED"
                   for j in order), rows
        assert {p: rows[j]["priority"] for p, j in jobs.items()} == {80: 80, 42: 42, 10: 10}

        moved = master.det("job", "update", jobs[80], "--ahead-of", jobs[42], check=True).stdout
        assert f"ahead of job {jobs[42]}" in moved, moved
        order = [jobs[10], jobs[80], jobs[42]]
        assert pbs_priority(jobs[80]) > pbs_priority(jobs[42])
        wait_for(lambda: queue_positions(master, order) == order, "the new order listed", 30)

        # With sched_config's job_sort_key "job_priority HIGH" (scripts/dev-pbs up sets it),
        # PBS starts them in that order once the blocker is gone.
        pbs_as("user_b", f"{PBS_BIN}/qdel", blocker)
        for exp_id in exp_ids.values():
            assert ended(master, exp_id, 300)["experiment"]["state"] == "COMPLETED"
    starts = [start_time(job_id) for job_id in order]
    assert starts == sorted(starts) and len(set(starts)) == 3, dict(zip(order, starts,
                                                                       strict=True))


def start_time(job_id: str) -> float:
    """When PBS started the job (``stime``, to the second)."""
    stime = qstat(job_id)["stime"]
    return time.mktime(time.strptime(stime, "%a %b %d %H:%M:%S %Y"))
