"""The backend interface every scheduler module implements, and the values it exchanges.

A backend does four things, and only :meth:`Backend.render` is pure:

* ``render(spec) -> Submission``: the job script text and the submit argv (``--dry-run``
  prints this and nothing else happens);
* ``submit(submission) -> job_id``: writes the script into the job directory and submits it;
* ``poll(jobs) -> {job_id: JobStatus}``: one status for *every* job asked about, gathered
  with a bounded number of scheduler commands per call (Slurm: one ``squeue`` and at most
  one ``sacct``), never one command per job;
* ``cancel(job_ids)``: one command for all of them;
* ``find(names) -> {name: job_id}``: the jobs submitted under these names, with one
  command (plus at most one for finished jobs). A master that crashed between recording
  its intent to submit and learning the job id uses it instead of submitting again.

Every scheduler command runs through :mod:`hpcdet.dispatcher.commands`, the one place
that starts scheduler processes.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.pools import PartitionInfo
from hpcdet.dispatcher.queue import JobUpdate, QueueEntry
from hpcdet.dispatcher.transport.base import Transport
from hpcdet.errors import HpcdetError


class JobPhase(str, enum.Enum):
    """A scheduler's view of one job, normalised across schedulers.

    This is an *observation* from the scheduler, not a lifecycle state: the master maps
    phases onto trial states through its one transition function.
    """

    PENDING = "PENDING"          # queued, held, configuring, requeued and waiting
    RUNNING = "RUNNING"          # running, completing, suspended
    COMPLETED = "COMPLETED"      # exited 0
    FAILED = "FAILED"            # non-zero exit of the job script
    CANCELLED = "CANCELLED"      # scancel or an administrator
    TIMEOUT = "TIMEOUT"          # hit its time limit
    PREEMPTED = "PREEMPTED"      # preempted and not requeued
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    BOOT_FAIL = "BOOT_FAIL"
    MISSING = "MISSING"          # the scheduler knows nothing of it (and no exit file)
    UNKNOWN = "UNKNOWN"          # a native state this backend does not recognise
    # Never a scheduler's answer: the master recorded the intent to submit, but no scheduler
    # ever saw the job (the master restarted before the submission reached it).
    NOT_SUBMITTED = "NOT_SUBMITTED"

    @property
    def is_terminal(self) -> bool:
        return self not in (JobPhase.PENDING, JobPhase.RUNNING, JobPhase.UNKNOWN)


@dataclass(frozen=True)
class BindMount:
    """A host path made visible inside the container."""

    host_path: str
    container_path: str
    read_only: bool = False
    # hpcdet's own directory (the checkpoint storage) that may not exist yet: the job script
    # makes it before starting the ranks (podman and apptainer refuse a missing source).
    create: bool = False


@dataclass(frozen=True)
class ContainerSpec:
    """How each rank's command is wrapped: a container runtime, or none."""

    run_type: str = "none"  # apptainer | singularity | enroot | podman | charliecloud | none
    image: str | None = None
    bind_mounts: tuple[BindMount, ...] = ()
    use_gpus: bool = False
    # Variables a runtime that does not inherit the environment (podman) must be given.
    pass_environment: tuple[str, ...] = ()
    # environment.force_pull_image: fetch the image again for this job (apptainer/singularity
    # --disable-cache for a URI image, podman --pull=always); nothing to pull otherwise.
    force_pull: bool = False


@dataclass(frozen=True)
class JobSpec:
    """Everything needed to render one batch job, in scheduler-neutral terms.

    Resources are counted the way trials use them: ``nodes`` nodes, each running
    ``ranks_per_node`` ranks (one per slot) of ``cpus_per_rank`` CPUs, with ``gpus_per_node``
    GPUs (of ``gpu_type``, if named). Each backend turns these into its own request (Slurm:
    one task per node holding its ranks' CPUs and ``--gpus``/``--gres``, then an ``srun``
    step of one task per rank; PBS: ``-l select=N:ncpus=..:ngpus=..:mpiprocs=..``).
    Values are validated at render time.
    """

    name: str
    job_dir: str
    nodes: int
    ranks_per_node: int
    command: tuple[str, ...]
    # The pool in the scheduler's words: a Slurm partition, a PBS queue.
    partition: str | None = None
    cpus_per_rank: int = 1
    gpus_per_node: int = 0
    gpu_type: str | None = None
    time_limit: str | None = None  # [[D-]HH:]MM:SS
    account: str | None = None
    qos: str | None = None  # Slurm's QOS; PBS has none
    # The project a job is accounted to (Slurm --wckey, PBS -P), from job_project_source.
    wckey: str | None = None
    # hpcdet's tag of the job (hpcdet.dispatcher.tags): Slurm --comment, PBS a job variable.
    comment: str | None = None
    # Order inside the pool: larger runs later (Slurm --nice; PBS -p, see its backend).
    nice: int | None = None
    exclude: str | None = None  # nodes to avoid (Slurm --exclude)
    # Signal for a graceful stop before the time limit; never USR1 (NCCL uses it).
    signal: str | None = "USR2@120"
    requeue: bool = False
    # Ask for the scheduler's expedited requeue (Slurm 25.11's --requeue=expedite: back at
    # once, at the top of the queue, after a node failure). Only a live cluster says whether
    # it allows it, so the master sets it at submit time (Backend.with_expedited_requeue),
    # never for a dry run; it means nothing without ``requeue``.
    expedited_requeue: bool = False
    # The user's extra batch options (slurm.sbatch_args / pbs.pbsbatch_args), checked by the
    # backend that renders them.
    sbatch_args: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    container: ContainerSpec = field(default_factory=ContainerSpec)
    script_name: str = "job.sh"
    # The Unix user the job runs as (security.jobs_run_as: owner); None: the master's own.
    owner: str | None = None
    # How ranks start: "default" (Slurm srun, PBS mpiexec) or "mpiexec" (MPI inside the job).
    launcher: str = "default"


