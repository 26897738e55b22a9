"""``det master``: what the master says about itself."""

from __future__ import annotations

import click

from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.output import print_json, render_fields
from hpcdet.cli.trial import JSON_OPTION


@click.group()
def master() -> None:
    """Ask the master about itself."""


@master.command("info")
@JSON_OPTION
@pass_state
def info(state: CliState, as_json: bool) -> None:
    """Show the master's version, database and resource manager."""
    answer = state.client().get("/master")
    if as_json:
        print_json(answer)
        return
    click.echo(f"Master at {state.client().url}")
    click.echo(render_fields(sorted(answer.items())))
