"""Intents a previous master recorded (a job row without a job id): adopted or dropped.

The submitter commits an intent before it runs the scheduler's submit command and records
the job id after it; a master that died in between finds the intent again here, at the start
of the next cycle, instead of submitting the trial twice.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase
from hpcdet.master.db import session_scope
from hpcdet.master.models import Job, utcnow
from hpcdet.master.reports.logs import add_system_line
from hpcdet.master.scheduling import arrays


def recover_intents(sessions: sessionmaker[Session], backend: Backend) -> int:
    """Find jobs a previous master submitted but never recorded; drop the rest.

    An intent whose job Slurm knows (by its unique name; an array task's by its array's
    name) is adopted; one it does not know never reached Slurm, so it is dropped and the
    trial is submitted afresh. Returns how many intents were settled.
    """
    with session_scope(sessions) as session:
        intents = session.scalars(select(Job).where(Job.active, Job.job_id.is_(None))).all()
        if not intents:
            return 0
        names = [j.name for j in intents if j.name]
        found = arrays.recovered_ids(names, backend.find(arrays.names_to_find(names)),
                                     backend.array_task_id)
        for job in intents:
            _settle_intent(session, job, found.get(job.name))
        return len(intents)


def _settle_intent(session: Session, job: Job, job_id: str | None) -> None:
    if job_id is not None:
        job.job_id = job_id
        add_system_line(session, job.trial_id, f"found Slurm job {job_id} ({job.name}), "
                        "submitted before the master restarted; following it")
        return
    job.active, job.phase, job.ended_at = False, JobPhase.NOT_SUBMITTED.value, utcnow()
    add_system_line(session, job.trial_id, f"the submission of {job.name} did not reach "
                    "Slurm before the master restarted; submitting again")
