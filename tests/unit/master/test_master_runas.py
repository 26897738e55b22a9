"""Run-as-owner in the master: job updates as the owner, the service account's part."""

from __future__ import annotations

from collections.abc import Sequence

from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.slurm.queue import JobUpdate
from hpcdet.master.queue.job_updates import _update_as_owner


class FakeSudo:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], *, timeout: float = 60,
                 stdin: bytes | None = None) -> str:
        self.calls.append(tuple(argv))
        return ""


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str:
        self.calls.append(tuple(argv))
        return ""


def _runas(sudo: FakeSudo) -> RunAs:
    return RunAs(helper="/h", runner=sudo)  # type: ignore[arg-type]


def test_a_negative_nice_goes_through_the_service_account() -> None:
    sudo, runner = FakeSudo(), Recorder()
    _update_as_owner(_runas(sudo), "user_a", "12", JobUpdate(partition="debug", nice=-50),
                     runner)
    assert [argv[-3:] for argv in sudo.calls] == [("update", "12", "partition=debug")]
    assert runner.calls == [("scontrol", "update", "JobId=12", "Nice=-50")]
    sudo.calls.clear()
    _update_as_owner(_runas(sudo), "user_a", "12", JobUpdate(nice=50), runner)
    assert [argv[-3:] for argv in sudo.calls] == [("update", "12", "nice=50")]
