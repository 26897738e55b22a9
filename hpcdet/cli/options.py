"""Options shared by many ``det`` commands (``--json``; the logs commands' flags).

Their own small module, so that a command module can use them without importing
:mod:`hpcdet.cli.trial` (``det experiment list`` does not need the trial commands).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

JSON_OPTION = click.option("--json", "as_json", is_flag=True,
                           help="Print the master's answer as JSON, for scripts.")


def log_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``-f``, ``--head N``, ``--tail N``, ``--rank R``, ``--node NODE`` and ``--json``,
    shared by every logs command."""
    options = [
        click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON object per line (id, rank, node, stream, line, "
                          "job_id, at), for scripts."),
        click.option("--node", metavar="NODE", help="Only the lines from host NODE."),
        click.option("--rank", type=click.IntRange(min=0), metavar="R",
                     help="Only the lines of rank R."),
        click.option("--tail", type=click.IntRange(min=0), metavar="N",
                     help="Print only the last N lines (then new ones, with --follow)."),
        click.option("--head", type=click.IntRange(min=0), metavar="N",
                     help="Print only the first N lines."),
        click.option("-f", "--follow", is_flag=True,
                     help="Keep printing new lines until the trial ends."),
    ]
    for option in options:
        command = option(command)
    return command
