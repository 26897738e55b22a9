"""``det cmd`` (alias ``det command``): run a command as a job in a resource pool.

``det cmd run`` sends the command, its config (Determined's command config: a file,
``--config KEY=VALUE`` overrides) and optionally a context directory to the master, which
submits it as a command task (docs/commands.md); without ``-d`` it prints the command's
output until it ends and exits with its exit code. ``list``, ``describe``, ``logs`` and
``kill`` are the task commands narrowed to commands.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.output import format_time, print_json, render_table, warn
from hpcdet.cli.sbatch import exit_status
from hpcdet.cli.task import describe_text, print_logs
from hpcdet.cli.trial import JSON_OPTION


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def cmd() -> None:
    """Run commands as jobs in a resource pool (as Determined's det cmd)."""


@cmd.command("run", context_settings={"allow_interspersed_args": False})
@click.option("--config-file", type=click.Path(dir_okay=False), metavar="FILE",
              help="A command config file (YAML; Determined's command config).")
@click.option("--config", "configs", multiple=True, metavar="FILE|KEY=VALUE",
              help="A config file, or KEY=VALUE setting one value (resources.slots=2); "
                   "repeatable, later ones win.")
@click.option("-c", "--context", "context_dir", type=click.Path(file_okay=False, exists=True),
              metavar="DIR", help="Upload DIR (honouring .detignore); the command runs in "
                                  "its copy unless work_dir says otherwise.")
@click.option("-d", "--detach", is_flag=True, help="Print the command's id and return at "
              "once instead of printing its output until it ends.")
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
    body: dict[str, Any] = {"config": command_config(config_file, configs),
                            "entrypoint": list(entrypoint), "test_only": test_only}
    if context_dir is not None:
        body["context"] = _context(context_dir)
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
    from hpcdet.cli.experiment import apply_overrides, parse_override

    files = [value for value in configs if "=" not in value]
    if config_file is not None:
        files.insert(0, config_file)
    if len(files) > 1:
        raise CliError(f"give one config file, not {len(files)}: {', '.join(files)}")
    config: dict[str, Any] = load_config_file(files[0]).data if files else {}
    overrides = [parse_override(value) for value in configs if "=" in value]
    return apply_overrides(config, overrides)


def _context(context_dir: str) -> str:
    from hpcdet.cli.context import build_context

    archive = build_context(context_dir)
    return base64.b64encode(archive.data).decode("ascii")


@cmd.command("list")
@click.option("-a", "--all", "show_all", is_flag=True, help="Every user's commands you may "
              "see, not only yours.")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="Show at most this many commands, newest first.")
@JSON_OPTION
@pass_state
def list_commands(state: CliState, show_all: bool, limit: int, as_json: bool) -> None:
    """List your commands (every user's with --all), newest first, with exit codes."""
    params: dict[str, Any] = {"kind": "command", "limit": limit}
    if not show_all:
        params["mine"] = "true"
    answer = state.client().get("/tasks", params=params)
    if as_json:
        print_json(answer)
    else:
        click.echo(commands_table(answer.get("tasks") or []))


def commands_table(tasks: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det cmd list`` prints."""
    headers = ["ID", "Owner", "Description", "State", "Exit code", "Job", "Pool",
               "Submitted"]
    rows = [[t.get("id"), t.get("owner"), t.get("name"), t.get("state"), t.get("exit_code"),
             t.get("job_id"), t.get("pool") or t.get("partition"),
             format_time(t.get("submitted_at"))] for t in tasks]
    return render_table(headers, rows)


def _command(state: CliState, command_id: int) -> dict[str, Any]:
    task: dict[str, Any] = state.client().get(f"/tasks/{command_id}")["task"]
    if task.get("kind") != "command":
        raise CliError(f"task {command_id} is not a command (det task describe "
                       f"{command_id} shows it)")
    return task


@cmd.command("describe")
@click.argument("command_id", type=int)
@JSON_OPTION
@pass_state
def describe(state: CliState, command_id: int, as_json: bool) -> None:
    """Show a command: its entrypoint, config, job, state, exit code and history."""
    task = _command(state, command_id)
    if as_json:
        print_json({"task": task})
        return
    config = task.get("config") or {}
    click.echo(f"Command: {' '.join(config.get('entrypoint') or [])}")
    click.echo(describe_text(task))


@cmd.command("logs")
@click.argument("command_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new output until the "
              "command ends.")
@click.option("--tail", type=click.IntRange(min=0), metavar="N",
              help="Print only the last N lines (then new ones, with --follow).")
@pass_state
def logs(state: CliState, command_id: int, follow: bool, tail: int | None) -> None:
    """Print a command's output (standard output and error, as the job wrote them)."""
    _command(state, command_id)
    print_logs(state, command_id, follow=follow, tail=tail)


@cmd.command("kill")
@click.argument("command_id", type=int)
@pass_state
def kill(state: CliState, command_id: int) -> None:
    """Cancel a command's job (the master cancels it within seconds)."""
    _command(state, command_id)
    answer = state.client().post(f"/tasks/{command_id}/kill")
    click.echo(f"Killing command {command_id} (job {answer['task'].get('job_id')}): "
               f"{answer['task']['state']}")
