"""What every batch-script backend shares: the job verbs' common steps around one
scheduler's commands.

A backend of this kind renders a job script, writes it into the job directory (mode 0700,
through the transport) and submits it with one command; it polls, cancels and finds jobs
with commands of its scheduler, and in run-as-owner mode submits and cancels through the
run-as helper. :class:`ScriptBackend` holds those steps once; the Slurm and PBS packages
supply only what is their scheduler's: the submit argv and its output's job id, the form
of a job id, the commands that poll, cancel and search, and the words their commands say
for jobs already gone.
"""

from __future__ import annotations

import abc
import posixpath
from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from hpcdet.dispatcher.base import ArrayLimits, Backend, JobRef, JobStatus, Submission
from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.jobdir import tar_of
from hpcdet.dispatcher.render import make_environment
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.spec_values import read_exit_file, status_from_exit_file
from hpcdet.dispatcher.transport import LocalTransport, Transport
from hpcdet.errors import SchedulerError, ValidationError

# Owner-only: a job script holds the experiment's environment_variables (secrets).
SCRIPT_MODE = 0o700


class ScriptBackend(Backend):
    """A scheduler whose jobs are scripts submitted by one command (``sbatch``, ``qsub``)."""

    template_name: str
    # Set in run-as-owner mode: jobs with an owner are submitted/cancelled through it.
    runas: RunAs | None
    # What the scheduler's commands print for job ids it has forgotten or finished.
    already_gone: ClassVar[tuple[str, ...]]

    def _connect(self, *, runner: Runner | None, transport: Transport | None,
                 runas: RunAs | None, template_dir: str | None, template_name: str) -> None:
        """Set the ways to the cluster and the templates (every subclass's ``__init__``)."""
        # Job files go through the transport; commands through its runner (or ``runner``).
        self.transport = transport if transport is not None else LocalTransport()
        self.runner = runner if runner is not None else self.transport.runner
        self.runas = runas
        self.template_name = template_name
        self._templates = make_environment(template_dir)
        self._array_limits: ArrayLimits | None = None  # read once (array_limits)

    # ---- what each scheduler supplies ---------------------------------------------------

    @abc.abstractmethod
    def check_job_id(self, job_id: str) -> str:
        """``job_id`` if it has this scheduler's form, else ValidationError."""

    @abc.abstractmethod
    def _submit_argv(self, script_path: str) -> tuple[str, ...]:
        """The command that submits the script at ``script_path``."""

    @abc.abstractmethod
    def _parse_submit_output(self, argv: Sequence[str], stdout: str) -> str:
        """The job id in what the submit command printed."""

    @abc.abstractmethod
    def _cancel_argv(self, job_ids: Sequence[str]) -> tuple[str, ...]:
        """The one command that cancels all of ``job_ids``."""

    @abc.abstractmethod
    def _statuses(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """What the scheduler's commands say of ``job_ids`` (ids it knows nothing of left
        out); a bounded number of commands."""

    @abc.abstractmethod
    def _find_names(self, names: Sequence[str]) -> dict[str, str]:
        """:meth:`find` of checked, distinct, non-empty ``names``."""

    def _read_array_limits(self) -> ArrayLimits | None:
        """The scheduler's array limits, read from its configuration (None: no arrays)."""
        return None

    def _helper_submit_args(self, submission: Submission) -> tuple[tuple[str, ...],
                                                                   tuple[str, ...]]:
        """The options and the script's arguments the run-as helper's ``submit`` passes
        on (it checks them again); none by default."""
        return (), ()

    # ---- the job verbs --------------------------------------------------------------------

    def script_submission(self, job_dir: str, script_name: str, script: str,
                          owner: str | None = None) -> Submission:
        """``script``, to be written as ``job_dir/script_name`` and submitted (as ``owner``)."""
        script_path = posixpath.join(job_dir, script_name)
        return Submission(script, script_path, self._submit_argv(script_path), owner=owner)

    def submit(self, submission: Submission) -> str:
        """Write the script (mode 0700, atomically) and submit it; return the job id.

        With an owner and a run-as helper, the helper writes the script (0700, the owner's)
        and submits it as the owner.
        """
        if self.runas is not None and submission.owner:
            return self._submit_as(self.runas, submission.owner, submission)
        self.transport.write_file(submission.script_path, submission.script.encode("utf-8"),
                                  SCRIPT_MODE)
        return self._parse_submit_output(submission.argv, self.runner(submission.argv))

    def _submit_as(self, runas: RunAs, owner: str, submission: Submission) -> str:
        """Write the script into the job directory and submit it, both as ``owner``."""
        options, script_args = self._helper_submit_args(submission)
        job_dir, name = posixpath.split(submission.script_path)
        runas.prepare(owner, job_dir,
                      tar_of({name: (submission.script.encode("utf-8"), SCRIPT_MODE)}))
        args = (job_dir, name, *options, "--", *script_args)
        return self._parse_submit_output(runas.argv(owner, "submit", *args),
                                         runas.run(owner, "submit", *args))

    def _refuse_array_as_owner(self, submission: Submission) -> None:
        """Job arrays only where the master writes the files (not in run-as-owner mode)."""
        if self.runas is not None and submission.owner:
            raise ValidationError("job arrays are not submitted in run-as-owner mode")

    def array_limits(self) -> ArrayLimits | None:
        """The scheduler's array limits: read once, then cached."""
        if self._array_limits is None:
            self._array_limits = self._read_array_limits()
        return self._array_limits

    def poll(self, jobs: Sequence[JobRef]) -> dict[str, JobStatus]:
        """The scheduler's commands for all of ``jobs``, then exit files for the rest."""
        if not jobs:
            return {}
        found = self._statuses(list(dict.fromkeys(self.check_job_id(job.job_id)
                                                  for job in jobs)))
        return {job.job_id: resolve_status(found.get(job.job_id), job, self.transport)
                for job in jobs}

    def cancel(self, job_ids: Sequence[str], owner: str | None = None) -> None:
        """Cancel all of ``job_ids`` with one command; jobs already gone are not an error."""
        if not job_ids:
            return
        ids = tuple(dict.fromkeys(self.check_job_id(job_id) for job_id in job_ids))
        try:
            if self.runas is not None and owner:
                self.runas.cancel(owner, ids)
            else:
                self.runner(self._cancel_argv(ids))
        except SchedulerError as exc:
            if not self.only_already_gone(exc.stderr):
                raise

    def find(self, names: Sequence[str]) -> dict[str, str]:
        """The newest job submitted under each of ``names`` (names not found left out)."""
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            check_safe(name, "job name")
        return self._find_names(wanted) if wanted else {}

    def only_already_gone(self, stderr: str) -> bool:
        """True if every error line says the job is unknown or already finished."""
        lines = [line for line in stderr.splitlines() if line.strip()]
        return bool(lines) and all(any(m in line for m in self.already_gone) for line in lines)


def resolve_status(status: JobStatus | None, job: JobRef, files: Transport) -> JobStatus:
    """The scheduler's status, with the job's exit file where it says nothing (or gives no
    exit status for a finished job)."""
    if status is None:
        return status_from_exit_file(job, files)
    if status.phase.is_terminal and status.exit_code is None:
        return replace(status, exit_code=read_exit_file(job, files))
    return status


def last_line(stdout: str) -> str | None:
    """The last non-blank line of a command's output, stripped (None if there is none)."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1] if lines else None
