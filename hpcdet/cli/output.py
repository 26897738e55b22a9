"""How the ``det`` commands show things: aligned tables and key/value blocks for people,
``--json`` (the master's answer, pretty-printed with sorted keys) for scripts.

Standard library only, so that importing a command module stays cheap.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import click

EMPTY = "-"


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON with sorted keys (for ``--json``)."""
    click.echo(json.dumps(value, indent=2, sort_keys=True))


def print_answer(answer: Any, as_json: bool, text: Callable[[Any], str]) -> None:
    """Print the master's ``answer``: as JSON with ``--json``, else as ``text(answer)`` (made
    only then: the JSON of a script never depends on the fields people read)."""
    if as_json:
        print_json(answer)
    else:
        click.echo(text(answer))


def warn(message: str) -> None:
    """Print one ``Warning: ...`` line on stderr."""
    click.echo(f"Warning: {message}", err=True)


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Aligned plain-text columns under a header row and a rule of dashes."""
    cells = [[str(h) for h in headers]] + [[format_value(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [_table_line(row, widths) for row in cells]
    lines.insert(1, _table_line(["-" * w for w in widths], widths))
    return "\n".join(lines)


def _table_line(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


def render_fields(pairs: Iterable[tuple[str, Any]], indent: int = 2) -> str:
    """``key: value`` lines with the values aligned, one per pair."""
    items = [(key, format_value(value)) for key, value in pairs]
    width = max((len(key) for key, _ in items), default=0) + 1
    return "\n".join(" " * indent + f"{key + ':':<{width}} {value}" for key, value in items)


def format_value(value: Any) -> str:
    """A short human form: ``-`` for nothing, ``k=v, ...`` for mappings, 6 significant
    digits for floats."""
    if value is None or value == "" or value == [] or value == {}:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={format_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def format_time(value: str | None) -> str:
    """An ISO 8601 timestamp from the master as ``YYYY-MM-DD HH:MM:SS`` in local time."""
    if not value:
        return EMPTY
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def format_size(size: float) -> str:
    """Bytes in binary units: ``512 B``, ``1.5 KiB``, ``95.0 MiB``."""
    if size < 1024:
        return f"{int(size)} B"
    units = ["KiB", "MiB", "GiB", "TiB"]
    size /= 1024
    while size >= 1024 and len(units) > 1:
        size /= 1024
        units.pop(0)
    return f"{size:.1f} {units[0]}"
