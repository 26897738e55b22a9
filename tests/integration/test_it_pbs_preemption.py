"""Preemption on the dev OpenPBS server: an ``express`` job (queue priority 150, the
scheduler's ``preempt_queue_prio``; ``preempt_order R``) requeues a running trial.

The stand-in trial (``standin/standin.py``, test_it_pbs_training's) runs on 2 slots of
``workq`` (``pbs.slots_per_node: 1``: one cpu on each of ``pbsn1`` and ``pbsn2``, 2 cpus
each). ``user_b`` then submits a plain ``qsub -q express``
job asking for one whole host (``select=1:ncpus=2``), which fits only if the trial goes.
PBS requeues the trial's job (same id; SIGTERM, then SIGKILL ``kill_delay`` = 5 s later,
``-r y``): the harness checkpoints on the SIGTERM and exits, leaving its ``preempted``
exit reason; the master adopts the requeue as an interruption (not a restart:
``max_restarts`` is 0); once the express job ends, the same PBS job runs again
(``run_count`` 2), resumes from the checkpoint and COMPLETES, every epoch validated once.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from it_helpers import REPO, wait_for
from it_pbs import PBS_BIN, pbs_as, pbs_master, qdel_all, qstat
from test_it_pbs_training import (
    config,
    create,
    ended,
    first_batches,
    logs,
    metrics,
    only_trial,
    trial_of,
)

pytestmark = [pytest.mark.pbs]


@pytest.fixture
def pbs_jobs() -> Iterator[list[str]]:
    """PBS job ids to delete at the end of the test, whatever happened."""
    jobs: list[str] = []
    yield jobs
    qdel_all(jobs)


def qsub_express(seconds: int) -> str:
    """``user_b``'s plain express job holding one whole host for ``seconds``."""
    out = pbs_as("user_b", f"{PBS_BIN}/qsub", "-q", "express", "-N", "it-pbs-express",
                 "-l", "select=1:ncpus=2", "-l", "walltime=00:02:00", "-j", "oe",
                 "-o", "/dev/null", "--", "/bin/sleep", str(seconds))
    return out.strip()


def test_an_express_job_preempts_a_trial_which_resumes_and_completes(
        pbs_jobs: list[str]) -> None:
    epochs = 12  # about 3 s an epoch at 0.12 s a batch: still training when PBS preempts
    with pbs_master("preempt") as master:
        settings = config(master, "pbs-preempt", epochs=epochs, slots=2, pace=0.12)
        # The harness of this tree (a worktree's .venv may be another checkout's).
        settings["environment"]["environment_variables"].append(f"PYTHONPATH={REPO}")
        exp_id = create(master, settings)
        trial_id = only_trial(master, exp_id)
        wait_for(lambda: trial_of(master, trial_id)["checkpoints"], "a first checkpoint", 240)
        job_id = trial_of(master, trial_id)["trial"]["jobs"][0]["job_id"]
        pbs_jobs.append(job_id)
        assert qstat(job_id)["job_state"] == "R"
        express = qsub_express(15)
        pbs_jobs.append(express)
        # PBS requeues the trial's job: it waits again, having run once.
        wait_for(lambda: (r := qstat(job_id))["job_state"] == "Q" and r, "the requeue", 120)
        saved = {c["steps_completed"] for c in trial_of(master, trial_id)["checkpoints"]}
        wait_for(lambda: qstat(express)["job_state"] in ("R", "F"), "the express job", 60)
        exp = ended(master, exp_id, timeout=300)
        detail = trial_of(master, trial_id)
        entries = logs(master, trial_id)
        # os.walk, not rglob: the checkpoint GC of the ended experiment prunes jobs/ckpt
        # meanwhile, and rglob raises on a directory gone mid-walk (CI saw it).
        reasons = [Path(top, name) for top, _, names in os.walk(master.job_root)
                   for name in fnmatch.filter(names, f"exit-reason-{job_id}.*")]
        validation = metrics(master, trial_id, "validation")
    trial = detail["trial"]
    assert exp["experiment"]["state"] == "COMPLETED"
    # One PBS job, requeued once: an interruption, not a restart.
    assert [j["job_id"] for j in trial["jobs"]] == [job_id], trial
    assert trial["interruptions"] == 1 and trial["restarts"] == 0, trial
    record = qstat(job_id)
    assert (record["job_state"], record["Exit_status"], record["run_count"]) == ("F", 0, 2), (
        record)
    # The first execution checkpointed on SIGTERM and said so.
    assert [p.name for p in reasons] == [f"exit-reason-{job_id}.0.json"], reasons
    # The second execution started from a checkpoint saved before the requeue, not at 0.
    batches = first_batches(entries, job_id)
    assert len(batches) == 4 and batches[:2] == [0, 0], batches  # 2 ranks, 2 executions
    assert batches[2] == batches[3] > 0 and batches[2] in saved, (batches, saved)
    assert [m["metrics"]["epochs"] for m in validation] == list(range(1, epochs + 1)), (
        validation)
    assert qstat(express)["Exit_status"] == 0
