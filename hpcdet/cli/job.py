"""``det job`` (alias ``j``): Slurm's queue as hpcdet sees it, and moving queued jobs in it.

``det job list`` shows the master's latest copy of Slurm's queue (read every few seconds),
hpcdet's jobs and everyone else's (EXTERNAL), in Slurm's priority order. ``det job update``
and ``update-batch`` change queued hpcdet jobs through the master, which runs ``scontrol``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_answer, print_json, render_table

HEADERS = ("#", "ID", "Type", "Name", "Priority", "Slurm prio", "QOS", "Account", "Submitted",
           "Slots", "State", "Reason", "User", "Pool")
# update-batch keys as typed on the command line -> the API's keys.
BATCH_KEYS = {"priority": "priority", "ahead-of": "ahead_of", "behind-of": "behind_of",
              "resource-pool": "resource_pool"}
_ITEM = re.compile(r"^(?P<job>[^.=]+)\.(?P<key>[^=]+)=(?P<value>.*)$")
_JOB_ID = re.compile(r"^\d+$")


@click.group("job", cls=AliasedGroup, aliases={"ls": "list"})
def job() -> None:
    """Slurm's job queue: list it, and change the priority, order or pool of queued jobs."""


@job.command("list")
@click.option("-p", "--resource-pool", "pool", metavar="POOL",
              help="Only the jobs of this pool (its partition).")
@click.option("--expand", is_flag=True,
              help="A line per array task (pending tasks as Slurm lists them, 12_[4-9]) "
                   "instead of one per job array.")
@JSON_OPTION
@pass_state
def list_jobs(state: CliState, pool: str | None, expand: bool, as_json: bool) -> None:
    """List pending and running jobs in Slurm's priority order, hpcdet's and others'.

    Priority is hpcdet's (resources.priority: 1 is the most important, default 42);
    Slurm prio is Slurm's number (higher runs first). Slots are GPUs for jobs that ask for
    GPUs, else CPUs: acquired/needed. A search's job array is one line, its tasks
    counted by Slurm state; --expand shows them.
    """
    params = {"resource_pool": pool} if pool else {}
    if not expand:
        params["arrays"] = "grouped"
    answer = state.client().get("/jobs", params=params)
    if as_json:
        print_json(answer)
        return
    if answer.get("taken_at") is None:
        seconds = answer.get("refresh_seconds")
        every = f" every {seconds:g} s" if isinstance(seconds, int | float) else ""
        click.echo(f"No job queue yet: the master reads it from Slurm{every}.")
        return
    jobs = answer.get("jobs") or []
    if not jobs:
        click.echo(f"No pending or running jobs{' in pool ' + pool if pool else ''}.")
        return
    click.echo(jobs_table(jobs))


