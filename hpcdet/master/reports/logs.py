"""Collect a job's stdout/stderr files from the job directory into ``trial_logs`` rows.

``srun --label`` prefixes each rank's lines with ``"<rank>: "``; lines the batch script
prints itself carry no rank. Each line also gets its node: ranks are placed in block order
(``srun`` with ``--ntasks-per-node``), so rank r runs on host ``r // ntasks_per_node`` of
the job's node list, ``ntasks_per_node`` being the layout stored with the job when it was
submitted (``Job.slots_per_node``), and the batch script runs on the first host. Lines
collected before the node list is known get none.

Every new line is also matched against the experiment's ``log_policies``
(:mod:`hpcdet.master.reports.log_policies`). ``Job.log_offsets`` is the job's log-reading state:
the byte offsets read so far (``out``, ``err``) and, under ``policy_hits``, the policy hits
already reported for this job, so each is reported once per job.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.jobdir import job_log_path
from hpcdet.dispatcher.transport import Transport
from hpcdet.errors import ConfigError
from hpcdet.hostlist import expand_nodelist
from hpcdet.jobfiles import UnsafeFileError
from hpcdet.master.master_log import warn_once
from hpcdet.master.models import Job, Trial, TrialLog, utcnow
from hpcdet.master.queue.slots import slot_layout
from hpcdet.master.reports.log_policies import apply_hit, find_hits, policies_of
from hpcdet.master.settings.experiment_config import batch_section

log = logging.getLogger(__name__)
_LABEL = re.compile(r"^\s*(\d+): ?(.*)$", re.DOTALL)
_STREAMS = {"out": "stdout", "err": "stderr"}
MAX_BYTES_PER_CYCLE = 4 * 1024 * 1024
HITS_KEY = "policy_hits"
# The scheduler a caller that names none means (resource_manager.type's default).
DEFAULT_SCHEDULER = registry.names()[0]


def log_path(job_dir: str, job_id: str, suffix: str, files: Transport) -> Path:
    """The job's ``out``/``err`` file, as its scheduler named it (:func:`job_log_path`)."""
    return job_log_path(job_dir, job_id, suffix, files)


@dataclass(frozen=True)
class RankPlacement:
    """Which host each rank of a job runs on (block order), as far as it is known."""

    hosts: tuple[str, ...] = ()
    per_node: int | None = None

    @classmethod
    def of(cls, nodes: str | None, config: Mapping[str, Any],
           scheduler: str = DEFAULT_SCHEDULER, *, per_node: int | None = None) -> RankPlacement:
        """From a hostlist (``Job.nodes``) and the ranks per node the job was submitted with
        (``Job.slots_per_node``); without those (a job recorded before they were stored, an
        allocation's step), as the experiment's effective config says, read by the
        master's ``scheduler`` (its ``slots_per_node``)."""
        try:
            hosts = tuple(expand_nodelist(nodes or ""))
            if per_node is None:
                per_node = _ranks_per_node(config, len(hosts), scheduler)
        except (ValueError, TypeError, ConfigError) as exc:  # bad data: no nodes, not no logs
            log.warning("cannot place ranks on nodes %r: %s", nodes, exc)
            return cls()
        return cls(hosts, per_node if per_node and per_node > 0 else None)

    def node_of(self, rank: int | None) -> str | None:
        """The rank's host; the batch script's (the first host) for ``None``."""
        if not self.hosts:
            return None
        if rank is None:
            return self.hosts[0]
        if self.per_node is None:
            return None
        index = rank // self.per_node
        return self.hosts[index] if index < len(self.hosts) else None


def _ranks_per_node(config: Mapping[str, Any], hosts: int, scheduler: str) -> int | None:
    """The scheduler's ``slots_per_node`` (``slurm.slots_per_node``, ``pbs.slots_per_node``);
    else the slots spread evenly over the job's hosts (a GPU pool puts as many ranks on a
    node as it has GPUs, which the config does not say)."""
    if batch_section(config, scheduler)[1].get("slots_per_node"):
        return slot_layout(config, scheduler=scheduler)[1]
    # 0 slots (a CPU-only trial) is one rank.
    slots = max(1, int((config.get("resources") or {}).get("slots_per_trial", 1)))
    return slots // hosts if hosts and slots % hosts == 0 else None


