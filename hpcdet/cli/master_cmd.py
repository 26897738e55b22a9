"""``det master``: what the master says about itself; ``det version``.

``config`` and ``logs`` are for cluster admins (master.yaml ``auth.admins``; on an open
master that does not tell users apart, everybody).
"""

from __future__ import annotations

import time

import click

from hpcdet import __version__
from hpcdet.cli.actions import show_command
from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import print_answer, print_json, render_fields

MAX_TAIL = 10_000


@click.group()
def master() -> None:
    """Ask the master about itself."""


@master.command("info")
@JSON_OPTION
@pass_state
def info(state: CliState, as_json: bool) -> None:
    """Show the master's version, database and resource manager, and its health."""
    print_answer(state.client().get("/master"), as_json,
                 lambda answer: info_text(state.client().url, answer))


def info_text(url: str, answer: dict[str, object]) -> str:
    """What ``det master info`` prints: the master's address and facts, then its health."""
    facts = {key: value for key, value in answer.items() if key != "health"}
    lines = [f"Master at {url}", render_fields(sorted(facts.items()))]
    health = answer.get("health")
    if isinstance(health, dict):
        lines.append(health_text(health))
    return "\n".join(lines)


def health_text(health: dict[str, object]) -> str:
    """The master's health as ``det master info`` prints it: the status, each problem on
    its own line, then the reconciler's last cycle."""
    lines = [f"Health: {health.get('status', 'unknown')}"]
    problems = health.get("problems")
    lines += [f"  - {problem}" for problem in (problems if isinstance(problems, list) else [])]
    fields = [("Scheduler failing since", health.get("scheduler_failing_since")),
              ("Last error", health.get("last_error")),
              ("Last cycle completed", health.get("cycle_completed_at")),
              ("Cycle seconds", health.get("cycle_seconds")),
              ("Database seconds", health.get("db_seconds"))]
    lines += [f"  {name}: {value}" for name, value in fields if value is not None]
    return "\n".join(lines)


def _config_yaml(answer: dict[str, object]) -> str:
    import yaml  # only this command prints YAML

    return yaml.safe_dump(answer.get("config") or {}, sort_keys=True,
                          default_flow_style=False).rstrip("\n")


master.add_command(show_command("config", "Show the master's effective configuration (YAML), "
                                "secrets masked. Admins only.", lambda: "/master/config",
                                _config_yaml))


@master.command("logs")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until Ctrl-C.")
@click.option("--tail", type=click.IntRange(min=1, max=MAX_TAIL), default=100,
              show_default=True, metavar="N", help="Start with the last N lines.")
@pass_state
def logs(state: CliState, follow: bool, tail: int) -> None:
    """Print the master's log (<state_dir>/master.log). Admins only."""
    client = state.client()
    answer = client.get("/master/logs", params={"tail": tail})
    for line in answer.get("lines") or []:
        click.echo(line)
    offset = int(answer.get("offset") or 0)
    while follow:  # Ctrl-C ends it (exit 130, hpcdet/cli/main.py)
        time.sleep(state.poll_interval)
        answer = client.get("/master/logs", params={"offset": offset})
        for line in answer.get("lines") or []:
            click.echo(line)
        offset = int(answer.get("offset") or 0)


@click.command("version")
@JSON_OPTION
@pass_state
def version(state: CliState, as_json: bool) -> None:
    """Show the client's version and, if it answers, the master's."""
    from hpcdet.errors import MasterError

    master_version: str | None = None
    problem: str | None = None
    try:
        master_version = state.client().get("/master").get("version")
    except MasterError as exc:
        problem = str(exc)
    if as_json:
        print_json({"client": {"version": __version__},
                    "master": {"address": state.client().url, "version": master_version,
                               "error": problem}})
        return
    click.echo(f"client: {__version__}")
    click.echo(f"master: {master_version or 'unknown'} ({state.client().url})")
    if problem:
        click.echo(f"Warning: the master did not answer: {problem}", err=True)
