"""``/queue``: the scheduler's queue merged with hpcdet's jobs, in priority order.

Query parameters (server-side, so they work without JavaScript and survive a reload; the
page's poller asks the API with the same ones): ``pool=P`` (one pool), ``mine=1`` (the
signed-in user's jobs), ``user=U`` (one user's), ``q=TEXT`` (a search), ``expand=1`` (a row
per job-array entry as Slurm lists them; by default an array is one row with its tasks
counted by state, expandable to its entries, as ``det job list`` shows it). Rendered from the
``queue`` snapshot (a request never runs a scheduler command); the page then polls
``/api/v1/jobs``. Pending reasons and job types are shown in words, with the codes kept.

The owner of a waiting hpcdet job (or an admin) gets a "Change" form per row: priority,
pool, or a place ahead of another waiting job, sent to ``POST /api/v1/jobs/<id>/update``
(the API ``det job update`` uses) by ``static/queue.js``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import render_template, request, url_for

from hpcdet.dispatcher.plugin import SchedulerPlugin
from hpcdet.errors import ConfigError
from hpcdet.master.api.common import db, settings
from hpcdet.master.api.jobs import owner_reason_words
from hpcdet.master.queue.array_rows import group_arrays
from hpcdet.master.queue.job_filters import JobFilter
from hpcdet.master.queue.job_queue import QUEUED, job_list, known_pools
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, QUEUE, load_snapshot
from hpcdet.master.queue.usage import pool_usage
from hpcdet.master.security import authz
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import EMPTY, poll_seconds, taken_text
from hpcdet.master.web.identity import page_user, web_user

# Determined's job types in words (the API keeps the codes).
JOB_TYPE_WORDS = {
    "EXPERIMENT": "Trial", "COMMAND": "Command", "NOTEBOOK": "Notebook",
    "TENSORBOARD": "TensorBoard", "SHELL": "Shell", "EXTERNAL": "Outside hpcdet",
}  # fmt: skip


def job_type_word(kind: str | None) -> str:
    """A job type in words; an unknown type as it is."""
    return JOB_TYPE_WORDS.get(kind or "", kind or "")


@bp.get("/queue")
def queue() -> tuple[str, int]:
    """The merged queue (of one pool, filtered); an unknown pool is a 400 page naming the
    known ones."""
    pool = request.args.get("pool") or None
    view = _view(pool)
    try:
        listing = job_list(db(), settings(), pool, page_user())
    except ConfigError as exc:
        found = load_snapshot(db(), QUEUE)
        return _render(view, [], [], None if found is None else found[1],
                       errors=exc.errors), 400
    taken = listing["taken_at"]  # job_list read the snapshot already: not a second time
    rows = view["filter"].apply(listing["jobs"])
    rows = rows if view["expand"] else group_arrays(rows)
    return _render(view, [_with_words(row, view) for row in rows], listing["jobs"],
                   dt.datetime.fromisoformat(taken) if taken else None), 200


def _view(pool: str | None) -> dict[str, Any]:
    """The filters asked for, and what the page needs to keep them while polling."""
    mine = request.args.get("mine") in ("1", "on", "true")
    expand = request.args.get("expand") in ("1", "on", "true")
    me = page_user()
    wanted = JobFilter.of(me if mine else request.args.get("user"), request.args.get("q"),
                          settings().resource_manager.type)
    admin = authz.is_admin(settings(), me)
    poll = url_for("api.list_jobs", resource_pool=pool, user=wanted.user, q=wanted.search,
                   arrays=None if expand else "grouped")
    return {"pool": pool, "mine": mine, "expand": expand, "filter": wanted, "me": me,
            "admin": admin,
            "signed_in": web_user() is not None, "poll": poll}


def _render(view: dict[str, Any], jobs: list[dict[str, Any]], everyone: list[dict[str, Any]],
            taken_at: dt.datetime | None, *, errors: list[str] | None = None) -> str:
    """The page: ``jobs`` are the rows shown, ``everyone`` the (pool's) whole queue."""
    pools = known_pools(db())
    sharing = _sharing(view["pool"], pools or {}, everyone)
    return render_template("queue.html", page="queue", pool=view["pool"], view=view, jobs=jobs,
                           errors=errors or [], reasons=_scheduler().reasons,
                           type_words=JOB_TYPE_WORDS,
                           pool_names=sorted(pools or {}), taken=taken_text(taken_at),
                           poll_seconds=poll_seconds(), waiting=_waiting(everyone),
                           sharing=sharing)


def _sharing(name: str | None, pools: dict[str, Pool],
             rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """For one pool's page: its used slots split by whose jobs hold them, when other
    pools' jobs hold some (what /cluster counts and this queue does not list)."""
    pool = pools.get(name or "")
    if pool is None:
        return None
    found = load_snapshot(db(), POOLS)
    nodes = list(found[0].get("nodes") or ()) if found else []
    usage = pool_usage(pools, nodes, rows)[pool.name]
    if usage.others(pool) == 0:
        return None
    return {"pool": pool.name, "used": pool.slots_used, "total": pool.slots_total,
            "own": usage.own, "others": usage.others(pool), "shared_with": usage.shared_with}


def _waiting(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The waiting jobs a job could be moved ahead of (id and a short label)."""
    return [{"job_id": j["job_id"], "label": f"{j['job_id']} {j['name']}"[:60]}
            for j in jobs if j["state"] == QUEUED]


def _with_words(row: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    # An array's row is not changed as a whole: its tasks are, one by one (?expand=1).
    changeable = (row["state"] == QUEUED and not row["external"] and not row.get("array_tasks")
                  and (view["admin"] or row["user"] == view["me"]))
    return {**owner_reason_words(dict(row), view["me"]),
            "type_words": job_type_word(row.get("type")), "changeable": changeable,
            "tasks_text": tasks_text(row.get("array_tasks")), "link": job_link(row),
            "times_text": times_text(row.get("time_used"), row.get("time_limit"))}


def job_link(row: dict[str, Any]) -> str | None:
    """The page of what a row's job runs: its trial, else its experiment (an allocation
    job), else its task; None for a job outside hpcdet or one the viewer may not see."""
    if row.get("trial_id"):
        return f"/trials/{row['trial_id']}"
    if row.get("experiment_id"):
        return f"/experiments/{row['experiment_id']}"
    if row.get("task_id"):
        return f"/tasks/{row['task_id']}"
    return None


def duration_text(seconds: int | None) -> str:
    """Seconds as squeue writes times (``0:31``, ``1:02:03``, ``1-02:03:04``), as
    ``poll.js``'s ``duration`` does; an em dash for none."""
    if seconds is None:
        return EMPTY
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def times_text(used: int | None, limit: int | None) -> str:
    """``0:31 / 2:00``: time used and the limit."""
    return f"{duration_text(used)} / {duration_text(limit)}"


def _scheduler() -> SchedulerPlugin:
    return settings().resource_manager.scheduler


def tasks_text(tasks: dict[str, int] | None) -> str | None:
    """An array's tasks by Slurm state, as ``det job list``: ``10 RUNNING, 990 PENDING``."""
    if not tasks:
        return None
    return ", ".join(f"{count:,} {state}" for state, count in sorted(tasks.items()))
