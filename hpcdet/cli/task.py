"""``det task``: the command tasks ``det sbatch`` submitted: list, describe, logs, kill."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.actions import show_command
from hpcdet.cli.failure_text import failure_line
from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_answer, render_fields, render_table
from hpcdet.cli.trial import history_table, is_terminal

if TYPE_CHECKING:
    from hpcdet.client import MasterClient


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def task() -> None:
    """Follow the batch jobs submitted with det sbatch (command tasks)."""


@task.command("list")
@click.option("--active", is_flag=True, help="Only the tasks still queued or running.")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="Show at most this many tasks, newest first.")
@JSON_OPTION
@pass_state
def list_tasks(state: CliState, active: bool, limit: int, as_json: bool) -> None:
    """List command tasks, newest first, with their Slurm job, pool and queue position."""
    params: dict[str, Any] = {"limit": limit}
    if active:
        params["active"] = "true"
    answer = state.client().get("/tasks", params=params)
    print_answer(answer, as_json, lambda a: tasks_table(a.get("tasks") or []))


def tasks_table(tasks: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det task list`` prints."""
    headers = ["ID", "Name", "State", "Slurm job", "Pool", "Position", "Note", "Owner",
               "Submitted", "Ended"]
    rows = [[t.get("id"), t.get("name"), t.get("state"), t.get("job_id"),
             t.get("pool") or t.get("partition"), t.get("queue_position"), task_note(t),
             t.get("owner"), format_time(t.get("submitted_at")), format_time(t.get("ended_at"))]
            for t in tasks]
    return render_table(headers, rows)


def task_note(t: Mapping[str, Any]) -> str:
    """Why a task waits, or how it ended, in a few words."""
    if t.get("state") == "QUEUED" and t.get("reason"):
        return str(t.get("reason_words") or t["reason"])
    if is_terminal(t.get("state")) and t.get("exit_code") is not None:
        return f"exit code {t['exit_code']}"
    return ""


task.add_command(show_command(
    "describe", "Show a task: its Slurm job, pool, options, files and state history.",
    lambda task_id: f"/tasks/{task_id}", lambda a: describe_text(a["task"]),
    click.argument("task_id", type=int)))


def describe_text(t: Mapping[str, Any]) -> str:
    """The text ``det task describe`` prints."""
    options = " ".join(f"--{name}" if value is None else f"--{name}={value}"
                       for name, value in t.get("options") or [])
    fields = render_fields([
        ("Slurm job", t.get("job_id")), ("owner", t.get("owner")),
        ("pool", t.get("pool") or "(Slurm's default partition)"),
        ("partition", t.get("partition")), ("account", t.get("account")),
        ("queue position", t.get("queue_position")), ("Slurm state", t.get("native_state")),
        ("reason", t.get("reason")), ("exit code", t.get("exit_code")),
        ("nodes", t.get("nodes")), ("options", options), ("arguments", t.get("args")),
        ("working directory", t.get("workdir")), ("output", t.get("output")),
        ("error", t.get("error") or "(with the output)"), ("job directory", t.get("job_dir")),
        ("submitted", format_time(t.get("submitted_at"))),
        ("started", format_time(t.get("started_at"))),
        ("ended", format_time(t.get("ended_at"))),
    ])
    history = history_table(t.get("history") or []) or "  none"
    return f"Task {t.get('id')} ({t.get('name')}): {t.get('state')}\n" \
           f"{failure_line(t)}{fields}\n\n" \
           f"State history:\n{history}"


@task.command("kill")
@click.argument("task_id", type=int)
@pass_state
def kill(state: CliState, task_id: int) -> None:
    """Cancel a task's Slurm job (scancel, by the master, within seconds)."""
    answer = state.client().post(f"/tasks/{task_id}/kill")
    click.echo(f"Killing task {task_id} (Slurm job {answer['task'].get('job_id')}): "
               f"{answer['task']['state']}")


@task.command("logs")
@click.argument("task_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new output until the "
              "task ends.")
@click.option("--tail", type=click.IntRange(min=0), metavar="N",
              help="Print only the last N lines (then new ones, with --follow).")
@pass_state
def logs(state: CliState, task_id: int, follow: bool, tail: int | None) -> None:
    """Print a task's output, as Slurm wrote it into the master's copy.

    When the job's standard error went to its own file (--error), it is printed on
    standard error.
    """
    print_logs(state, task_id, follow=follow, tail=tail)


def print_logs(state: CliState, task_id: int, *, follow: bool, tail: int | None) -> None:
    """Print a task's output (and error file), following it to the task's end."""
    client = state.client()
    first = client.get(f"/tasks/{task_id}")["task"]
    streams = [LogStream(client, task_id, name, tail=tail)
               for name in first.get("log_streams") or ["output"]]
    task_state = _drain(streams)
    while follow and not is_terminal(task_state):
        time.sleep(state.poll_interval)
        task_state = _drain(streams)
    if follow:
        _drain(streams)  # what was written between the last read and the end


def _drain(streams: Sequence[LogStream]) -> str:
    """Print everything new on every stream; the task's state as last seen."""
    task_state = ""
    for stream in streams:
        task_state = stream.print_new()
    return task_state


@dataclasses.dataclass
class LogStream:
    """One of a task's log files, read from where the last read stopped."""

    client: MasterClient
    task_id: int
    name: str
    tail: int | None = None
    offset: int = 0

    def print_new(self) -> str:
        """Print what the file gained since the last call; return the task's state."""
        while True:
            params: dict[str, Any] = {"stream": self.name, "offset": self.offset}
            if self.tail is not None:
                params["tail"], self.tail = self.tail, None
            chunk = self.client.get(f"/tasks/{self.task_id}/logs", params=params)
            click.echo(chunk["text"], nl=False, err=self.name == "error")
            self.offset = int(chunk["next_offset"])
            if self.offset >= int(chunk["size"]) or not chunk["text"]:
                return str(chunk["state"])
