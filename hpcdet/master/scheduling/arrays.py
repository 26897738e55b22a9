"""Submitting the trials one experiment queued together as job arrays (docs/job-arrays.md).

The reconciler hands :class:`ArraySubmitter` the trials that are QUEUED without a job. Trials
of one experiment none of whose jobs reached the scheduler yet, with the same excluded nodes,
render the same job but for their own directory, name and tag (:func:`shared_part`); they go
as one array per chunk of the scheduler's largest array (Slurm ``MaxArraySize``, PBS
``max_array_size``).
Everything else (restarts, a lone trial, a scheduler without arrays) goes back to the
reconciler's one-job-per-trial path.

Crash safety is the single path's: every trial gets its intent row (a job row without a job
id) named ``<array name>@<index>`` and committed before the ``sbatch``; a restarted master
finds the array by its name and gives each intent its task's id (Slurm ``<array id>_<index>``,
PBS ``<number>[<index>].<server>``: :meth:`Backend.array_task_id`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import ArrayLimits, ArraySpec, Backend, JobSpec, Submission
from hpcdet.dispatcher.tags import array_tag
from hpcdet.dispatcher.transport import TransportUnavailableError
from hpcdet.errors import HpcdetError, SchedulerError
from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Job, Trial
from hpcdet.master.queue.slots import record_layout
from hpcdet.master.scheduling.job_dirs import array_dir
from hpcdet.master.settings.core import MasterSettings

log = logging.getLogger(__name__)
# Between an array's name and a task's index in the task's intent name.
INDEX_SEPARATOR = "@"
# The share of Slurm's MaxJobCount left to jobs that are not this master's.
JOB_COUNT_RESERVE = 0.1


def array_name(experiment_id: int, first_trial_id: int, tag: str = "") -> str:
    """Unique per array: the first trial's first run is in no other array."""
    name = f"det-array-{experiment_id}-{first_trial_id}"
    return f"{name}-{tag}" if tag else name


def intent_name(array: str, index: int) -> str:
    """The name of a task's intent row: ``<array name>@<index>``."""
    return f"{array}{INDEX_SEPARATOR}{index}"


def split_intent_name(name: str) -> tuple[str, int] | None:
    """``(array name, index)`` of a task's intent name; None for a single job's name."""
    array, sep, index = name.rpartition(INDEX_SEPARATOR)
    if not sep or not array or not index.isdigit():
        return None
    return array, int(index)


