"""Preemption: signals set a flag; ranks agree on the answer."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from hpcdet.core import DistributedContext, DummyPreemptContext, PreemptContext
from hpcdet.core._preempt import PREEMPT_SIGNALS, install_signal_handlers, signal_preemption


@pytest.fixture
def handlers() -> Iterator[None]:
    """Install the harness's handlers in this (main) thread, restore pytest's after."""
    previous = {signum: signal.getsignal(signum) for signum in PREEMPT_SIGNALS}
    install_signal_handlers()
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR2])
@pytest.mark.usefixtures("handlers")
def test_signal_sets_the_flag(signum: int, capfd: pytest.CaptureFixture[str]) -> None:
    preempt = DummyPreemptContext()
    assert preempt.should_preempt() is False
    os.kill(os.getpid(), signum)
    assert preempt.should_preempt() is True
    assert f"got {signal.Signals(signum).name}" in capfd.readouterr().err


def test_sigusr1_is_left_alone() -> None:
    # NCCL uses SIGUSR1; the harness must not take it over.
    assert signal.SIGUSR1 not in PREEMPT_SIGNALS


class FlagCollectives:
    """A pretend 2-rank world: the other rank's flag is ``peer``; counts allgathers."""

    def __init__(self, peer: bool) -> None:
        self.peer = peer
        self.allgathers = 0

    def allgather(self, obj: Any) -> list[Any]:
        self.allgathers += 1
        return [obj, self.peer]

    def broadcast(self, obj: Any, src: int) -> Any:
        return obj

    def gather(self, obj: Any, dst: int) -> list[Any] | None:
        return [obj, self.peer]

    def barrier(self) -> None:
        return None


def _preempt(rank: int, peer: bool) -> tuple[PreemptContext, FlagCollectives]:
    collectives = FlagCollectives(peer)
    dist = DistributedContext(
        rank=rank,
        size=2,
        local_rank=rank,
        local_size=2,
        cross_rank=0,
        cross_size=1,
        collectives=collectives,
    )
    return PreemptContext(dist), collectives


def test_any_ranks_flag_preempts_every_rank() -> None:
    chief, _ = _preempt(0, peer=True)  # only the other rank got the signal
    assert chief.should_preempt() is True


def test_no_flag_anywhere_means_go_on() -> None:
    chief, collectives = _preempt(0, peer=False)
    assert chief.should_preempt() is False
    assert chief.should_preempt() is False
    assert collectives.allgathers == 2  # asked every time until the answer is yes


def test_once_true_it_stays_true_without_more_collectives() -> None:
    worker, collectives = _preempt(1, peer=False)
    signal_preemption()
    assert worker.should_preempt() is True
    assert worker.should_preempt() is True
    assert collectives.allgathers == 1
