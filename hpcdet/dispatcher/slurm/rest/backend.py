"""The Slurm backend through slurmrestd (``resource_manager.transport: {type: rest}``).

:class:`RestSlurmBackend` is :class:`~hpcdet.dispatcher.slurm.backend.SlurmBackend` with
its command seams made requests; rendering, validation, exit files and the job directories
(the master's own filesystem, :attr:`transport`) are the CLI backend's, unchanged.

Requests per verb:

* poll: one ``GET /slurm/v0.0.44/jobs?update_time=T`` for every job the controller holds
  (slurmctld answers "no change" when nothing changed since T: the last full answer is kept
  and reused, so an idle cycle costs one cheap request), then, only for ids the controller
  no longer knows, one ``GET /slurmdb/v0.0.44/jobs`` (what ``sacct`` is to ``squeue``);
* cancel: one ``DELETE /slurm/v0.0.44/jobs`` naming every job;
* update, hold, release: one ``POST /slurm/v0.0.44/job/{id}`` each;
* the queue: the poll's jobs answer (cached likewise); the pools: partitions + nodes + it;
* submit: one ``POST /slurm/v0.0.44/job/submit`` (the script's ``#SBATCH`` lines made job
  description fields by :mod:`.submit`).

Not available: requeue (v0.0.44 has no requeue endpoint: :meth:`requeue` refuses), job
arrays (slurmrestd reports no ``MaxArraySize``: :meth:`array_limits` is None, so the master
submits one job per trial), and expedited requeue (no ``SlurmctldParameters`` either: jobs
ask for a plain ``--requeue``; a held failure of one submitted otherwise is still read, from
the record's ``state_description``).
"""

from __future__ import annotations

import logging
import posixpath
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hpcdet.dispatcher.base import (
    ArrayLimits,
    JobSpec,
    JobStatus,
    Submission,
    UnsupportedError,
)
from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.jobdir import tar_of
from hpcdet.dispatcher.pools import PartitionInfo
from hpcdet.dispatcher.queue import (
    JobUpdate,
    JobUpdateRefusedError,
    QueueEntry,
    split_operator_nice,
)
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.script_backend import SCRIPT_MODE
from hpcdet.dispatcher.slurm.backend import (
    TEMPLATE_NAME,
    SlurmBackend,
    helper_submit_args,
    newest_by_name,
    with_accounting,
)
from hpcdet.dispatcher.slurm.queue import queue_order, update_argv
from hpcdet.dispatcher.slurm.rest import records
from hpcdet.dispatcher.slurm.rest.client import SlurmRestClient
from hpcdet.dispatcher.slurm.rest.submit import check_rest_args, submit_body
from hpcdet.dispatcher.slurm.rest.tokens import FileTokens, ScontrolTokens, TokenSource
from hpcdet.dispatcher.slurm.sbatch_options import parse_command_line
from hpcdet.dispatcher.transport import Transport, TransportUnavailableError
from hpcdet.dispatcher.transport.settings import RestSettings
from hpcdet.errors import SchedulerError, ValidationError

logger = logging.getLogger(__name__)

# What slurmctld says, per job, of ids already finished or forgotten (a cancel's answer).
_ALREADY_GONE = ("Invalid job id specified", "already completing or completed")


def make_tokens(rest: RestSettings, runner: Runner, runas: RunAs | None = None) -> TokenSource:
    """The token source ``rest.token_source`` names (``scontrol`` runs through ``runner``);
    with ``runas`` (run-as-owner mode) each owner's token is minted by the run-as helper,
    as the owner."""
    source = rest.token_source
    if source.type == "file":
        if source.path is None:
            raise ValidationError("token_source type file needs a path")
        return FileTokens(source.path)
    return ScontrolTokens(runner, source.lifespan_seconds,
                          mint_as=runas.token if runas is not None else None)


