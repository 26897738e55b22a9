"""A scripted scheduler for the master's unit tests (named as the fake it is)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hpcdet.dispatcher import (
    ArrayLimits,
    ArraySpec,
    JobPhase,
    JobRef,
    JobSpec,
    JobStatus,
    Submission,
)
from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.slurm.backend import SlurmBackend
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
        self.restarts: dict[str, int] = {}
        self.names: dict[str, str] = {}
        self.find_calls: list[list[str]] = []
        # Slurm's pending reason per job id ("Resources" when not set).
        self.reasons: dict[str, str] = {}
        # The nodes a job runs on, per job id ("node1" when not set).
        self.nodes: dict[str, str] = {}
        # Simulate the master dying during the next sbatch: "before" it reached Slurm, or
        # "after" Slurm queued the job but before the master learnt its id.
        self.crash: str | None = None
        # False: scancel only signals the jobs (as Slurm does to a running job, which ends
        # after KillWait); the test ends them by setting their phase.
        self.cancel_ends_jobs = True
        # Job arrays: None submits one job per trial (as a scheduler without arrays does).
        self.arrays: ArrayLimits | None = None
        self.submitted_arrays: list[tuple[Submission, ArraySpec]] = []
        # Whether the cluster allows an expedited requeue (what scontrol show config says).
        self.expedite = False
        # Jobs the scheduler still holds after they ended (Slurm: an expedited job's failed
        # execution, requeued and held); poll reports them lingering until cancelled.
        self.lingering: set[str] = set()

    def with_expedited_requeue(self, spec: JobSpec) -> JobSpec:
        """As the real backend, with :attr:`expedite` for the cluster's answer."""
        return replace(spec, expedited_requeue=spec.requeue and self.expedite)

    def array_limits(self) -> ArrayLimits | None:
        return self.arrays

    def submit_array(self, submission: Submission, array: ArraySpec) -> str:
        """Like :meth:`submit`, for an array: every task pending as ``<id>_<index>``."""
        self._before_sbatch()
        self.submitted.append(submission)
        self.submitted_arrays.append((submission, array))
        array_id = self.new_array_id()
        for index in range(len(array.scripts)):
            self.phases[self.array_task_id(array_id, index)] = JobPhase.PENDING
        self.names[array.name] = array_id
        if self.crash == "after":
            self.crash = None
            raise KeyboardInterrupt(f"the master died after sbatch queued array {array_id}")
        return array_id

    def new_array_id(self) -> str:
        """Slurm's: a plain number."""
        return str(100 + len(self.submitted))

    def _before_sbatch(self) -> None:
        """A refused submission, or the master dying before sbatch ran, as scripted."""
        if self.fail_submit:
            raise SchedulerError(["sbatch"], 1, "", "sbatch: error: invalid partition")
        if self.crash == "before":
            self.crash = None
            raise KeyboardInterrupt("the master died before sbatch ran")

    def submit(self, submission: Submission) -> str:
        self._before_sbatch()
        self.submitted.append(submission)
        job_id = str(100 + len(self.submitted))
        self.phases[job_id] = JobPhase.PENDING
        self.names[_job_name(submission.script)] = job_id
        if self.crash == "after":
            self.crash = None
            raise KeyboardInterrupt(f"the master died after sbatch queued job {job_id}")
        return job_id

    def poll(self, jobs: Sequence[JobRef]) -> dict[str, JobStatus]:
        self.poll_calls.append([j.job_id for j in jobs])
        return {j.job_id: JobStatus(j.job_id, self.phases[j.job_id], self.phases[j.job_id].value,
                                    reason=self.reasons.get(j.job_id, "Resources"),
                                    exit_code=self._exit_code(j.job_id),
                                    nodes=self.nodes.get(j.job_id, "node1"),
                                    restarts=self.restarts.get(j.job_id, 0),
                                    lingering=j.job_id in self.lingering)
                for j in jobs}

    def _exit_code(self, job_id: str) -> int:
        return 0 if self.phases[job_id] in (JobPhase.COMPLETED, JobPhase.PENDING,
                                            JobPhase.RUNNING) else 1

    def find(self, names: Sequence[str]) -> dict[str, str]:
        self.find_calls.append(list(names))
        return {name: self.names[name] for name in names if name in self.names}

    def cancel(self, job_ids: Sequence[str], owner: str | None = None) -> None:
        self.cancelled += job_ids
        self.lingering -= set(job_ids)
        for job_id in job_ids if self.cancel_ends_jobs else ():
            self.phases[job_id] = JobPhase.CANCELLED


class FakePbsIdsBackend(FakeSchedulerBackend):
    """The fake with PBS's array ids: qsub -J answers ``101[].vm``, subjobs ``101[4].vm``."""

    array_task_id = staticmethod(PbsBackend.array_task_id)
    array_entry = staticmethod(PbsBackend.array_entry)
    array_pending_task_ids = staticmethod(PbsBackend.array_pending_task_ids)
    array_task_prefix = staticmethod(PbsBackend.array_task_prefix)

    def new_array_id(self) -> str:
        return f"{100 + len(self.submitted)}[].vm"


def _job_name(script: str) -> str:
    for line in script.splitlines():
        if line.startswith("#SBATCH --job-name="):
            return line.split("=", 1)[1].strip("'")
    return ""


CLUSTER_CONFIG = "ClusterName             = hpcdet-dev\n"
# sacctmgr -n -P show assoc ... on a cluster where only det-team-a exists (weight 3, user svc).
ASSOCS = "root|||1\nroot|root||1\nhpcdet||root|1\nhpcdet|svc||1\ndet-team-a||hpcdet|3\n" \
         "det-team-a|svc||1\n"


class FakeSlurm:
    """scontrol/sacctmgr answers; records every argv; sacctmgr writes change nothing."""

    def __init__(self, assocs: str = ASSOCS, admin_level: str = "None") -> None:
        self.assocs = assocs
        self.admin_level = admin_level
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str:
        self.calls.append(tuple(argv))
        if argv[0] == "scontrol":
            return CLUSTER_CONFIG
        if argv[3:5] == ["show", "assoc"]:
            return self.assocs
        if argv[3:5] == ["show", "user"]:
            return self.admin_level + "\n"
        return ""

    def writes(self) -> list[tuple[str, ...]]:
        return [call for call in self.calls if call[1] == "-i"]
