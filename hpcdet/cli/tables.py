"""Tables for people or CSV for scripts (``--csv``, as Determined's ``det`` prints it)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

from hpcdet.cli.output import render_table


def csv_text(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """RFC 4180 CSV with a header row; nothing is shown as an empty field, never ``None``."""
    import csv  # only for --csv: the tables of `det experiment list` do without it

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for row in rows:
        writer.writerow(["" if value is None else _cell(value) for value in row])
    return out.getvalue().rstrip("\n")


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def table_or_csv(headers: Sequence[str], rows: Iterable[Sequence[Any]], as_csv: bool) -> str:
    """The aligned table, or CSV with ``as_csv``."""
    rows = list(rows)
    return csv_text(headers, rows) if as_csv else render_table(headers, rows)
