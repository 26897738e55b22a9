"""Seeding for the queue, cluster and nodes pages' browser tests: experiments whose trials
own given Slurm jobs, and the ``pools`` and ``queue`` snapshots as the reconciler stores
them (the master is started with a long ``pool_refresh_seconds`` so that they stay)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.master.models import Experiment, Job, Trial
from hpcdet.master.queue.job_queue import queue_snapshot
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, QUEUE, load_snapshot, store_snapshot

CLUSTER = "web"  # the web_master's cluster_name: hpcdet's comments name it


def add_trial_jobs(session: Session, *, name: str, owner: str, priority: int,
                   job_ids: Sequence[str]) -> list[str]:
    """A paused experiment with one paused trial per Slurm job id (the reconciler leaves
    them alone: no active job, nothing queued); the comments those jobs must carry."""
    config = {"name": name, "resources": {"slots_per_trial": 1, "priority": priority}}
    exp = Experiment(name=name, owner=owner, state="PAUSED", config=config,
                     original_config="", context=b"", searcher_name="single")
    session.add(exp)
    session.flush()
    comments = []
    for job_id in job_ids:
        trial = Trial(experiment_id=exp.id, state="PAUSED", hparams={}, seed=1, token="t")
        session.add(trial)
        session.flush()
        session.add(Job(trial_id=trial.id, run_id=1, job_id=job_id, active=False,
                        name=f"det-{exp.id}-{trial.id}-1"))
        comments.append(f"hpcdet:{CLUSTER}:trial-{trial.id}:run-1")
    session.flush()
    return comments


def entry(job_id: str, *, priority: int, user: str = "root", partition: str = "batch",
          name: str = "job", running: bool = False, reason: str | None = "Priority",
          comment: str | None = None, cpus: int = 1, nodes: Sequence[str] = (),
          times: tuple[int | None, int | None, str | None] = (None, None, None)) -> QueueEntry:
    """One job of the seeded queue; ``times``: seconds used, the limit, the expected start."""
    return QueueEntry(job_id=job_id, partition=partition, name=name, user=user,
                      state="RUNNING" if running else "PENDING",
                      reason=None if running else reason, priority=priority, nice=0,
                      qos="normal", account="hpcdet", submit_time="2026-11-26T10:00:00+00:00",
                      tasks=1, cpus=cpus, nodes=1, comment=comment, pending=not running,
                      node_names=tuple(nodes), time_used=times[0], time_limit=times[1],
                      expected_start=times[2])


def node(name: str, *, allocated: int, partitions: Sequence[str],
         state: str = "mixed") -> dict[str, Any]:
    """One node of the seeded pools snapshot (4 CPUs, no GPU)."""
    return {"name": name, "state": state, "cpus": 4, "cpus_allocated": allocated, "gpus": 0,
            "gpus_used": 0, "gpu_types": [], "up": not state.startswith("down"),
            "partitions": list(partitions)}


def store_cluster(session: Session, pools: Sequence[Pool], nodes: Sequence[dict[str, Any]],
                  entries: Sequence[QueueEntry]) -> None:
    """Replace the pools and queue snapshots."""
    store_snapshot(session, POOLS, {"pools": [pool.to_json() for pool in pools],
                                    "nodes": list(nodes)})
    store_snapshot(session, QUEUE, queue_snapshot(entries))


def wait_first_refresh(sessions: Callable[[], Session], timeout: float = 60) -> None:
    """Until the master has stored its first pools and queue snapshots (seeding earlier
    would be overwritten by that first refresh)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with sessions() as session:
            if load_snapshot(session, POOLS) and load_snapshot(session, QUEUE):
                return
        time.sleep(0.3)
    raise AssertionError("the master did not read the cluster within a minute")


def set_node_state(sessions: Callable[[], Session], name: str, state: str) -> None:
    """Rewrite one node's state in the stored pools snapshot (as a later read would)."""
    with sessions() as session:
        found = load_snapshot(session, POOLS)
        assert found is not None
        data = found[0]
        for each in data["nodes"]:
            if each["name"] == name:
                each.update(state=state, up=not state.startswith("down"))
        store_snapshot(session, POOLS, data)
        session.commit()