def ingest_job_logs(session: Session, job: Job, trial: Trial, config: Mapping[str, Any], *,
                    final: bool, files: Transport,
                    scheduler: str = DEFAULT_SCHEDULER) -> int:
    """Store the lines added to the job's log files since the last call; return how many.

    ``config`` is the experiment's effective config (slot layout, ``log_policies``).
    Without ``final`` an unterminated last line waits for its newline. Policy hits update
    ``trial`` (``cancel_retries``, ``excluded_nodes``) and add one master line each.
    ``files`` reaches the job directory (the backend's transport); ``scheduler`` is the one
    that ran the job (the backend's name), whose config section places ranks of a job
    stored without its layout.
    """
    if not job.job_id:
        return 0
    offsets = dict(job.log_offsets or {})
    placement = RankPlacement.of(job.nodes, config, scheduler, per_node=job.slots_per_node)
    rows: list[dict[str, Any]] = []
    for suffix, stream in _STREAMS.items():
        text, offsets[suffix] = _read_new(log_path(trial.job_dir, job.job_id, suffix, files),
                                          int(offsets.get(suffix, 0)), final, files)
        rows += [_row(job, stream, line, placement) for line in text.splitlines()]
    if rows:
        session.execute(insert(TrialLog), rows)
        offsets[HITS_KEY] = _apply_policies(session, job, trial, config, rows,
                                            offsets.get(HITS_KEY) or [])
    job.log_offsets = offsets
    return len(rows)


def _read_new(path: Path, offset: int, final: bool, files: Transport) -> tuple[str, int]:
    try:
        size = files.file_size(str(path))
        if size is None:
            return "", offset
        if size < offset:
            offset = 0  # truncated under us (a site template without --open-mode=append)
        data = files.read_file(str(path), offset, MAX_BYTES_PER_CYCLE) if size > offset else b""
    except FileNotFoundError:
        return "", offset
    except UnsafeFileError as exc:
        warn_once(log, f"unsafe log {path}", "%s: %s; its lines are not collected",
                  exc.filename, exc.strerror)
        return "", offset
    if not final and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    return data.decode("utf-8", errors="replace"), offset + len(data)


def _row(job: Job, stream: str, line: str, placement: RankPlacement) -> dict[str, Any]:
    match = _LABEL.match(line)
    rank = int(match.group(1)) if match else None
    text = match.group(2) if match else line
    return {"trial_id": job.trial_id, "job_id": job.job_id, "rank": rank,
            "node": placement.node_of(rank), "stream": stream, "line": text, "at": utcnow()}


def _apply_policies(session: Session, job: Job, trial: Trial, config: Mapping[str, Any],
                    rows: Sequence[Mapping[str, Any]], reported: list[str]) -> list[str]:
    """Act on the hits of ``rows`` not yet reported for the job; return all reported keys.

    A policy that cannot be used is reported too, once per job, with its first lines.
    """
    compiled = policies_of(config)
    seen = list(reported)
    for problem in compiled.problems:
        _once(session, job, seen, f"problem: {problem}", functools.partial(str, problem))
    for hit in find_hits(compiled.policies, rows):
        _once(session, job, seen, hit.key, functools.partial(apply_hit, trial, hit))
    return seen


def _once(session: Session, job: Job, seen: list[str], key: str,
          act: Callable[[], str]) -> None:
    """Run ``act`` and log the line it returns, unless ``key`` was seen for this job."""
    if key not in seen:
        seen.append(key)
        add_system_line(session, job.trial_id, act(), job_id=job.job_id)


def add_system_line(session: Session, trial_id: int, line: str, *,
                    job_id: str | None = None) -> None:
    """A line from the master itself (e.g. why a submission failed) in the trial's log."""
    session.add(TrialLog(trial_id=trial_id, job_id=job_id, rank=None, stream="master",
                         line=line))
