"""Preemption: Slurm's warning signal becomes a flag the training loop polls.

Slurm sends SIGTERM before it preempts or cancels a job (then SIGKILL after
``KillWait``), and the job script asks for SIGUSR2 ahead of the time limit
(``--signal=USR2@120``). Never SIGUSR1: NCCL uses it. The harness installs
:func:`install_signal_handlers` in every rank; the handler only sets a flag, so the
training code decides where it is safe to stop (after a checkpoint).
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

from hpcdet.core._distributed import DistributedContext, DummyDistributedContext

PREEMPT_SIGNALS = (signal.SIGTERM, signal.SIGUSR2)

_signalled = threading.Event()


def install_signal_handlers() -> None:
    """Make SIGTERM and SIGUSR2 set the preemption flag (main thread only)."""
    for signum in PREEMPT_SIGNALS:
        signal.signal(signum, _on_signal)


def signal_preemption() -> None:
    """Set this process's preemption flag, as the signal handler does."""
    _signalled.set()


def preemption_signalled() -> bool:
    """Whether this process (only) has been asked to stop."""
    return _signalled.is_set()


def _reset_for_tests() -> None:
    _signalled.clear()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _signalled.set()
    # os.write, not print: a handler may run while the main thread is inside a print to
    # stderr, and the buffered writer is not reentrant.
    message = f"hpcdet: got {signal.Signals(signum).name}, will stop at the next preemption check\n"
    os.write(2, message.encode())


class PreemptContext:
    """Asks whether the trial should stop now (checkpoint first, then exit 0).

    In a multi-rank trial the answer is agreed over all ranks (an allgather of each
    rank's flag), so *every rank must call* :meth:`should_preempt` *at the same points*,
    e.g. once per epoch. Once the answer is True it stays True, without more collectives.

    Example::

        for epoch in range(start, epochs):
            train_one_epoch()
            save_checkpoint()
            if core_context.preempt.should_preempt():
                return  # the master resubmits the trial from the checkpoint
    """

    def __init__(self, distributed: DistributedContext) -> None:
        self._dist = distributed
        self._decided = False

    def should_preempt(self) -> bool:
        """True once any rank got SIGTERM or SIGUSR2; the same answer on every rank."""
        if self._decided:
            return True
        local = preemption_signalled()
        flags = self._dist.allgather(local) if self._dist.size > 1 else [local]
        self._decided = any(flags)
        return self._decided


class DummyPreemptContext(PreemptContext):
    """Preemption for a single process outside a job: only this process's flag counts."""

    def __init__(self, distributed: DistributedContext | None = None) -> None:
        super().__init__(distributed or DummyDistributedContext())
