"""``det sbatch``: submit an unmodified batch script through the master, as sbatch would.

The options are read exactly as sbatch reads them (#SBATCH lines, then ``SBATCH_*``
variables, then the command line), by the command's client side, which
:func:`hpcdet.dispatcher.batch_commands.batch_command` loads, and sent to the master, which
runs sbatch and tracks the job as a command task (``det task``). ``det qsub`` shares
:func:`submit_batch`. See docs/sbatch.md and docs/qsub.md.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import click

from hpcdet import __version__
from hpcdet.cli.main import CliState
from hpcdet.cli.output import warn
from hpcdet.dispatcher.batch_commands import MAX_SCRIPT_BYTES, Prepared, batch_command

USAGE = "[SBATCH OPTIONS] SCRIPT [ARGS]..."
_FINISHED = frozenset({"COMPLETED", "CANCELED", "ERROR"})


# Names the workspace a task is shared with (det sbatch takes only sbatch's own options).
WORKSPACE_VARIABLE = "DET_WORKSPACE"


class RawArguments(click.Command):
    """Hands every argument to the command untouched: sbatch's and qsub's options are not
    click's (``-phigh`` must not read as ``-h``), so they are parsed by their own rules."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.params["argv"] = list(args)
        return []


@click.command("sbatch", cls=RawArguments, add_help_option=False, options_metavar=USAGE)
@click.pass_context
def sbatch(ctx: click.Context, argv: list[str]) -> None:
    """Submit a batch script to Slurm through the master, as sbatch does.

    Takes sbatch's options (long, short or abbreviated) from the script's #SBATCH lines,
    SBATCH_* variables and the command line, in sbatch's order of precedence, and prints
    "Submitted batch job N" (just N with --parsable). The master runs sbatch and follows
    the job as a command task: det task list, describe, logs, kill.

    The job runs as the master's Slurm user, not as you: files it writes belong to that
    user. It starts with your environment (--export), in the directory you ran det sbatch
    from (or --chdir), which must exist on the master's host. --output/--error files are
    written as sbatch writes them, and the master keeps its own copy for det task logs.
    --array, --clusters, --uid, --gid, --get-user-env, --bbf and --comment are refused
    (docs/sbatch.md says why); --wait waits for the job and exits with its exit code;
    --test-only shows what would be submitted. -h/--help shows this help.
    With DET_WORKSPACE=NAME the task is shared with workspace NAME's members.
    """
    submit_batch(ctx, "sbatch", argv)


def submit_batch(ctx: click.Context, name: str, argv: list[str]) -> None:
    """``det sbatch``/``det qsub``: prepare, post to the master, report (and wait)."""
    state = ctx.ensure_object(CliState)
    command = batch_command(name)
    answer_locally = command.local_answer(argv)
    if answer_locally is not None:
        _answer_locally(ctx, name, answer_locally)
        return
    prepared = command.prepare(argv, os.environ, os.getcwd(), _read_stdin)
    for message in prepared.warnings:
        warn(message)
    if prepared.flag("verbose"):
        for line in prepared.verbose_lines:
            click.echo(line, err=True)
    body = dict(prepared.body)
    if os.environ.get(WORKSPACE_VARIABLE):  # the commands' options leave no room for ours
        body["workspace"] = os.environ[WORKSPACE_VARIABLE]
    answer = state.client().post("/tasks", body)
    if prepared.flag("test-only"):
        click.echo(test_only_text(answer, f"det {name}"))
        return
    _report(prepared, answer["task"], command.submitted_line, f"det {name}")
    if prepared.flag("wait"):
        raise click.exceptions.Exit(wait_for(state, answer["task"]["id"]))


def _answer_locally(ctx: click.Context, name: str, what: str) -> None:
    """--help, --usage and --version need no master."""
    if what == "help":
        click.echo(ctx.get_help())
    elif what == "usage":
        click.echo(ctx.get_usage())
    else:
        click.echo(f"det {name} (hpcdet {__version__})")


def _read_stdin() -> bytes | None:
    return None if sys.stdin.isatty() else sys.stdin.buffer.read(MAX_SCRIPT_BYTES + 1)


# ---- after submitting ----------------------------------------------------------------------


def _report(prepared: Prepared, task: Mapping[str, Any], line: Callable[[str], str],
            client: str) -> None:
    if prepared.flag("parsable"):
        click.echo(task["job_id"])
    elif not prepared.flag("silent"):
        click.echo(line(task["job_id"]))
    if not prepared.flag("quiet"):
        click.echo(f"{client}: task {task['id']} (det task logs {task['id']} -f)", err=True)


def test_only_text(answer: Mapping[str, Any], client: str = "det sbatch") -> str:
    """What ``--test-only`` prints: where the task would go and what would run."""
    import shlex

    argv = " ".join(shlex.quote(str(word)) for word in answer.get("argv") or [])
    return (f"{client}: --test-only, nothing was submitted.\n"
            f"pool: {answer.get('pool') or '(the scheduler default)'}  account: "
            f"{answer.get('account') or '(the scheduler default)'}  working directory: "
            f"{answer.get('workdir')}\nthe master would run:\n  {argv}\n"
            f"with this wrapper script (task-NEW stands for the task's id):\n"
            f"{answer.get('script', '')}")


def wait_for(state: CliState, task_id: int) -> int:
    """Poll the task until it ends; its exit status as sbatch --wait gives it."""
    while True:
        task = state.client().get(f"/tasks/{task_id}")["task"]
        if task["state"] in _FINISHED:
            return exit_status(task)
        time.sleep(state.poll_interval)


def exit_status(task: Mapping[str, Any]) -> int:
    """0 for COMPLETED; the job's exit code; 1 when a signal (or nothing) ended it."""
    if task["state"] == "COMPLETED":
        return 0
    code = task.get("exit_code")
    return code if isinstance(code, int) and 0 < code < 128 else 1

