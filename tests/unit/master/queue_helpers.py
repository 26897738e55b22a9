"""A scripted Slurm queue (squeue + scontrol update) and DB rows for the job-queue tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.dispatcher.slurm.queue import FIELDS, SEPARATOR
from hpcdet.errors import SchedulerError
from hpcdet.master.models import Experiment, Job, Trial


@dataclasses.dataclass
class FakeJob:
    """One job of :class:`FakeSlurmQueue`."""

    job_id: str
    priority: int
    partition: str = "batch"
    name: str = "job"
    user: str = "root"
    state: str = "PENDING"
    reason: str = "Priority"
    nice: int = 0
    qos: str = "normal"
    account: str = "hpcdet"
    submit: str = "2026-11-21T14:00:00"
    cpus: int = 1
    gpus: int = 0
    comment: str | None = None
    nodelist: str = ""  # squeue's NodeList (after Comment): where a running job runs

    def line(self) -> str:
        tres = f"cpu={self.cpus},mem=2000M,node=1,billing={self.cpus}"
        tres += f",gres/gpu={self.gpus}" if self.gpus else ""
        values = [self.job_id, self.partition, self.name, self.user, self.state, self.reason,
                  str(self.priority), str(self.nice), self.qos, self.account, self.submit, "1",
                  str(self.cpus), "1", tres, self.comment or "(null)"]
        assert len(values) == len(FIELDS)
        return "".join(value + SEPARATOR for value in (*values, self.nodelist))


class FakeSlurmQueue:
    """A FAKE squeue/scontrol for unit tests (the real ones run in tests/integration).

    ``squeue`` prints the jobs in the recorded Slurm 22.05 format; ``scontrol update``
    changes partition, QOS and nice the way Slurm does (priority = factors - nice), unless
    ``refuse`` maps an argument (e.g. ``"QOS=high"``) to Slurm's refusal text.
    """

    def __init__(self, jobs: Sequence[FakeJob] = ()) -> None:
        self.jobs = {job.job_id: job for job in jobs}
        self.calls: list[tuple[str, ...]] = []
        self.refuse: dict[str, str] = {}
        # Which squeue calls (1, 2, ...) fail as if slurmctld could not be reached.
        self.squeue_fails: set[int] = set()

    def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str:
        self.calls.append(tuple(argv))
        if argv[0] == "squeue":
            if len(self.commands("squeue")) in self.squeue_fails:
                raise SchedulerError(list(argv), 1, "", "squeue: error: Unable to contact "
                                     "slurm controller (connect failure)\n")
            return "".join(job.line() + "\n" for job in self.jobs.values())
        if argv[0] == "scontrol":
            self._update(argv)
            return ""
        raise AssertionError(f"unexpected command {argv}")

    def add(self, *jobs: FakeJob) -> None:
        self.jobs.update((job.job_id, job) for job in jobs)

    def commands(self, name: str) -> list[tuple[str, ...]]:
        return [call for call in self.calls if call[0] == name]

    def _update(self, argv: Sequence[str]) -> None:
        for arg in argv[2:]:
            if arg in self.refuse:
                raise SchedulerError(list(argv), 1, "", self.refuse[arg] + "\n")
        values = dict(arg.split("=", 1) for arg in argv[2:])
        job = self.jobs[values["JobId"]]
        job.partition = values.get("Partition", job.partition)
        job.qos = values.get("QOS", job.qos)
        if "Nice" in values:
            job.priority -= int(values["Nice"]) - job.nice
            job.nice = int(values["Nice"])


def add_experiment(session: Session, *, name: str = "exp", owner: str = "alice",
                   resources: dict[str, Any] | None = None,
                   jobs: Sequence[tuple[str, int]] = ()) -> Experiment:
    """An experiment with one trial per ``(slurm job id, run id)`` in ``jobs``."""
    config = {"name": name, "resources": {"slots_per_trial": 1, **(resources or {})}}
    exp = Experiment(name=name, owner=owner, state="ACTIVE", config=config,
                     original_config="", context=b"", searcher_name="single",
                     resource_pool=config["resources"].get("resource_pool"))
    session.add(exp)
    session.flush()
    for job_id, run_id in jobs:
        trial = Trial(experiment_id=exp.id, state="QUEUED", hparams={}, seed=1, token="t")
        session.add(trial)
        session.flush()
        session.add(Job(trial_id=trial.id, run_id=run_id, job_id=job_id,
                        name=f"det-{exp.id}-{trial.id}-{run_id}"))
    session.flush()
    return exp


def trial_comment(session: Session, job_id: str, cluster: str = "unit") -> str:
    """The comment hpcdet gives the trial job ``job_id`` (as build_job_spec does)."""
    job = session.scalars(select(Job).where(Job.job_id == job_id)).one()
    return f"hpcdet:{cluster}:trial-{job.trial_id}:run-{job.run_id}"
