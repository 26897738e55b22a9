"""The OpenPBS / PBS Professional backend: render a qsub script, submit, poll, cancel.

Environment assumptions:

* The PBS client commands (``qsub``, ``qstat``, ``qdel``, ``qalter``, ``qmove``,
  ``pbsnodes``) are on the ``PATH`` of the process using this backend (``/opt/pbs/bin``),
  with ``PBS_CONF_FILE`` set unless ``/etc/pbs.conf`` is right. The service account must
  be a PBS operator (or manager) for ``qalter -p``/``qmove`` of other users' jobs.
* Job directories are on a filesystem shared by this host and every execution host.
* Job history (``job_history_enable``) is *optional*: ``qstat -x`` answers for finished
  jobs while it is on; without it, or after ``job_history_duration``, the exit file the
  job script writes (``<job_dir>/exit-<jobid>``) says whether a finished job succeeded.
* Ranks start with OpenMPI's ``mpiexec`` over ``$PBS_NODEFILE``; daemons on the other
  hosts through ``rsh_agent`` (``pbs_tmrsh``: PBS's TM-based rsh, so they belong to the
  job and die with it). See :mod:`hpcdet.dispatcher.pbs.render` for every directive.

Measured formats are OpenPBS 23.06.06's (see :mod:`hpcdet.dispatcher.pbs.status`).
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Sequence

from hpcdet.dispatcher.arrays import write_index
from hpcdet.dispatcher.base import (
    ArrayLimits,
    ArraySpec,
    JobSpec,
    JobStatus,
    Submission,
    UnsupportedError,
)
from hpcdet.dispatcher.commands import Runner, UnparseableOutputError
from hpcdet.dispatcher.pbs import PLUGIN, arrays
from hpcdet.dispatcher.pbs import queue as pbs_queue
from hpcdet.dispatcher.pbs.qsub_args import parse_qsub_args, render_qsub_args
from hpcdet.dispatcher.pbs.render import directives, priority, template_context, validate_spec
from hpcdet.dispatcher.pbs.status import DELIMITER, job_status, only_unknown_ids, parse_dsv
from hpcdet.dispatcher.pools import PartitionInfo
from hpcdet.dispatcher.queue import JobUpdate, JobUpdateRefusedError, QueueEntry
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.script_backend import ScriptBackend, last_line
from hpcdet.dispatcher.transport import Transport
from hpcdet.errors import SchedulerError, ValidationError

logger = logging.getLogger(__name__)

TEMPLATE_NAME = "pbs_job.sh.j2"
# Job ids as qsub prints them (the plug-in's pattern: 123.server, 123[].server, ...).
_JOB_ID = PLUGIN.job_id_pattern
_QUEUE = re.compile(r"^[A-Za-z0-9_.@+-]+$")
# Up to this many ids, poll names them to qstat; above, it lists every job instead: qstat
# asks the server about named ids slowly (measured, 23.06.06: 10 ids 0.07 s, 100 ids 1.2 s,
# 1,000 ids 125 s), while listing all 1,000 jobs (-x) took 0.4 s.
POLL_BY_ID_MAX = 20


class PbsBackend(ScriptBackend):
    """Runs trials as PBS batch jobs; see the module docstring for what it assumes."""

    name = "pbs"
    # What qdel/qalter/qmove print for jobs already gone.
    already_gone = ("Job has finished", "Unknown Job Id")

    def __init__(
        self,
        *,
        runner: Runner | None = None,
        template_dir: str | None = None,
        template_name: str = TEMPLATE_NAME,
        runas: RunAs | None = None,
        transport: Transport | None = None,
        rsh_agent: str = "/opt/pbs/bin/pbs_tmrsh",
        gpu_type_resource: str = "gpu_model",
        bin_dir: str = "",
        poll_by_id_max: int = POLL_BY_ID_MAX,
        gpu_request: str = "tres",
    ) -> None:
        self._connect(runner=runner, transport=transport, runas=runas,
                      template_dir=template_dir, template_name=template_name)
        self.rsh_agent = check_safe(rsh_agent, "pbs rsh_agent")
        self.gpu_type_resource = gpu_type_resource
        # master.yaml's tres_supported/gres_supported both false ("none"): the site's nodes
        # give GPUs without being asked, so ngpus is left out of -l select.
        self.ask_for_gpus = gpu_request != "none"
        # Where the PBS commands are ("" : on PATH).
        self.bin_dir = bin_dir
        self.poll_by_id_max = poll_by_id_max

    def _cmd(self, name: str) -> str:
        return posixpath.join(self.bin_dir, name) if self.bin_dir else name

    def render(self, spec: JobSpec) -> Submission:
        """Validate every value of ``spec`` and render the script; no side effects."""
        validate_spec(spec)
        context = template_context(spec, rsh_agent=self.rsh_agent,
                                   gpu_type_resource=self.gpu_type_resource,
                                   ask_for_gpus=self.ask_for_gpus)
        script = self._templates.get_template(self.template_name).render(**context)
        return self.script_submission(spec.job_dir, spec.script_name, script, spec.owner)

    def _submit_argv(self, script_path: str) -> tuple[str, ...]:
        return (self._cmd("qsub"), script_path)

    def _parse_submit_output(self, argv: Sequence[str], stdout: str) -> str:
        return parse_qsub_output(argv, stdout)

    def _read_array_limits(self) -> ArrayLimits:
        """``max_array_size`` (and ``max_queued``): one ``qstat -B -f -F json``."""
        argv = (self._cmd("qstat"), "-B", "-f", "-F", "json")
        return arrays.parse_array_limits(pbs_queue.load_json(argv, self.runner(argv), "Server"))

    def render_array(self, spec: JobSpec, array: ArraySpec) -> Submission:
        """The array's script: ``spec``'s ``#PBS`` lines (one of its trials'), ``array``'s
        subjobs."""
        validate_spec(spec)
        user_args = parse_qsub_args(spec.sbatch_args, path="spec.sbatch_args")
        template = self._templates.get_template(arrays.ARRAY_TEMPLATE_NAME)
        return arrays.render_array(
            spec, array, qsub=self._cmd("qsub"),
            trial_lines=directives(spec, self.gpu_type_resource, self.ask_for_gpus),
            user_directives=render_qsub_args(user_args), render=template.render)

    def submit_array(self, submission: Submission, array: ArraySpec) -> str:
        """Write the index file and the array's script, then one ``qsub``; the array's id
        (``123[].server``). Not in run-as-owner mode (the master writes the files)."""
        self._refuse_array_as_owner(submission)
        write_index(array, self.transport)
        array_id = self.submit(submission)
        arrays.task_id(array_id, 0)  # an array's id, or qsub did not make an array
        return array_id

    array_task_id = staticmethod(arrays.task_id)
    array_entry = staticmethod(arrays.array_entry)
    array_task_prefix = staticmethod(arrays.task_prefix)

    def check_job_id(self, job_id: str) -> str:
        return checked_id(job_id)

    def _statuses(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """ONE ``qstat -x -t -f -F dsv`` (naming the ids when there are few, else listing
        every job: see :data:`POLL_BY_ID_MAX`; ``-t``: array subjobs one by one); poll
        reads exit files for jobs qstat does not know."""
        named = job_ids if len(job_ids) <= self.poll_by_id_max else []
        argv = (self._cmd("qstat"), "-x", "-t", "-f", "-F", "dsv", "-D", DELIMITER, *named)
        try:
            stdout = self.runner(argv)
        except SchedulerError as exc:
            if not only_unknown_ids(exc.stderr):
                raise
            stdout = exc.stdout  # qstat exits 153 but still lists the jobs it knows
        records = _by_key(parse_dsv(stdout))
        return {job_id: job_status(job_id, records[key]) for job_id in job_ids
                if (key := arrays.record_key(job_id)) in records}

    def _cancel_argv(self, job_ids: Sequence[str]) -> tuple[str, ...]:
        """``qdel`` all of ``job_ids`` at once (jobs already finished or gone are fine)."""
        return (self._cmd("qdel"), *job_ids)

    def _find_names(self, names: Sequence[str]) -> dict[str, str]:
        """One ``qstat -x -f -F json`` (every job, finished ones too) searched by name; an
        array's name answers the array's id (``123[].server``)."""
        wanted = set(names)
        argv = (self._cmd("qstat"), "-x", "-f", "-F", "json")
        jobs = pbs_queue.load_json(argv, self.runner(argv), "Jobs")
        found: dict[str, str] = {}
        for job_id, record in jobs.items():
            name = record.get("Job_Name")
            if arrays.array_entry(job_id) is not None:
                continue  # a subjob: its array (123[].server) is the one found by name
            if name in wanted and _number(job_id) > _number(found.get(name, "0")):
                found[name] = job_id
        return found

    def read_queue(self) -> list[QueueEntry]:
        """Every user's unfinished jobs in PBS's order; one ``qstat -t -f -F json`` (an
        array's subjobs one by one, in place of the array)."""
        argv = (self._cmd("qstat"), "-t", "-f", "-F", "json")
        return pbs_queue.parse_queue(pbs_queue.load_json(argv, self.runner(argv), "Jobs"))

    def read_pools(self) -> list[PartitionInfo]:
        """Every queue with its nodes and waiting jobs: three commands."""
        server = (self._cmd("qstat"), "-B", "-f", "-F", "json")
        queues = (self._cmd("qstat"), "-Q", "-f", "-F", "json")
        nodes = (self._cmd("pbsnodes"), "-a", "-F", "json")
        return pbs_queue.parse_pools(
            pbs_queue.load_json(server, self.runner(server), "Server"),
            pbs_queue.load_json(queues, self.runner(queues), "Queue"),
            pbs_queue.load_json(nodes, self.runner(nodes), "nodes"))

    def update_job(self, job_id: str, update: JobUpdate, owner: str | None = None) -> None:
        """``qalter -p`` for nice, then ``qmove`` for the queue (one command each)."""
        if update.qos is not None:
            raise UnsupportedError("PBS has no QOS: the pbs backend cannot change a job's qos")
        checked_id(job_id)
        if update.empty:
            raise ValidationError(f"nothing to update for job {job_id}")
        if update.partition is not None and not _QUEUE.match(update.partition):
            raise ValidationError(f"invalid PBS queue name {update.partition!r}")
        try:
            if update.nice is not None:
                self._update(job_id, owner, "nice", str(update.nice),
                             (self._cmd("qalter"), "-p", str(priority(update.nice)), job_id))
            if update.partition is not None:
                self._update(job_id, owner, "partition", update.partition,
                             (self._cmd("qmove"), update.partition, job_id))
        except SchedulerError as exc:
            if arrays.array_entry(job_id) is not None:  # say why PBS answers Invalid request
                exc = SchedulerError(exc.argv, exc.returncode, exc.stdout,
                                     f"{exc.stderr.strip()} (PBS changes no single subjob of "
                                     "a job array: qalter and qmove refuse subjob ids)")
            raise JobUpdateRefusedError(exc) from exc

    def _update(self, job_id: str, owner: str | None, key: str, value: str,
                argv: tuple[str, ...]) -> None:
        if self.runas is not None and owner:
            self.runas.update(owner, job_id, {key: value})
        else:
            self.runner(argv)

    def nice_to_pass(self, entry: QueueEntry, other: QueueEntry, *, ahead: bool) -> int:
        return pbs_queue.nice_to_pass(entry, other, ahead=ahead)

    def reason_words(self, reason: str | None) -> str | None:
        return pbs_queue.reason_words(reason)

    def check_job_args(self, args: Sequence[str], path: str) -> tuple[str, ...]:
        parse_qsub_args(args, path=path)
        return tuple(args)


BACKEND = PbsBackend


def parse_qsub_output(argv: Sequence[str], stdout: str) -> str:
    """The job id qsub prints: ``123.server``."""
    line = last_line(stdout)
    if line is None or not _JOB_ID.match(line):
        raise UnparseableOutputError(argv, stdout, "'<number>.<server>'")
    return line


def checked_id(job_id: str) -> str:
    """Ids reach argv and a file name: refuse anything but a PBS job id."""
    if not _JOB_ID.match(job_id):
        raise ValidationError(f"invalid PBS job id {job_id!r}")
    return job_id


def _number(job_id: str) -> int:
    """The sequence number of ``123.server`` (ids compare by it: qstat may print another
    server suffix than the one given)."""
    digits = re.match(r"\d+", job_id)
    return int(digits.group()) if digits else 0


def _by_key(records: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {arrays.record_key(job_id): record for job_id, record in records.items()}
