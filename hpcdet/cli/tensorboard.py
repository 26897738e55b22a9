"""``det tensorboard``: TensorBoard over experiments' and trials' metrics, as a job.

``start`` asks the master for a TensorBoard task (docs/tensorboard.md); without ``-d`` it
waits until the master's proxy answers for it, prints its address (``<master>/proxy/<id>/``)
and opens it where there is a display, unless ``--no-browser``. ``list``,
``open``, ``logs``, ``describe`` and ``kill`` are the task commands narrowed to
TensorBoards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.command import config_body, config_options
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.output import format_time, render_table
from hpcdet.cli.task_kinds import (
    describe_command,
    kill_command,
    list_command,
    logs_command,
    open_command,
    start_proxied,
)

KIND = "tensorboard"


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def tensorboard() -> None:
    """TensorBoard over experiments' metrics, run as a job (as Determined's)."""


def _ids(values: Sequence[str], what: str) -> list[int]:
    words = [word for value in values for word in value.replace(",", " ").split()]
    if not all(word.isdigit() for word in words):
        raise CliError(f"{what}: give ids (whole numbers), not {' '.join(values)}")
    return [int(word) for word in words]


@tensorboard.command("start")
@click.argument("experiment_ids", nargs=-1)
@click.option("-t", "--trial-ids", "trial_ids", multiple=True, metavar="ID[,ID...]",
              help="Trials to show (repeatable, or comma-separated), besides or instead "
                   "of whole experiments.")
@config_options("TensorBoard", "the job starts in its copy", "waiting for it to serve")
@click.option("--no-browser", is_flag=True, help="Print the address; open no browser.")
@click.option("--timeout", type=click.IntRange(1), default=600, show_default=True,
              metavar="SECONDS", help="How long to wait for it to serve.")
@pass_state
def start(state: CliState, experiment_ids: Sequence[str], trial_ids: Sequence[str],
          config_file: str | None, configs: Sequence[str], context_dir: str | None,
          detach: bool, no_browser: bool, timeout: int) -> None:
    """Start TensorBoard over EXPERIMENT_IDS (and/or --trial-ids)."""
    body: dict[str, Any] = {"experiment_ids": _ids(experiment_ids, "EXPERIMENT_IDS"),
                            "trial_ids": _ids(trial_ids, "--trial-ids"),
                            **config_body(config_file, configs, context_dir)}
    if not body["experiment_ids"] and not body["trial_ids"]:
        raise CliError("name at least one experiment (EXPERIMENT_IDS) or --trial-ids")
    start_proxied(state, "/tensorboards", body, detach=detach, noun="TensorBoard",
                  launched=_scheduling, timeout=timeout, browser=not no_browser)


def _scheduling(task: Mapping[str, Any]) -> str:
    return (f"Scheduling TensorBoard {task['id']} (job {task['job_id']}); det tensorboard "
            f"logs {task['id']} shows its output")


def _not_open(task: Mapping[str, Any]) -> str | None:
    if task["state"] != "RUNNING":
        return f"TensorBoard {task['id']} is {task['state']}, not RUNNING"
    return None


tensorboard.add_command(open_command(KIND, "TensorBoard", "Print a running TensorBoard's "
                                     "address and open it in a browser.",
                                     "Print the address; open no browser.", _not_open))


def _joined(values: Any) -> str:
    return ", ".join(str(v) for v in values or [])


def tensorboards_table(tasks: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det tensorboard list`` prints."""
    headers = ["ID", "Owner", "Experiment IDs", "Trial IDs", "State", "Job", "Pool",
               "Submitted"]
    rows = []
    for t in tasks:
        config = t.get("config") or {}
        rows.append([t.get("id"), t.get("owner"), _joined(config.get("experiment_ids")),
                     _joined(config.get("trial_ids")), t.get("state"), t.get("job_id"),
                     t.get("pool") or t.get("partition"), format_time(t.get("submitted_at"))])
    return render_table(headers, rows)


def _headline(task: Mapping[str, Any]) -> str:
    config = task.get("config") or {}
    return (f"TensorBoard of experiments: {_joined(config.get('experiment_ids')) or '-'}; "
            f"trials: {_joined(config.get('trial_ids')) or '-'}")


tensorboard.add_command(describe_command(KIND, "TensorBoard", "Show a TensorBoard: what it "
                                         "shows, its job, state and history.", _headline))
tensorboard.add_command(list_command(KIND, "TensorBoards", tensorboards_table, ""))
tensorboard.add_command(logs_command(KIND, "TensorBoard", "the job's: the syncer's and "
                                     "TensorBoard's messages"))
tensorboard.add_command(kill_command(KIND, "TensorBoard", "End a TensorBoard: cancel its job "
                                     "(the master cancels it within seconds)."))
