"""``det cmd`` (alias ``det command``): run a command as a job in a resource pool.

``det cmd run`` sends the command, its config (Determined's command config: a file,
``--config KEY=VALUE`` overrides) and optionally a context directory to the master, which
submits it as a command task (docs/commands.md); without ``-d`` it prints the command's
output until it ends and exits with its exit code. ``list``, ``describe``, ``logs`` and
``kill`` are the task commands narrowed to commands.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.output import warn
from hpcdet.cli.sbatch import exit_status
from hpcdet.cli.task import print_logs
from hpcdet.cli.task_kinds import (
    describe_command,
    kill_command,
    kind_table,
    list_command,
    logs_command,
)

F = TypeVar("F", bound=Callable[..., Any])


def config_options(noun: str, in_context: str, instead: str) -> Callable[[F], F]:
    """``--config-file``, ``--config``, ``-c/--context`` and ``-d/--detach`` of a command
    config's task (``det cmd run``, ``det shell start``): ``noun`` names it, ``in_context``
    says where it starts with a context, ``instead`` what ``-d`` skips."""

    def add(function: F) -> F:
        options = [
            click.option("--config-file", type=click.Path(dir_okay=False), metavar="FILE",
                         help=f"A {noun} config file (YAML; Determined's command config)."),
            click.option("--config", "configs", multiple=True, metavar="FILE|KEY=VALUE",
                         help="A config file, or KEY=VALUE setting one value "
                              "(resources.slots=2); repeatable, later ones win."),
            click.option("-c", "--context", "context_dir",
                         type=click.Path(file_okay=False, exists=True), metavar="DIR",
                         help=f"Upload DIR (honouring .detignore); {in_context} unless "
                              "work_dir says otherwise."),
            click.option("-d", "--detach", is_flag=True, help=f"Print the {noun}'s id and "
                         f"return at once instead of {instead}."),
        ]
        for option in reversed(options):
            function = option(function)
        return function

    return add


def config_body(config_file: str | None, configs: Sequence[str],
                context_dir: str | None) -> dict[str, Any]:
    """The ``config`` (and ``context``) of a command config's request body."""
    body: dict[str, Any] = {"config": command_config(config_file, configs)}
    if context_dir is not None:
        body["context"] = context_archive(context_dir)
    return body


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def cmd() -> None:
    """Run commands as jobs in a resource pool (as Determined's det cmd)."""


@cmd.command("run", context_settings={"allow_interspersed_args": False})
@config_options("command", "the command runs in its copy",
                "printing its output until it ends")
@click.option("--test-only", is_flag=True, help="Show the script and the submit command; "
              "submit nothing.")
@click.argument("entrypoint", nargs=-1, required=True)
@pass_state
def run(state: CliState, config_file: str | None, configs: Sequence[str],
        context_dir: str | None, detach: bool, test_only: bool,
        entrypoint: Sequence[str]) -> None:
    """Run ENTRYPOINT (put -- before it) as a job in a resource pool.

    One word is a shell command (det cmd run 'make && ./a.out'); several are the program
    and its arguments. Without -d the output is printed until the command ends, and det
    exits with its exit code (Ctrl-C stops following; the command goes on).
    """
    body = {**config_body(config_file, configs, context_dir),
            "entrypoint": list(entrypoint), "test_only": test_only}
    answer = state.client().post("/commands", body)
    for message in answer.get("warnings") or []:
        warn(message)
    if test_only:
        click.echo(f"{answer['script']}\n# submitted by:\n# {' '.join(answer['argv'])}")
        return
    task = answer["task"]
    if detach:
        click.echo(task["id"])
        return
    click.echo(f"Launched command {task['id']} (job {task['job_id']}); det cmd logs -f "
               f"{task['id']} follows it, det cmd kill {task['id']} stops it", err=True)
    print_logs(state, int(task["id"]), follow=True, tail=None)
    final = state.client().get(f"/tasks/{task['id']}")["task"]
    click.echo(f"Command {task['id']} ended {final['state']}"
               + (f" (exit code {final['exit_code']})" if final.get("exit_code") is not None
                  else ""), err=True)
    raise click.exceptions.Exit(exit_status(final))


def command_config(config_file: str | None, configs: Sequence[str]) -> dict[str, Any]:
    """The config from ``--config-file`` and ``--config`` values (files, then settings)."""
    from hpcdet.cli.config_file import load_config_file
    from hpcdet.cli.overrides import apply_overrides, parse_override

    files = [value for value in configs if "=" not in value]
    if config_file is not None:
        files.insert(0, config_file)
    if len(files) > 1:
        raise CliError(f"give one config file, not {len(files)}: {', '.join(files)}")
    config: dict[str, Any] = load_config_file(files[0]).data if files else {}
    overrides = [parse_override(value) for value in configs if "=" in value]
    return apply_overrides(config, overrides)


def context_archive(context_dir: str) -> str:
    """``context_dir`` as the API takes it: a base64 tar.gz honouring .detignore."""
    from hpcdet.cli.context import build_context

    archive = build_context(context_dir)
    return base64.b64encode(archive.data).decode("ascii")


def _headline(task: Mapping[str, Any]) -> str:
    return f"Command: {' '.join((task.get('config') or {}).get('entrypoint') or [])}"


cmd.add_command(describe_command("command", "command", "Show a command: its entrypoint, "
                                 "config, job, state, exit code and history.", _headline))
cmd.add_command(list_command("command", "commands", kind_table, " with exit codes"))
cmd.add_command(logs_command("command", "command", "standard output and error, as the job "
                             "wrote them"))
cmd.add_command(kill_command("command", "command", "Cancel a command's job (the master "
                             "cancels it within seconds)."))
