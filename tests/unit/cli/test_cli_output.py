"""Tables, values, times and sizes as people see them."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from hpcdet.cli.output import (
    format_size,
    format_time,
    format_value,
    print_json,
    render_fields,
    render_table,
)


def test_table_aligns_columns_under_a_header() -> None:
    table = render_table(["ID", "Name", "State"], [[1, "mnist", "ACTIVE"],
                                                   [12, None, "COMPLETED"]])
    assert table.splitlines() == [
        "ID  Name   State",
        "--  -----  ---------",
        "1   mnist  ACTIVE",
        "12  -      COMPLETED",
    ]


def test_table_without_rows_keeps_the_header() -> None:
    assert render_table(["ID", "State"], []).splitlines() == ["ID  State", "--  -----"]


def test_fields_align_values() -> None:
    assert render_fields([("owner", "alice"), ("resource pool", None)]).splitlines() == [
        "  owner:         alice",
        "  resource pool: -",
    ]


@pytest.mark.parametrize("value, shown", [
    (None, "-"), ("", "-"), ([], "-"), ({}, "-"), (True, "yes"), (3, "3"),
    (0.123456789, "0.123457"), (1e-7, "1e-07"), ({"lr": 0.1, "bs": 32}, "lr=0.1, bs=32"),
    ([41, 42], "41, 42"), ("text", "text"),
])
def test_format_value(value: object, shown: str) -> None:
    assert format_value(value) == shown


def test_format_time_is_local_and_readable() -> None:
    moment = dt.datetime(2024, 5, 1, 12, 3, 4, 123456, tzinfo=dt.timezone.utc)
    expected = moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert format_time(moment.isoformat()) == expected
    assert format_time("2024-05-01T12:03:04Z") == expected


@pytest.mark.parametrize("value, shown", [(None, "-"), ("", "-"), ("not a time", "not a time")])
def test_format_time_without_a_time(value: str | None, shown: str) -> None:
    assert format_time(value) == shown


@pytest.mark.parametrize("size, shown", [
    (0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (95 * 1024 * 1024, "95.0 MiB"),
    (3 * 1024**3, "3.0 GiB"), (2 * 1024**4, "2.0 TiB"),
])
def test_format_size(size: int, shown: str) -> None:
    assert format_size(size) == shown


def test_print_json_is_sorted_and_indented(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"b": 1, "a": [1, 2]})
    out = capsys.readouterr().out
    assert out == json.dumps({"a": [1, 2], "b": 1}, indent=2) + "\n"
