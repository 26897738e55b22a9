"""hpcdet's job tags: each kind written by its function is read back by ``parse_tag``."""

from __future__ import annotations

import pytest

from hpcdet.dispatcher.tags import (
    JobTag,
    allocation_tag,
    array_tag,
    parse_tag,
    task_tag,
    trial_tag,
)


def test_every_kind_of_tag_reads_back() -> None:
    assert parse_tag(trial_tag("c1", 7, 2)) == JobTag("c1", trial_id=7, run_id=2)
    assert parse_tag(task_tag("c1", 9)) == JobTag("c1", task_id=9)
    assert parse_tag(array_tag("c1", 3)) == JobTag("c1", experiment_id=3)
    assert parse_tag(allocation_tag("c1", 4)) == JobTag("c1", allocation_id=4)


@pytest.mark.parametrize("text", [
    None, "", "a user's own comment", task_tag("c1", None), "hpcdet:c1:allocation-x",
    "hpcdet:c1:allocation-4\nhpcdet:c1:trial-1:run-1", "hpcdet:c1:trial-1",
])
def test_anything_else_is_no_tag(text: str | None) -> None:
    assert parse_tag(text) is None
