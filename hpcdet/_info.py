"""``hpcdet.get_cluster_info()``: Determined's ClusterInfo, filled from what the job knows.

Determined describes a task's *containers* (one per agent, holding several slots) in its
ClusterInfo. hpcdet has no containers: ``srun`` (or ``mpiexec``) starts one rank per slot,
so here **each rank is a container with one slot**:

* ``container_rank`` is the rank, ``container_addrs`` has one address per rank (rank 0's
  is the rendezvous address the harness exported as ``MASTER_ADDR``, the others their
  node's name), ``container_slot_counts`` is all ones and ``slot_ids`` is
  ``[local_rank]``;
* so a launcher written for Determined (``core_api/4_distributed.py``) that starts
  ``len(slot_ids)`` workers per container starts exactly one per rank, with ranks
  ``container_rank * 1 + 0``: the ranks hpcdet already gave them.

Outside a hpcdet job :func:`get_cluster_info` returns None, as Determined's does. In a
``det experiment create --local`` run it describes trial 0 of experiment 0 on this host.
Everything here is read from ``trial.json`` and the environment: no collective, no call
to the master, so any rank may call it at any time.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Mapping
from typing import Any

from hpcdet.hostlist import expand_nodelist
from hpcdet.job.trial_info import (
    TrialInfo as _JobTrialInfo,
)
from hpcdet.job.trial_info import (
    load_trial_info,
    read_token,
    trial_info_path,
)

LOCAL_ADDR = "127.0.0.1"
TASK_TYPE_TRIAL = "TRIAL"


class TrialInfo:
    """The trial this task runs (Determined's ``det.TrialInfo``)."""

    def __init__(self, *, trial_id: int, experiment_id: int, trial_seed: int,
                 hparams: dict[str, Any], config: dict[str, Any], steps_completed: int = 0,
                 trial_run_id: int = 1, debug: bool = False,
                 inter_node_network_interface: str | None = None) -> None:
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.trial_seed = trial_seed
        self.hparams = hparams
        # Private, as in Determined: the experiment config's shape is not a stable API.
        self._config = config
        self._steps_completed = steps_completed
        self._trial_run_id = trial_run_id
        self._debug = debug
        self._inter_node_network_interface = inter_node_network_interface

    def __repr__(self) -> str:
        return (f"TrialInfo(trial_id={self.trial_id}, experiment_id={self.experiment_id}, "
                f"trial_seed={self.trial_seed}, hparams={self.hparams!r})")


class ClusterInfo:
    """What a task may know about where it runs (Determined's ``det.ClusterInfo``).

    Example::

        info = hpcdet.get_cluster_info()
        if info is not None:
            print(info.trial.trial_id, info.trial.hparams, info.latest_checkpoint)
    """

    def __init__(self, *, master_url: str, cluster_id: str, agent_id: str,
                 slot_ids: list[int], task_id: str, allocation_id: str, task_type: str,
                 trial_info: TrialInfo, container_addrs: list[str], container_rank: int,
                 latest_checkpoint: str | None = None, master_cert_file: str | None = None,
                 job_trial: _JobTrialInfo | None = None) -> None:
        self.master_url = master_url
        self.cluster_id = cluster_id
        self.agent_id = agent_id
        self.slot_ids = slot_ids
        self.task_id = task_id
        self.allocation_id = allocation_id
        self.task_type = task_type
        self.master_cert_name: str | None = None
        self.master_cert_file = master_cert_file
        self._trial_info = trial_info
        self._container_addrs = container_addrs
        self._container_rank = container_rank
        self._latest_checkpoint = latest_checkpoint
        self._job_trial = job_trial

    def __repr__(self) -> str:  # the session token stays out of reprs
        return (f"ClusterInfo(master_url={self.master_url!r}, task_id={self.task_id!r}, "
                f"container_rank={self._container_rank}, trial={self._trial_info!r})")

    @property
    def session_token(self) -> str:
        """The trial's bearer token for the master (read from the job directory on demand;
        empty for a run that has none, e.g. ``--local``)."""
        if self._job_trial is None or self._job_trial.extra.get("unmanaged"):
            return ""
        return read_token(self._job_trial)

    @property
    def latest_checkpoint(self) -> str | None:
        """The uuid of the checkpoint this run should resume from; None for a fresh trial."""
        return self._latest_checkpoint

    @property
    def user_data(self) -> dict[str, Any]:
        """The experiment config's ``data`` field (``{}`` when it has none)."""
        data = self._trial_info._config.get("data")
        return dict(data) if isinstance(data, Mapping) else {}

    @property
    def trial(self) -> TrialInfo:
        """The trial this task runs."""
        return self._trial_info

    @property
    def container_addrs(self) -> list[str]:
        """One address per rank, in rank order (see the module's docstring)."""
        return list(self._container_addrs)

    @property
    def container_slot_counts(self) -> list[int]:
        """One slot per rank."""
        return [1] * len(self._container_addrs)

    @property
    def container_rank(self) -> int:
        """This rank."""
        return self._container_rank

    @property
    def gpu_uuids(self) -> list[str]:
        """Not known to hpcdet: always empty."""
        return []


def get_cluster_info() -> ClusterInfo | None:
    """This task's :class:`ClusterInfo`, or None outside a hpcdet job (as Determined's)."""
    if trial_info_path() is None:
        return None
    return cluster_info_from(load_trial_info(), os.environ)


def cluster_info_from(job: _JobTrialInfo, environ: Mapping[str, str]) -> ClusterInfo:
    """The ClusterInfo of ``job`` as the rank described by ``environ`` sees it."""
    rank, size = _int(environ, "RANK", 0), max(1, _int(environ, "WORLD_SIZE", 1))
    task_id = f"{job.experiment_id}.{job.trial_id}"
    trial = TrialInfo(
        trial_id=job.trial_id, experiment_id=job.experiment_id, trial_seed=job.trial_seed,
        hparams=dict(job.hparams), config=dict(job.experiment_config),
        steps_completed=_resumed_steps(job), trial_run_id=job.run_id,
        debug=bool(job.experiment_config.get("debug", False)),
    )
    return ClusterInfo(
        master_url=job.master_url,
        cluster_id=str(job.extra.get("cluster_id") or environ.get("SLURM_CLUSTER_NAME") or ""),
        agent_id=environ.get("SLURMD_NODENAME") or os.uname().nodename.split(".")[0],
        slot_ids=[_int(environ, "LOCAL_RANK", 0)],
        task_id=task_id,
        allocation_id=f"{task_id}.{job.run_id}",
        task_type=TASK_TYPE_TRIAL,
        trial_info=trial,
        container_addrs=rank_addresses(environ, size),
        container_rank=rank,
        latest_checkpoint=job.latest_checkpoint,
        master_cert_file=environ.get("DET_MASTER_CERT_FILE"),
        job_trial=job,
    )


def rank_addresses(environ: Mapping[str, str], size: int) -> list[str]:
    """The address of every rank's node, in rank order.

    Slurm's node list and task counts give each rank's node (block distribution, as the
    harness assumes too); ranks on rank 0's node get the rendezvous address ``MASTER_ADDR``,
    which the harness made reachable. Unknown nodes are ``""``.
    """
    chief = environ.get("MASTER_ADDR") or LOCAL_ADDR
    if _int(environ, "GROUP_WORLD_SIZE", 1) <= 1:
        return [chief] * size
    hosts = _slurm_rank_hosts(environ, size) or _nodefile_hosts(environ, size)
    if hosts is None:
        return [chief] + [""] * (size - 1)
    return [chief if host == hosts[0] else host for host in hosts]


def _slurm_rank_hosts(environ: Mapping[str, str], size: int) -> list[str] | None:
    from hpcdet.job.rank_env.slurm import parse_tasks_per_node

    nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST")
    counts = environ.get("SLURM_STEP_TASKS_PER_NODE") or environ.get("SLURM_TASKS_PER_NODE")
    if not nodelist or not counts:
        return None
    try:
        nodes, per_node = expand_nodelist(nodelist), parse_tasks_per_node(counts)
    except ValueError:
        return None
    hosts = [node for node, count in zip(nodes, per_node, strict=False) for _ in range(count)]
    return hosts if len(hosts) == size else None


def _nodefile_hosts(environ: Mapping[str, str], size: int) -> list[str] | None:
    path = environ.get("PBS_NODEFILE")
    if not path:
        return None
    try:
        hosts = [line.strip() for line in pathlib.Path(path).read_text().splitlines()
                 if line.strip()]
    except OSError:
        return None
    return hosts if len(hosts) == size else None


def _resumed_steps(job: _JobTrialInfo) -> int:
    """``steps_completed`` of the checkpoint the run resumes from (0 when unknown)."""
    if not job.latest_checkpoint:
        return 0
    path = pathlib.Path(job.checkpoint_dir) / job.latest_checkpoint / "metadata.json"
    try:
        steps = json.loads(path.read_text()).get("steps_completed")
    except (OSError, ValueError, AttributeError):
        return 0
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else 0


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(environ.get(name) or default)
    except ValueError:
        return default
