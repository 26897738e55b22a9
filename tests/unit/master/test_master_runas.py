"""Run-as-owner job updates: as the owner through the helper, and the service account's part."""

from __future__ import annotations

from collections.abc import Sequence

from master_helpers import FakeSudo

from hpcdet.dispatcher.queue import JobUpdate
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.slurm.backend import SlurmBackend


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
    backend = SlurmBackend(runner=runner, runas=_runas(sudo))  # type: ignore[arg-type]
    backend.update_job("12", JobUpdate(partition="debug", nice=-50), "user_a")
    assert [argv[-3:] for argv in sudo.calls] == [("update", "12", "partition=debug")]
    assert runner.calls == [("scontrol", "update", "JobId=12", "Nice=-50")]
    sudo.calls.clear()
    backend.update_job("12", JobUpdate(nice=50), "user_a")
    assert [argv[-3:] for argv in sudo.calls] == [("update", "12", "nice=50")]
