"""The queue page's cells that are pure functions: a row's link and its times."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.master.web.queue import duration_text, job_link, times_text


@pytest.mark.parametrize(("ids", "link"), [
    ({"trial_id": 4, "experiment_id": 3}, "/trials/4"),
    ({"trial_id": None, "experiment_id": 3}, "/experiments/3"),  # an allocation job
    ({"task_id": 9}, "/tasks/9"),
    ({"trial_id": None, "experiment_id": None, "task_id": None}, None),  # hidden or outside
])
def test_a_row_links_to_what_its_job_runs(ids: dict[str, Any], link: str | None) -> None:
    assert job_link(ids) == link


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "\u2014"), (0, "0:00"), (31, "0:31"), (3600, "1:00:00"), (3723, "1:02:03"),
    (93784, "1-02:03:04"),
])
def test_durations_read_as_squeue_writes_them(seconds: int | None, text: str) -> None:
    assert duration_text(seconds) == text


def test_time_used_and_limit() -> None:
    assert times_text(10, None) == "0:10 / \u2014"
