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


def _check_time(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An RFC 3339 / ISO 8601 time as given (the master reads it), or a usage error."""
    import datetime as dt

    if value is None:
        return None
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an RFC 3339 time (e.g. "
                                 "2024-05-01T12:00:00Z)") from None
    return value


def log_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``-f``, ``--head N``, ``--tail N``, ``--rank R``, ``--node NODE``, ``--stdtype``,
    ``--timestamp-before/-after`` and ``--json``, shared by every logs command (with
    Determined's spellings ``--rank-id`` and ``--agent-id``; one value each)."""
    options = [
        click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON object per line (id, rank, node, stream, line, "
                          "job_id, at), for scripts."),
        click.option("--timestamp-after", metavar="TIME", callback=_check_time,
                     help="Only the lines logged after TIME (RFC 3339, e.g. "
                          "2024-05-01T12:00:00Z; without an offset: UTC)."),
        click.option("--timestamp-before", metavar="TIME", callback=_check_time,
                     help="Only the lines logged before TIME."),
        click.option("--stdtype", "--stream", "stdtype",
                     type=click.Choice(["stdout", "stderr", "master"]),
                     help="Only the lines of one stream (master: what the master logged "
                          "about the trial)."),
        click.option("--node", "--agent-id", "node", metavar="NODE",
                     help="Only the lines from host NODE."),
        click.option("--rank", "--rank-id", "rank", type=click.IntRange(min=0), metavar="R",
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