class RestSlurmBackend(SlurmBackend):
    """Slurm through slurmrestd; see the module docstring for what each verb sends."""

    def __init__(self, *, rest: RestSettings, client: SlurmRestClient | None = None,
                 runner: Runner | None = None, transport: Transport | None = None,
                 runas: RunAs | None = None, template_dir: str | None = None,
                 template_name: str = TEMPLATE_NAME, gpu_request: str = "tres") -> None:
        super().__init__(runner=runner, transport=transport, runas=runas,
                         template_dir=template_dir, template_name=template_name,
                         gpu_request=gpu_request)
        self.rest = rest
        self.client = client if client is not None else SlurmRestClient(
            rest.url, make_tokens(rest, self.runner, runas), rest.login_user,
            timeout=rest.timeout_seconds)
        # The controller's last full jobs answer and its time (update_time of the next).
        self._jobs: list[dict[str, Any]] = []
        self._jobs_time: int | None = None
        self._jobs_lock = threading.Lock()

    # ---- reading jobs -----------------------------------------------------------------------

    def controller_jobs(self) -> list[dict[str, Any]]:
        """Every job slurmctld holds: one request, answered "no change" (and the last answer
        reused) when nothing changed since the last one."""
        with self._jobs_lock:
            params = [] if self._jobs_time is None else [("update_time", str(self._jobs_time))]
            reply = self.client.get(self.client.slurm("jobs/"), params)
            # A changed answer is always complete (slurm_load_jobs): it replaces the last.
            # "No change" comes with last_update 0 and no jobs.
            changed = records.number(reply.get("last_update"))
            if changed:
                jobs = reply.get("jobs")
                self._jobs = [job for job in jobs if isinstance(job, dict)] \
                    if isinstance(jobs, list) else []
                self._jobs_time = changed
            return self._jobs

    def _statuses(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """The controller's jobs (one request), then one accounting request for the ids it
        forgot and for who cancelled the cancelled ones (:func:`with_accounting`)."""
        wanted = set(job_ids)
        found = {job_id: status for job_id, status
                 in records.job_statuses(self.controller_jobs()).items() if job_id in wanted}
        return with_accounting(found, job_ids, self._accounting)

    def _accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """One slurmdb request for ``job_ids`` (an array task asked for by its array's id,
        as ``sacct -j`` does); nothing when accounting is off or refuses."""
        arrays = dict.fromkeys(job_id.partition("_")[0].partition("+")[0] for job_id in job_ids)
        jobs = self._slurmdb_jobs([("step", job_id) for job_id in arrays],
                                  "falling back to exit files")
        wanted = set(job_ids)
        statuses = records.accounting_statuses(jobs)
        return {job_id: replace(status, job_id=job_id)
                for job_id, status in statuses.items() if job_id in wanted}

    def _find_names(self, names: Sequence[str]) -> dict[str, str]:
        """The controller's jobs, then accounting (the last 7 days) for names not there."""
        found = newest_by_name(((job_id, str(job.get("name") or ""))
                                for job in self.controller_jobs()
                                for job_id in records.job_ids(job)), names)
        missing = [name for name in names if name not in found]
        if not missing:
            return found
        params = [("start_time", "now-7days"), *(("job_name", name) for name in missing)]
        # An array task counts as its array (sacct's JobID 12_3), not its raw id.
        accounted = ((str(records.number((job.get("array") or {}).get("job_id"))
                          or records.number(job.get("job_id"))), str(job.get("name") or ""))
                     for job in self._slurmdb_jobs(params, "only the controller was searched"))
        return {**found, **newest_by_name(accounted, missing)}

    def _slurmdb_jobs(self, params: list[tuple[str, str]], otherwise: str) -> list[Any]:
        """One ``GET /slurmdb/.../jobs`` (steps left out); nothing when accounting is off or
        refuses (it is optional, as sacct is), but an unreachable slurmrestd is raised."""
        try:
            reply = self.client.get(self.client.slurmdb("jobs/"),
                                    [("skip_steps", "true"), *params])
        except TransportUnavailableError:
            raise
        except SchedulerError as exc:
            logger.info("slurmdb unavailable, %s: %s", otherwise, exc)
            return []
        jobs = reply.get("jobs")
        return jobs if isinstance(jobs, list) else []

    # ---- changing jobs ----------------------------------------------------------------------

    def submit(self, submission: Submission) -> str:
        """Write the script (as the owner through the run-as helper in run-as-owner mode)
        and submit it with one request: its ``#SBATCH`` lines as the job description."""
        options, script_args = helper_submit_args(submission)
        if script_args:
            raise ValidationError(f"{submission.script_path}: script arguments are not "
                                  "available through slurmrestd")
        extra = parse_command_line([*options, submission.script_path]).settings
        body = submit_body(submission.script, submission.script_path, extra=extra)
        owner = self._owner(submission.owner)
        if owner is not None and self.runas is not None:
            job_dir, name = posixpath.split(submission.script_path)
            self.runas.prepare(owner, job_dir, tar_of(
                {name: (submission.script.encode("utf-8"), SCRIPT_MODE)}))
        else:
            self.transport.write_file(submission.script_path,
                                      submission.script.encode("utf-8"), SCRIPT_MODE)
        reply = self.client.post(self.client.slurm("job/submit"), body, as_user=owner)
        job_id = records.number(reply.get("job_id"))
        if job_id is None:
            raise SchedulerError([f"slurmrestd POST {self.client.slurm('job/submit')}"], 1, "",
                                 "slurmrestd accepted the job but named no job id")
        return str(job_id)

    def _owner(self, owner: str | None) -> str | None:
        """The user to act as: ``owner`` in run-as-owner mode, else None (the master)."""
        return owner if self.runas is not None and owner else None

    def cancel(self, job_ids: Sequence[str], owner: str | None = None) -> None:
        """One request for all of ``job_ids``; jobs already gone are not an error."""
        ids = list(dict.fromkeys(self.check_job_id(job_id) for job_id in job_ids))
        if not ids:
            return  # never an empty list: slurmrestd would read it as no filter at all
        reply = self.client.delete(self.client.slurm("jobs/"), {"jobs": ids},
                                   as_user=self._owner(owner))
        problems = [str((item.get("error") or {}).get("message") or "")
                    for item in reply.get("status") or [] if isinstance(item, dict)]
        problems = [p for p in problems if p and not any(g in p for g in _ALREADY_GONE)]
        if problems:
            raise SchedulerError([f"slurmrestd DELETE {self.client.slurm('jobs/')}"], 1, "",
                                 "; ".join(dict.fromkeys(problems)))

    def update_job(self, job_id: str, update: JobUpdate, owner: str | None = None) -> None:
        """One request (two when a negative nice, an operator's power, goes with changes the
        owner makes), as ``scontrol update`` does in :class:`SlurmClusterMixin`."""
        update_argv(job_id, update)  # validates the id and every value, as for scontrol
        as_owner = self._owner(owner)
        own, operator = (update, None) if as_owner is None else split_operator_nice(update)
        if not own.empty:
            self._post_job(job_id, _update_body(own), as_owner)
        if operator is not None:
            self._post_job(job_id, _update_body(operator), None)

    def hold(self, job_id: str, owner: str | None = None) -> None:
        """``scontrol hold``: one request."""
        self._post_job(self.check_job_id(job_id), {"hold": True}, self._owner(owner))

    def release(self, job_id: str, owner: str | None = None) -> None:
        """``scontrol release``: one request (Slurm resets the job's nice, as scontrol's)."""
        self._post_job(self.check_job_id(job_id), {"hold": False}, self._owner(owner))

    def requeue(self, job_id: str, owner: str | None = None) -> None:
        """Refused: slurmrestd v0.0.44 has no requeue (docs/admin/slurmrestd.md)."""
        raise UnsupportedError(f"requeue of job {job_id} is not available through slurmrestd "
                               "(data_parser v0.0.44 has no requeue request); run scontrol "
                               "requeue on a login node")

    def _post_job(self, job_id: str, body: dict[str, Any], as_user: str | None) -> None:
        path = self.client.slurm(f"job/{self.client.segment(job_id)}")
        try:
            self.client.post(path, body, as_user=as_user)
        except TransportUnavailableError:
            raise
        except SchedulerError as exc:
            raise JobUpdateRefusedError(exc) from exc

    # ---- the cluster ------------------------------------------------------------------------

    def read_queue(self) -> list[QueueEntry]:
        """Every pending and running job of every user, Slurm's order: the poll's request."""
        return queue_order(records.queue_entries(self.controller_jobs()))

    def read_pools(self) -> list[PartitionInfo]:
        """Partitions, nodes, and the pending jobs of the controller's jobs answer."""
        partitions = self.client.get(self.client.slurm("partitions/")).get("partitions") or []
        nodes = self.client.get(self.client.slurm("nodes/")).get("nodes") or []
        pending = records.pending_by_partition(self.controller_jobs())
        return records.partitions(partitions, nodes, pending)

    def node_hosts(self, nodes: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """One nodes request: each node's name, host name and address."""
        wanted = [check_safe(node, "node name") for node in nodes]
        if not wanted:
            return {}
        reply = self.client.get(self.client.slurm("nodes/"))
        return records.node_hosts(reply.get("nodes") or [], wanted)

    def array_limits(self) -> ArrayLimits | None:
        """None: slurmrestd reports no MaxArraySize (neither diag nor a config path in
        v0.0.44), so the master submits one job per trial instead of arrays."""
        return None

    def with_expedited_requeue(self, spec: JobSpec) -> JobSpec:
        """``spec`` as it is, plain ``--requeue``: slurmrestd reports no SlurmctldParameters
        (v0.0.44 has no config path), so whether the cluster allows an expedited requeue
        cannot be told from here, and the master may have no ``scontrol``."""
        return replace(spec, expedited_requeue=False)

    def close(self) -> None:
        self.client.close()


def _update_body(update: JobUpdate) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if update.partition is not None:
        body["partition"] = update.partition
    if update.qos is not None:
        body["qos"] = update.qos
    if update.nice is not None:
        body["nice"] = update.nice
    return body


BACKEND = RestSlurmBackend
# dispatcher/batch_args.py's check_rest_args: det e create refuses what cannot be sent.
__all__ = ["BACKEND", "RestSlurmBackend", "check_rest_args", "make_tokens"]
