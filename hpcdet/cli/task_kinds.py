"""The task commands narrowed to one kind of task: ``det cmd list|describe|logs|kill``,
``det shell list|logs|kill``...

Each kind (``command``, ``shell``, ...) is a command task of that ``kind``; these factories
make its group's ``list``, ``describe``, ``logs`` and ``kill`` from the task routes, so that
every kind lists, prints and kills the same way and refuses a task of another kind.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_answer, print_json, render_table, warn
from hpcdet.cli.task import print_logs

Table = Callable[[Sequence[Mapping[str, Any]]], str]


def task_of_kind(state: CliState, task_id: int, kind: str, noun: str) -> dict[str, Any]:
    """The task, if it is of ``kind`` (a :class:`CliError` naming ``noun`` otherwise)."""
    task: dict[str, Any] = state.client().get(f"/tasks/{task_id}")["task"]
    if task.get("kind") != kind:
        raise CliError(f"task {task_id} is not a {noun} (det task describe {task_id} "
                       "shows it)")
    return task


def list_command(kind: str, plural: str, table: Table, details: str) -> click.Command:
    """``list [-a/--all] [--limit N] [--json]``: the caller's tasks of ``kind``."""

    @click.command("list", help=f"List your {plural} (every user's with --all), newest "
                   f"first{details}.")
    @click.option("-a", "--all", "show_all", is_flag=True, help=f"Every user's {plural} you "
                  "may see, not only yours.")
    @click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True,
                  help=f"Show at most this many {plural}, newest first.")
    @JSON_OPTION
    @pass_state
    def list_tasks(state: CliState, show_all: bool, limit: int, as_json: bool) -> None:
        params: dict[str, Any] = {"kind": kind, "limit": limit}
        if not show_all:
            params["mine"] = "true"
        answer = state.client().get("/tasks", params=params)
        print_answer(answer, as_json, lambda a: table(a.get("tasks") or []))

    return list_tasks


def logs_command(kind: str, noun: str, what: str) -> click.Command:
    """``logs [-f] [--tail N] ID``: the task's output, if it is of ``kind``."""

    @click.command("logs", help=f"Print a {noun}'s output ({what}).")
    @click.argument("task_id", metavar=f"{noun.upper()}_ID", type=int)
    @click.option("-f", "--follow", is_flag=True, help="Keep printing new output until the "
                  f"{noun} ends.")
    @click.option("--tail", type=click.IntRange(min=0), metavar="N",
                  help="Print only the last N lines (then new ones, with --follow).")
    @pass_state
    def logs(state: CliState, task_id: int, follow: bool, tail: int | None) -> None:
        task_of_kind(state, task_id, kind, noun)
        print_logs(state, task_id, follow=follow, tail=tail)

    return logs


def kill_command(kind: str, noun: str, help_text: str) -> click.Command:
    """``kill ID``: cancel the task's job, if it is of ``kind``."""

    @click.command("kill", help=help_text)
    @click.argument("task_id", metavar=f"{noun.upper()}_ID", type=int)
    @pass_state
    def kill(state: CliState, task_id: int) -> None:
        task_of_kind(state, task_id, kind, noun)
        answer = state.client().post(f"/tasks/{task_id}/kill")
        click.echo(f"Killing {noun} {task_id} (job {answer['task'].get('job_id')}): "
                   f"{answer['task']['state']}")

    return kill


def describe_command(kind: str, noun: str, help_text: str,
                     headline: Callable[[Mapping[str, Any]], str]) -> click.Command:
    """``describe ID [--json]``: ``headline(task)``, then the task's facts."""

    @click.command("describe", help=help_text)
    @click.argument("task_id", metavar=f"{noun.upper()}_ID", type=int)
    @JSON_OPTION
    @pass_state
    def describe(state: CliState, task_id: int, as_json: bool) -> None:
        from hpcdet.cli.task import describe_text

        task = task_of_kind(state, task_id, kind, noun)
        if as_json:
            print_json({"task": task})
            return
        click.echo(headline(task))
        click.echo(describe_text(task))

    return describe