@dataclass(frozen=True)
class Submission:
    """The pure result of rendering: what would be written and run."""

    script: str
    script_path: str
    argv: tuple[str, ...]
    # Submitted through the run-as helper as this user (None: as the master itself).
    owner: str | None = None


@dataclass(frozen=True)
class JobRef:
    """A submitted job the master wants news of."""

    job_id: str
    job_dir: str


@dataclass(frozen=True)
class JobStatus:
    """What the scheduler says about one job."""

    job_id: str
    phase: JobPhase
    native_state: str
    reason: str | None = None
    exit_code: int | None = None
    nodes: str | None = None
    source: str = "squeue"  # squeue | sacct | exit-file | none
    # How many times the scheduler has requeued the job (None: it did not say).
    restarts: int | None = None
    # The job has ended (a terminal phase), but the scheduler still keeps it queued and will
    # never run it again by itself (Slurm holds an expedited job's failed execution): whoever
    # acts on the end cancels it, so that it does not linger in the queue.
    lingering: bool = False


@dataclass(frozen=True)
class ArrayLimits:
    """How large a job array this scheduler takes, read from its configuration."""

    # Array indices run from 0 to max_array_size - 1 (Slurm's MaxArraySize).
    max_array_size: int
    # Jobs (array tasks counted singly) the controller holds at most (Slurm's MaxJobCount).
    max_job_count: int


@dataclass(frozen=True)
class ArraySpec:
    """One job array of many trials' jobs: task ``i`` runs ``scripts[i]``.

    Each script is a trial's own rendered job script, written into its job directory; the
    array's script (in ``array_dir``, with the index file) picks one by the task's index.
    """

    name: str
    array_dir: str
    scripts: tuple[str, ...]
    # At most this many tasks run at once (Slurm's ``%N``); None: no limit.
    throttle: int | None = None


class UnsupportedError(HpcdetError):
    """This scheduler cannot do what was asked (the master answers 501 with the message)."""


