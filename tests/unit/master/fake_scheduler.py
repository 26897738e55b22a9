"""A scripted scheduler for the master's unit tests (named as the fake it is)."""

from __future__ import annotations

from collections.abc import Sequence

from hpcdet.dispatcher import JobPhase, JobRef, JobStatus, Submission
from hpcdet.dispatcher.slurm import SlurmBackend
from hpcdet.errors import SchedulerError


class FakeSchedulerBackend(SlurmBackend):
    """A fake scheduler for unit tests: renders for real, but submit/poll/cancel are scripted.

    The same reconciler runs against the real dev Slurm cluster in tests/integration.
    """

    def __init__(self) -> None:
        super().__init__()
        self.submitted: list[Submission] = []
        self.phases: dict[str, JobPhase] = {}
        self.poll_calls: list[list[str]] = []
        self.cancelled: list[str] = []
        self.fail_submit = False

    def submit(self, submission: Submission) -> str:
        if self.fail_submit:
            raise SchedulerError(["sbatch"], 1, "", "sbatch: error: invalid partition")
        self.submitted.append(submission)
        job_id = str(100 + len(self.submitted))
        self.phases[job_id] = JobPhase.PENDING
        return job_id

    def poll(self, jobs: Sequence[JobRef]) -> dict[str, JobStatus]:
        self.poll_calls.append([j.job_id for j in jobs])
        return {j.job_id: JobStatus(j.job_id, self.phases[j.job_id], self.phases[j.job_id].value,
                                    reason="Resources", exit_code=0, nodes="node1")
                for j in jobs}

    def cancel(self, job_ids: Sequence[str]) -> None:
        self.cancelled += job_ids
        for job_id in job_ids:
            self.phases[job_id] = JobPhase.CANCELLED