def submit(state: CliState, route: str, body: dict[str, Any], *,
           detach: bool) -> dict[str, Any] | None:
    """POST ``body`` to ``route``; print the config's warnings; with ``test_only`` print the
    script and submit command, with ``detach`` the task's id (and return None); else return
    the new task."""
    answer = state.client().post(route, body)
    for message in answer.get("warnings") or []:
        warn(message)
    if body.get("test_only"):
        click.echo(f"{answer['script']}\n# submitted by:\n# {' '.join(answer['argv'])}")
        return None
    task: dict[str, Any] = answer["task"]
    if detach:
        click.echo(task["id"])
        return None
    return task


def kind_table(tasks: Sequence[Mapping[str, Any]]) -> str:
    """The table of a kind's tasks that has no columns of its own (``det cmd list``,
    ``det notebook list``)."""
    headers = ["ID", "Owner", "Description", "State", "Exit code", "Job", "Pool",
               "Submitted"]
    rows = [[t.get("id"), t.get("owner"), t.get("name"), t.get("state"), t.get("exit_code"),
             t.get("job_id"), t.get("pool") or t.get("partition"),
             format_time(t.get("submitted_at"))] for t in tasks]
    return render_table(headers, rows)


def proxy_url(state: CliState, task_id: int) -> str:
    """Where the master proxies a task's service (a notebook, a TensorBoard)."""
    return f"{state.client().url}/proxy/{task_id}/"


def show_url(state: CliState, task_id: int, *, browser: bool) -> None:
    """Print the task's proxy address, and open it in a browser where this machine has a
    display (never a text browser in the user's terminal on a login node)."""
    url = proxy_url(state, task_id)
    click.echo(url)
    if browser and _has_display():
        import webbrowser

        webbrowser.open(url)


def _has_display() -> bool:
    return sys.platform == "darwin" or bool(os.environ.get("DISPLAY")
                                            or os.environ.get("WAYLAND_DISPLAY"))


def wait_until_proxied(state: CliState, task_id: int, noun: str, *, probe: str = "",
                       timeout: float) -> None:
    """Until the master's proxy answers 200 for the task's service (``/proxy/<id>/<probe>``);
    an error with the job's last lines if the task ends first."""
    client = state.client()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.status_of(f"/proxy/{task_id}/{probe}") == 200:
            return
        task = client.get(f"/tasks/{task_id}")["task"]
        if task["state"] not in ("QUEUED", "RUNNING"):
            tail = client.get(f"/tasks/{task_id}/logs", params={"tail": 20}).get("text") or ""
            raise CliError(f"{noun} {task_id} ended {task['state']} before it answered"
                           + (f":\n{tail.rstrip()}" if tail.strip() else ""))
        time.sleep(state.poll_interval)
    raise CliError(f"{noun} {task_id} did not answer within {timeout:.0f} s (det task "
                   f"describe {task_id} shows where it is; it may still start)")


def start_proxied(state: CliState, route: str, body: dict[str, Any], *, detach: bool,
                  noun: str, launched: Callable[[Mapping[str, Any]], str], timeout: float,
                  browser: bool, probe: str = "") -> None:
    """Submit a proxied service (a notebook, a TensorBoard) as :func:`submit` does; unless
    it was only tested or is detached, say ``launched(task)`` on stderr, wait until the
    master's proxy answers for it and print (and open) its address."""
    task = submit(state, route, body, detach=detach)
    if task is None:
        return
    click.echo(launched(task), err=True)
    wait_until_proxied(state, int(task["id"]), noun, probe=probe, timeout=timeout)
    show_url(state, int(task["id"]), browser=browser)


def open_command(kind: str, noun: str, help_text: str, browser_help: str,
                 refusal: Callable[[Mapping[str, Any]], str | None]) -> click.Command:
    """``open [--no-browser] ID``: print (and open) the task's proxy address, unless
    ``refusal(task)`` says why not (a task of ``kind`` that cannot be opened now)."""

    @click.command("open", help=help_text)
    @click.argument("task_id", metavar=f"{noun.upper()}_ID", type=int)
    @click.option("--no-browser", is_flag=True, help=browser_help)
    @pass_state
    def open_task(state: CliState, task_id: int, no_browser: bool) -> None:
        problem = refusal(task_of_kind(state, task_id, kind, noun))
        if problem:
            raise CliError(problem)
        show_url(state, task_id, browser=not no_browser)

    return open_task