class Backend(abc.ABC):
    """One scheduler; each lives in its own package (``slurm/``, ``pbs/``).

    Beyond the five job verbs every backend implements, the cluster-wide reads and queue
    changes below have defaults that raise :class:`UnsupportedError`: a scheduler without
    them still runs trials.
    """

    name: ClassVar[str]
    # Runs every scheduler command of this backend (hpcdet.dispatcher.commands).
    runner: Runner
    # Reaches the job directories (and, through its runner, the scheduler): local or SSH.
    transport: Transport

    @abc.abstractmethod
    def render(self, spec: JobSpec) -> Submission:
        """Render ``spec`` into a script and submit argv, without side effects."""

    @abc.abstractmethod
    def submit(self, submission: Submission) -> str:
        """Write the script and submit it; return the scheduler's job id."""

    def with_expedited_requeue(self, spec: JobSpec) -> JobSpec:
        """``spec`` asking for the scheduler's expedited requeue where the live cluster
        allows one, for a real submission (it may ask the scheduler once; :meth:`render`
        stays pure, and a dry run renders ``spec`` as it is). The default, for a scheduler
        without one, changes nothing."""
        return spec

    @abc.abstractmethod
    def poll(self, jobs: Sequence[JobRef]) -> dict[str, JobStatus]:
        """Return a status for every job in ``jobs`` using a bounded number of commands."""

    @abc.abstractmethod
    def cancel(self, job_ids: Sequence[str], owner: str | None = None) -> None:
        """Cancel all of ``job_ids`` with one command (as ``owner`` in run-as-owner mode)."""

    @abc.abstractmethod
    def find(self, names: Sequence[str]) -> dict[str, str]:
        """The newest job id submitted under each of ``names`` (names not found are left out)."""

    def startup_problem(self) -> str | None:
        """Why this backend, as configured, cannot work on this host (one line naming the
        setting and what to do), checked before the master starts; None when it can."""
        return None


    # ---- job arrays: many similar trials in one submission (docs/job-arrays.md) ----------

    def array_limits(self) -> ArrayLimits | None:
        """The scheduler's array limits, or None where this backend submits no arrays."""
        return None

    def render_array(self, spec: JobSpec, array: ArraySpec) -> Submission:
        """The array's own script and submit argv: ``spec``'s resources, ``array``'s tasks."""
        raise UnsupportedError(f"the {self.name} backend submits no job arrays")

    def submit_array(self, submission: Submission, array: ArraySpec) -> str:
        """Write the index file and the array's script, submit it; return the array's id."""
        raise UnsupportedError(f"the {self.name} backend submits no job arrays")

    # The ids of array tasks are each scheduler's own (Slurm ``12_3``, PBS ``12[3].server``):
    # these pure functions are the only place that knows them, so the master can name a
    # task, and read the queue's array entries, with the backend's class alone.

    @staticmethod
    def array_task_id(array_id: str, index: int) -> str:
        """The job id of task ``index`` of the array ``array_id`` (as submit_array returned)."""
        raise UnsupportedError("this backend submits no job arrays")

    @staticmethod
    def array_entry(job_id: str) -> tuple[str, int] | None:
        """``(array id, tasks it stands for)`` of a queue entry of an array (a task, or a
        scheduler's entry of several pending tasks); None for a job of no array."""
        return None

    @staticmethod
    def array_pending_task_ids(job_id: str) -> list[str]:
        """The task ids a queue entry of several pending tasks stands for (each can be
        updated on its own); empty for any other entry."""
        return []

    @staticmethod
    def array_task_prefix(array_id: str) -> str:
        """What the job id of every task of ``array_id``, and of no other job, starts with."""
        raise UnsupportedError("this backend submits no job arrays")

    # ---- the queue and the pools (read on the master's timer, never per request) ----------

    def read_queue(self) -> list[QueueEntry]:
        """Every pending and running job of every user, in the scheduler's order; one command."""
        raise UnsupportedError(f"the {self.name} backend cannot list the job queue")

    def read_pools(self) -> list[PartitionInfo]:
        """Every pool (partition, queue) with its nodes and pending jobs; bounded commands."""
        raise UnsupportedError(f"the {self.name} backend cannot list resource pools")

    def update_job(self, job_id: str, update: JobUpdate, owner: str | None = None) -> None:
        """Change a queued job's pool and order with one command (as ``owner`` if given);
        a refusal is raised as :class:`~hpcdet.dispatcher.queue.JobUpdateRefusedError`."""
        raise UnsupportedError(f"the {self.name} backend cannot update queued jobs")

    def nice_to_pass(self, entry: QueueEntry, other: QueueEntry, *, ahead: bool) -> int:
        """The ``nice`` that puts ``entry`` just ahead of (or behind) ``other`` in the queue."""
        raise UnsupportedError(f"the {self.name} backend cannot reorder queued jobs")

    def reason_words(self, reason: str | None) -> str | None:
        """Why a job waits, in words a user understands (the scheduler's code as is if unknown)."""
        return reason

    def node_hosts(self, nodes: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The host names and addresses each of ``nodes`` answers to (a proxied service in a
        job names its host so: hpcdet.master.proxy); by default the node's own name."""
        return {node: (node,) for node in nodes}

    def check_job_id(self, job_id: str) -> str:
        """``job_id`` if it has the form of one of this scheduler's job ids, else
        :class:`~hpcdet.errors.ValidationError` (ids reach command lines)."""
        raise UnsupportedError(f"the {self.name} backend does not check job ids")

    def check_job_args(self, args: Sequence[str], path: str) -> tuple[str, ...]:
        """Validate a user's extra batch options (``slurm.sbatch_args``, ``pbs.pbsbatch_args``)
        and return them; a controlled or unsafe option is refused naming it and ``path``."""
        raise UnsupportedError(f"the {self.name} backend takes no extra batch options")


def backend_class(name: str, role: str = "backend") -> type[Backend]:
    """The backend class of scheduler ``name`` (:mod:`hpcdet.dispatcher.registry`), imported
    lazily; ValueError naming the known schedulers for an unknown one. ``role``
    ``rest_backend``: the one that drives the scheduler's REST server (Slurm's slurmrestd)."""
    cls: type[Backend] | None = registry.scheduler(name).attribute(role, "BACKEND")
    if cls is None:
        raise ValueError(f"the {name} scheduler has no {role.replace('_', ' ')}")
    return cls


def get_backend(name: str, role: str = "backend", **options: Any) -> Backend:
    """Import the backend module for ``name`` lazily and construct its backend."""
    return backend_class(name, role)(**options)
