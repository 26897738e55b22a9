"""Slurm 25.11's expedited requeue: asked for at submit time where the cluster allows it,
rendered as ``--requeue=expedite``, read by every option reader, and a failed execution that
Slurm holds because of it read as the failure it is.

The cluster's answers are recorded from the dev cluster (docs/dev-cluster.md, "Two Slurm
versions"); the real thing: tests/integration/test_it_faults.py on 25.11.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from hpcdet.dispatcher import JobPhase, JobRef, JobSpec
from hpcdet.dispatcher.slurm import sbatch_options
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.rest import records
from hpcdet.dispatcher.slurm.status import queue_status
from hpcdet.runas import directives

SHOW_CONFIG = {
    "22.05": "SlurmctldParameters     = preempt_send_user_signal\nSLURM_VERSION = 22.05.8\n",
    "25.11": "SlurmctldParameters     = preempt_send_user_signal,enable_expedited_requeue\n"
             "SLURM_VERSION = 25.11.7\n",
}
# squeue --Format=JobArrayID:|,State:|,RestartCnt:|,NodeList:|,Reason:| on 25.11.7 for a job
# submitted with --requeue=expedite whose script exited 3: requeued, then held for ever
# (scontrol: JobState=REQUEUE_HOLD Restarts=1 ExitCode=3:0 Priority=0 ExpeditedRequeue=Yes).
HELD_AFTER_FAILURE = "1000007|REQUEUE_HOLD|1||job requeued in held state|\n"
# A job between its end and Slurm's decision (run again at once after a node failure, or
# hold after a failed execution): its requeue is not counted until it is settled. Recorded
# after a node failure: EXPEDITING for about half a second, then RUNNING on the other node.
EXPEDITING = "1000003|EXPEDITING|1||None|\n"
RUNNING_AGAIN = "1000003|RUNNING|1|node6|None|\n"
# An administrator's scontrol requeuehold of a running job (expedited or not): the same reason,
# but PENDING, not REQUEUE_HOLD: a requeue, held (as before).
HELD_BY_ADMIN = "1000002|PENDING|1||job requeued in held state|\n"


def _requeueable(job_spec: Callable[[str], JobSpec]) -> JobSpec:
    return replace(job_spec("none"), requeue=True)


def _requeue_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if "requeue" in line]


# ---- asking for it -------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "expected"), [
    ("25.11", ["#SBATCH --requeue=expedite"]), ("22.05", ["#SBATCH --requeue"])])
def test_a_submission_asks_for_it_where_the_cluster_allows_it(
        release: str, expected: list[str], job_spec: Callable[[str], JobSpec],
        recorded_slurm: Any) -> None:
    runner = recorded_slurm({"scontrol": SHOW_CONFIG[release]})
    backend = SlurmBackend(runner=runner)
    for _ in range(2):
        spec = backend.with_expedited_requeue(_requeueable(job_spec))
        assert _requeue_lines(backend.render(spec).script) == expected
    assert runner.calls == [("scontrol", "show", "config")]  # read once


def test_render_alone_stays_pure_and_plain(job_spec: Callable[[str], JobSpec],
                                           recorded_slurm: Any) -> None:
    """A dry run renders the spec as built: no scheduler command, plain --requeue."""
    runner = recorded_slurm({"scontrol": SHOW_CONFIG["25.11"]})
    script = SlurmBackend(runner=runner).render(_requeueable(job_spec)).script
    assert _requeue_lines(script) == ["#SBATCH --requeue"]
    assert runner.calls == []


def test_a_job_that_is_not_requeueable_stays_so(job_spec: Callable[[str], JobSpec],
                                                recorded_slurm: Any) -> None:
    backend = SlurmBackend(runner=recorded_slurm({"scontrol": SHOW_CONFIG["25.11"]}))
    spec = backend.with_expedited_requeue(job_spec("none"))
    assert not spec.expedited_requeue
    assert _requeue_lines(backend.render(spec).script) == ["#SBATCH --no-requeue"]


def test_the_expedited_script_differs_from_the_golden_one_by_that_line(
        job_spec: Callable[[str], JobSpec]) -> None:
    plain = SlurmBackend().render(_requeueable(job_spec)).script
    fast = SlurmBackend().render(replace(_requeueable(job_spec), expedited_requeue=True)).script
    assert fast == plain.replace("#SBATCH --requeue\n", "#SBATCH --requeue=expedite\n")


def test_every_reader_of_sbatch_options_takes_it(job_spec: Callable[[str], JobSpec],
                                                 sbatch_directives: Callable[[str], list[str]]
                                                 ) -> None:
    """What sbatch reads, the run-as helper's reader (it submits the owner's script) and
    det sbatch's option table; 22.05's SBATCH_REQUEUE=1 stays a flag."""
    script = SlurmBackend().render(replace(_requeueable(job_spec),
                                           expedited_requeue=True)).script
    assert "--requeue=expedite" in sbatch_directives(script)
    assert ("requeue", "expedite") in directives.sbatch_settings(script)
    assert directives.sbatch_getopt(["--requeue", "x"]).settings == [("requeue", None)]
    words = [sbatch_options.Word("--requeue=expedite", "spec.sbatch_args")]
    assert sbatch_options.parse_words(words).settings == [("requeue", "expedite")]
    assert sbatch_options.environment_settings({"SBATCH_REQUEUE": "1"}) == [("requeue", None)]
    assert sbatch_options.environment_settings(
        {"SBATCH_REQUEUE": "expedite"}) == [("requeue", "expedite")]


# ---- reading a held failure ------------------------------------------------------------------


def test_a_failed_execution_slurm_holds_reads_as_a_failure_left_to_cancel(
        tmp_path: Any, recorded_slurm: Any) -> None:
    backend = SlurmBackend(runner=recorded_slurm({"squeue": HELD_AFTER_FAILURE}))
    status = backend.poll([JobRef("1000007", str(tmp_path))])["1000007"]
    assert (status.phase, status.native_state, status.lingering) == (
        JobPhase.FAILED, "REQUEUE_HOLD", True)
    # The restart Slurm counted for the hold is the end itself, not a requeue to adopt.
    assert status.restarts == 0
    assert status.reason == "job requeued in held state"


@pytest.mark.parametrize(("line", "phase", "restarts"), [
    (EXPEDITING, JobPhase.PENDING, 0), (RUNNING_AGAIN, JobPhase.RUNNING, 1),
    (HELD_BY_ADMIN, JobPhase.PENDING, 1)])
def test_a_node_failures_requeue_and_an_admins_requeuehold_read_as_before(
        line: str, phase: JobPhase, restarts: int, tmp_path: Any, recorded_slurm: Any) -> None:
    job_id = line.split("|")[0]
    status = SlurmBackend(runner=recorded_slurm({"squeue": line})).poll(
        [JobRef(job_id, str(tmp_path))])[job_id]
    assert (status.phase, status.restarts, status.lingering) == (phase, restarts, False)


def test_slurmrestd_reads_the_same_hold_from_its_description() -> None:
    """slurmrestd gives the reason's code and slurmctld's description apart; squeue (and
    pyslurm's state_reason) print the description where there is one."""
    record = {"job_id": 1000007, "job_state": ["PENDING", "REQUEUE_HOLD"], "restart_cnt": 1,
              "state_reason": "JobHeldUser", "state_description": "job requeued in held state",
              "nodes": ""}
    status = records.job_statuses([record])["1000007"]
    assert status == queue_status("1000007", "REQUEUE_HOLD", restarts=1, nodes="",
                                  reason="job requeued in held state")
    assert (status.phase, status.lingering) == (JobPhase.FAILED, True)