def jobs_table(jobs: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det job list`` shows."""
    rows = [[j.get("position"), j.get("job_id"), j.get("type"), _name(j), j.get("priority"),
             j.get("slurm_priority"), j.get("qos"), j.get("account"),
             format_time(j.get("submitted")), _slots(j), j.get("state"), j.get("reason"),
             j.get("user"), j.get("pool")] for j in jobs]
    return render_table(HEADERS, rows)


def _name(row: Mapping[str, Any]) -> str:
    name = str(row.get("name") or "")
    tasks = row.get("array_tasks")
    if isinstance(tasks, Mapping):
        counts = ", ".join(f"{count} {state}" for state, count in sorted(tasks.items()))
        owner = f"exp {row['experiment_id']}, " if row.get("experiment_id") is not None else ""
        return f"{name} ({owner}array: {counts})"
    if row.get("trial_id") is not None:
        return f"{name} (exp {row.get('experiment_id')}, trial {row['trial_id']})"
    if row.get("task_id") is not None:
        return f"{name} (task {row['task_id']})"
    return name


def _slots(row: Mapping[str, Any]) -> str:
    kind = "GPU" if row.get("slot_kind") == "gpu" else "CPU"
    return f"{row.get('slots_acquired', 0)}/{row.get('slots_needed', 0)} {kind}"


@job.command("update")
@click.argument("job_id", metavar="JOB")
@click.option("-p", "--priority", type=click.IntRange(1, 99), metavar="N",
              help="hpcdet priority 1-99 (1 is the most important) for the job's experiment: "
                   "its queued jobs are re-mapped (QOS, nice, partition).")
@click.option("--ahead-of", metavar="JOB2", help="Put JOB just ahead of JOB2 in Slurm's order.")
@click.option("--behind-of", metavar="JOB2", help="Put JOB just behind JOB2 in Slurm's order.")
@click.option("--resource-pool", "pool", metavar="POOL",
              help="Move the job's experiment (its queued jobs) to another pool.")
@JSON_OPTION
@pass_state
def update(state: CliState, job_id: str, priority: int | None, ahead_of: str | None,
           behind_of: str | None, pool: str | None, as_json: bool) -> None:
    """Change a queued hpcdet job's priority, place in Slurm's order, or pool.

    Running jobs and jobs hpcdet did not submit cannot be changed; the master says why.
    """
    body = {key: value for key, value in (("priority", priority), ("ahead_of", ahead_of),
                                          ("behind_of", behind_of), ("resource_pool", pool))
            if value is not None}
    if not body:
        raise click.UsageError("give --priority, --ahead-of, --behind-of or --resource-pool")
    answer = state.client().post(f"/jobs/{job_id}/update", body)
    print_answer(answer, as_json, lambda a: result_text(a["result"]))


@job.command("update-batch")
@click.argument("items", nargs=-1, required=True, metavar="JOB.KEY=VALUE...")
@JSON_OPTION
@pass_state
def update_batch(state: CliState, items: tuple[str, ...], as_json: bool) -> None:
    """Apply several updates in order, e.g. ``123.priority=1 124.resource-pool=debug
    125.ahead-of=123``. KEY is priority, ahead-of, behind-of or resource-pool.

    The master checks all of them before applying any; exits 1 if Slurm refused one.
    """
    updates = [parse_batch_item(item) for item in items]
    answer = state.client().post("/jobs/update-batch", {"updates": updates})
    results = answer.get("results") or []
    print_answer(answer, as_json, lambda _: "\n".join(result_text(r) for r in results))
    failed = [str(r.get("job_id")) for r in results if not r.get("ok")]
    if failed:
        raise CliError(f"Slurm refused the update of job {', '.join(failed)}")


def parse_batch_item(item: str) -> dict[str, Any]:
    """``123.priority=5`` as ``{"job_id": "123", "priority": 5}``; errors name the item."""
    match = _ITEM.match(item)
    if match is None:
        raise click.BadParameter(f"{item!r}: expected JOB.KEY=VALUE, e.g. 123.priority=5",
                                 param_hint="update-batch item")
    job_id, key, value = match.group("job"), match.group("key"), match.group("value").strip()
    api_key = BATCH_KEYS.get(key.replace("_", "-"))
    if api_key is None:
        raise click.BadParameter(f"{item!r}: unknown key {key!r} (known: "
                                 f"{', '.join(BATCH_KEYS)})", param_hint="update-batch item")
    return {"job_id": _batch_job_id(item, job_id), api_key: _batch_value(item, api_key, value)}


def _batch_job_id(item: str, job_id: str) -> str:
    if not _JOB_ID.match(job_id):
        raise click.BadParameter(f"{item!r}: {job_id!r} is not a Slurm job id",
                                 param_hint="update-batch item")
    return job_id


def _batch_value(item: str, key: str, value: str) -> Any:
    if key == "priority":
        if not value.isdigit() or not 1 <= int(value) <= 99:
            raise click.BadParameter(f"{item!r}: priority must be an integer from 1 to 99",
                                     param_hint="update-batch item")
        return int(value)
    if key in ("ahead_of", "behind_of"):
        return _batch_job_id(item, value)
    if not value:
        raise click.BadParameter(f"{item!r}: resource-pool needs a pool name",
                                 param_hint="update-batch item")
    return value


def result_text(result: Mapping[str, Any]) -> str:
    """What happened to one job: the master's messages, its position, or why it failed."""
    job_id = result.get("job_id")
    if not result.get("ok"):
        return f"Job {job_id}: not updated: {result.get('error')}"
    lines = [f"  {message}" for message in result.get("messages") or ()]
    position = result.get("position")
    where = (f"now at position {position} in Slurm's queue" if position is not None
             else "no longer in Slurm's queue")
    return "\n".join([f"Job {job_id}: updated, {where}", *lines])