def chunks(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    """``items`` in runs of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def throttle_of(config: dict[str, Any]) -> int | None:
    """The experiment's ``searcher.max_concurrent_trials`` (None when 0 or unset)."""
    value = (config.get("searcher") or {}).get("max_concurrent_trials")
    return int(value) if value else None


def shared_part(spec: JobSpec) -> JobSpec:
    """``spec`` without what differs between trials of one array (their own directory,
    name, tag, script name, and what is derived from the directory)."""
    container = replace(spec.container, bind_mounts=(), pass_environment=())
    return replace(spec, name="", job_dir="/", comment=None, script_name="", environment={},
                   container=container)


@dataclass(frozen=True)
class PreparedTask:
    """One trial of an array, its job directory ready and its script rendered."""

    job_pk: int
    trial_id: int
    spec: JobSpec
    submission: Submission


class TrialSubmitter(Protocol):
    """What the submitter (:class:`.submitter.Submitter`) lends the array path (its one-trial
    steps)."""

    settings: MasterSettings
    sessions: sessionmaker[Session]
    backend: Backend

    def prepare_trials(self, trial_ids: Sequence[int],
                       names: Sequence[str]) -> list[PreparedTask]:
        """Record the trials' intents named ``names`` and commit; prepare their job
        directories and write their scripts; leave out those no longer queued or failed."""

    def submission_failed(self, job_pk: int, exc: Exception) -> None:
        """End the job and the trial: the submission failed."""

    def account_ready(self, account: str | None) -> None:
        """The fair-share account exists (created if needed)."""


class ArraySubmitter:
    """Groups queued trials into arrays and submits each with one command."""

    def __init__(self, host: TrialSubmitter) -> None:
        self.host = host

    def limits(self) -> ArrayLimits | None:
        """The backend's array limits; None (one job per trial) when it has none or they
        cannot be read now."""
        try:
            return self.host.backend.array_limits()
        except TransportUnavailableError:
            raise
        except SchedulerError as exc:
            log.warning("cannot read the scheduler's array limits, submitting one job per "
                        "trial: %s", exc)
            return None

    def submit(self, trial_ids: Sequence[int]) -> tuple[int, list[int]]:
        """Submit what goes as arrays; return (trials submitted, trials to submit singly).

        Trials over this cycle's share of ``MaxJobCount`` stay queued for a later cycle.
        """
        limits = self.limits()
        if limits is None:
            return 0, list(trial_ids)
        groups, singles = self._groups(trial_ids)
        budget = self._job_budget(limits)
        submitted = 0
        for experiment_id, ids in groups.items():
            for chunk in chunks(ids, limits.max_array_size):
                if len(chunk) < 2:
                    singles.extend(chunk)
                    continue
                if len(chunk) > budget:
                    log.info("experiment %s: %d trials wait for room under MaxJobCount",
                             experiment_id, len(chunk))
                    continue
                done = self._submit_array(experiment_id, chunk)
                submitted += done
                budget -= done
        return submitted, singles

    def _groups(self, trial_ids: Sequence[int]) -> tuple[dict[int, list[int]], list[int]]:
        """Trials never submitted, by experiment (and excluded nodes), in trial order;
        restarts singly."""
        groups: dict[tuple[int, tuple[str, ...]], list[int]] = {}
        singles: list[int] = []
        with session_scope(self.host.sessions) as session:
            # A trial one of whose jobs reached the scheduler is restarting.
            ran = select(Job.id).where(Job.trial_id == Trial.id, Job.job_id.is_not(None))
            rows = session.execute(select(Trial.id, Trial.experiment_id, ran.exists(),
                                          Trial.excluded_nodes)
                                   .where(Trial.id.in_(trial_ids)).order_by(Trial.id)).all()
        for trial_id, experiment_id, restart, excluded in rows:
            if restart:  # a new single job (docs/job-arrays.md)
                singles.append(trial_id)
                continue
            groups.setdefault((experiment_id, tuple(excluded or ())), []).append(trial_id)
        by_experiment: dict[int, list[int]] = {}
        for (experiment_id, _), ids in groups.items():
            if experiment_id in by_experiment:  # other excluded nodes: another array
                singles.extend(ids)
            else:
                by_experiment[experiment_id] = ids
        return by_experiment, singles

    def _job_budget(self, limits: ArrayLimits) -> int:
        """Tasks this cycle may submit: MaxJobCount less a reserve and this master's jobs."""
        with session_scope(self.host.sessions) as session:
            active = session.scalar(select(func.count(Job.id)).where(Job.active)) or 0
        return int(limits.max_job_count * (1 - JOB_COUNT_RESERVE)) - active

    def _submit_array(self, experiment_id: int, trial_ids: Sequence[int]) -> int:
        """Intents, job directories and scripts for each trial; then one ``sbatch``."""
        name, directory, throttle = self._array_of(experiment_id, trial_ids[0])
        tasks = self.host.prepare_trials(
            trial_ids, [intent_name(name, index) for index in range(len(trial_ids))])
        if len(tasks) < len(trial_ids):
            self._renumber(name, tasks)
        if not tasks:
            return 0
        array = ArraySpec(name, directory, tuple(t.submission.script_path for t in tasks),
                          throttle)
        cluster = self.host.settings.resource_manager.cluster_name
        first = replace(tasks[0].spec, comment=array_tag(cluster, experiment_id))
        try:
            array_id = self._render_and_submit(first, array)
        except TransportUnavailableError:
            raise  # the intents stay; the next cycle recovers or resubmits them
        except (HpcdetError, OSError) as exc:
            for task in tasks:
                self.host.submission_failed(task.job_pk, exc)
            return 0
        self._record_ids(array_id, tasks)
        log.info("experiment %s: %d trials submitted as job array %s", experiment_id,
                 len(tasks), array_id)
        return len(tasks)

    def _array_of(self, experiment_id: int, first_trial_id: int) -> tuple[str, str, int | None]:
        with session_scope(self.host.sessions) as session:
            exp = session.get_one(Experiment, experiment_id)
            trial = session.get_one(Trial, first_trial_id)
            name = array_name(experiment_id, first_trial_id, (trial.request_id or "")[:8])
            directory = array_dir(self.host.settings, experiment_id, name, exp.owner)
            return name, directory, throttle_of(dict(exp.config))

    def _renumber(self, name: str, tasks: Sequence[PreparedTask]) -> None:
        """Close the gaps a failed or vanished trial left, before anything reaches Slurm."""
        with session_scope(self.host.sessions) as session:
            jobs = _jobs_by_pk(session, tasks)
            for index, task in enumerate(tasks):
                jobs[task.job_pk].name = intent_name(name, index)

    def _render_and_submit(self, first: JobSpec, array: ArraySpec) -> str:
        backend = self.host.backend
        submission = backend.render_array(first, array)
        self.host.account_ready(first.account)
        return backend.submit_array(submission, array)

    def _record_ids(self, array_id: str, tasks: Sequence[PreparedTask]) -> None:
        with session_scope(self.host.sessions) as session:
            jobs = _jobs_by_pk(session, tasks)
            for index, task in enumerate(tasks):
                job = jobs[task.job_pk]
                job.job_id = self.host.backend.array_task_id(array_id, index)
                job.script_path = task.submission.script_path
                record_layout(job, task.spec)


def _jobs_by_pk(session: Session, tasks: Sequence[PreparedTask]) -> dict[int, Job]:
    """The tasks' job rows, with one query."""
    pks = [task.job_pk for task in tasks]
    return {job.id: job for job in session.scalars(select(Job).where(Job.id.in_(pks)))}


def recovered_ids(names: Sequence[str], find: dict[str, str],
                  task_id: Callable[[str, int], str]) -> dict[str, str]:
    """``{intent name: job id}`` for the intents whose job (or array) ``find`` knows.

    ``find`` maps job names to ids as :meth:`Backend.find` answers for the names of
    :func:`names_to_find`; ``task_id`` names an array's task (:meth:`Backend.array_task_id`).
    """
    found: dict[str, str] = {}
    for name in names:
        task = split_intent_name(name)
        if task is None:
            if name in find:
                found[name] = find[name]
        elif task[0] in find:
            found[name] = task_id(find[task[0]], task[1])
    return found


def names_to_find(names: Sequence[str]) -> list[str]:
    """The job names to look for: a single job's own, an array task's array name."""
    wanted = []
    for name in names:
        task = split_intent_name(name)
        wanted.append(name if task is None else task[0])
    return list(dict.fromkeys(wanted))
