"""Preemption: Slurm's warning signal, or the master's stop, becomes a flag the loop polls.

Slurm sends SIGTERM before it preempts or cancels a job (then SIGKILL after
``KillWait``), and the job script asks for SIGUSR2 ahead of the time limit
(``--signal=USR2@120``). Never SIGUSR1: NCCL uses it. The harness installs
:func:`install_signal_handlers` in every rank; the handler only sets a flag, so the
training code decides where it is safe to stop (after a checkpoint).

The master stops trials too (the searcher ends one early: state ``STOPPING_COMPLETED``).
In a managed trial the chief runs a :class:`PreemptionWatcher` that polls
``GET /trials/<id>/preemption`` and sets the same flag once the answer is yes; the
allgather in :meth:`PreemptContext.should_preempt` carries it to the other ranks.
"""

from __future__ import annotations

import enum
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from types import FrameType

from hpcdet.client import MasterClient
from hpcdet.core._distributed import DistributedContext, DummyDistributedContext
from hpcdet.core._reporter import is_transient
from hpcdet.errors import MasterError, ValidationError

PREEMPT_SIGNALS = (signal.SIGTERM, signal.SIGUSR2)
POLL_ENV = "HPCDET_PREEMPT_POLL_SECONDS"
DEFAULT_POLL_SECONDS = 5.0

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


def clear_preemption() -> None:
    """Forget an earlier stop: a new trial run in the same process (core_v2) starts anew."""
    _signalled.clear()


def _reset_for_tests() -> None:
    clear_preemption()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _signalled.set()
    # os.write, not print: a handler may run while the main thread is inside a print to
    # stderr, and the buffered writer is not reentrant.
    message = f"hpcdet: got {signal.Signals(signum).name}, will stop at the next preemption check\n"
    os.write(2, message.encode())


def poll_interval_from_environ(environ: Mapping[str, str] | None = None) -> float:
    """Seconds between preemption polls: ``$HPCDET_PREEMPT_POLL_SECONDS``, default 5.

    Raises ValidationError for anything but a finite number > 0.
    """
    raw = (os.environ if environ is None else environ).get(POLL_ENV, "").strip()
    if not raw:
        return DEFAULT_POLL_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValidationError(f"{POLL_ENV} must be a number of seconds > 0, not {raw!r}")
    return seconds


class PreemptionWatcher:
    """Asks the master, every ``interval`` seconds, whether the trial should stop.

    A daemon thread polls ``GET /trials/<trial_id>/preemption`` (the first time at once);
    when the master answers ``{"preempt": true}`` it calls ``on_preempt`` (by default
    :func:`signal_preemption`) and stops polling. Transient failures (master down, 5xx)
    are retried at the same pace and logged once per outage; a permanent one (401, 404)
    is logged and ends the polling, as asking again cannot help. :meth:`close` stops the
    thread and closes the client, which the watcher owns.
    """

    def __init__(
        self,
        client: MasterClient,
        trial_id: int,
        *,
        interval: float,
        on_preempt: Callable[[], None] = signal_preemption,
    ) -> None:
        self._client = client
        self._path = f"/trials/{trial_id}/preemption"
        self._interval = interval
        self._on_preempt = on_preempt
        self._failing = False
        self._closed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hpcdet-preemption", daemon=True)

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    @property
    def polling(self) -> bool:
        """Whether the thread still asks (False once told to stop, gave up, or closed)."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop polling (waiting for a request in flight) and close the client; idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if not self._closed:
            self._closed = True
            self._client.close()

    def _run(self) -> None:
        while not self._stop.is_set() and not self._poll_once():
            self._stop.wait(self._interval)

    def _poll_once(self) -> bool:
        """Ask the master once; True when there is nothing more to ask."""
        try:
            stop = self._master_says_stop()
        except Exception as exc:  # the thread must not die quietly: stops would go unseen
            return self._failed(exc)
        self._failing = False
        if stop:
            _log("the master asked this trial to stop; should_preempt() will now say True")
            self._on_preempt()
        return stop

    def _master_says_stop(self) -> bool:
        answer = self._client.get(self._path)
        return isinstance(answer, dict) and answer.get("preempt") is True

    def _failed(self, exc: Exception) -> bool:
        """Log one line per outage; True (give up) only for a permanent error."""
        if isinstance(exc, MasterError) and not is_transient(exc):
            _log(f"stopped asking the master about preemption ({self._path}): {exc}")
            return True
        if not self._failing:
            _log(f"asking the master about preemption failed ({exc}); will keep asking")
        self._failing = True
        return False


def _log(message: str) -> None:
    print(f"hpcdet core: {message}", file=sys.stderr, flush=True)


class PreemptMode(enum.Enum):
    """Who may call :meth:`PreemptContext.should_preempt` (Determined's names and values).

    ``WorkersAskChief`` (the default): every rank calls it at the same points and all get
    the same answer (any rank's signal, or the master's stop, counts). ``ChiefOnly``: only
    the chief calls it (no collectives); tell the workers yourself. ``WorkersAskMaster``:
    each rank calls it on its own, without collectives, and answers from what reaches
    that rank: its own signal (Slurm and PBS signal every rank), and on the chief also
    the master's stop.
    """

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class PreemptContext:
    """Asks whether the trial should stop now (checkpoint first, then exit 0).

    With the default :class:`PreemptMode` (``WorkersAskChief``) the answer is agreed
    over all ranks (an allgather of each rank's flag), so *every rank must call*
    :meth:`should_preempt` *at the same points*, e.g. once per epoch. Once the answer is
    True it stays True, without more collectives.

    Example::

        for epoch in range(start, epochs):
            train_one_epoch()
            save_checkpoint()
            if core_context.preempt.should_preempt():
                return  # the master resubmits the trial from the checkpoint
    """

    def __init__(
        self,
        distributed: DistributedContext,
        preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    ) -> None:
        self._dist = distributed
        self._mode = PreemptMode(preempt_mode)
        self._decided = False
        self._acknowledged = False

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """True once a rank got SIGTERM or SIGUSR2, or the master asked the trial to stop.

        ``auto_ack`` is Determined's: acknowledge the first True (see
        :meth:`acknowledge_preemption_signal`).
        """
        if self._mode == PreemptMode.ChiefOnly and not self._dist.is_chief:
            raise RuntimeError(
                "PreemptContext was configured with preempt_mode=ChiefOnly but "
                f".should_preempt() was called from non-chief worker of rank={self._dist.rank}"
            )
        if not self._decided:
            local = preemption_signalled()
            collective = self._mode == PreemptMode.WorkersAskChief and self._dist.size > 1
            self._decided = any(self._dist.allgather(local)) if collective else local
        if self._decided and auto_ack:
            self.acknowledge_preemption_signal()
        return self._decided

    def acknowledge_preemption_signal(self) -> None:
        """Say that the script is stopping to be resumed later (Determined's call).

        hpcdet needs no acknowledgement: the harness records a clean exit after the
        signal (or the master's stop) as a preemption, and the master resubmits the trial
        from its checkpoint. The call is accepted and noted once in the log.
        """
        if not self._acknowledged:
            self._acknowledged = True
            _log("preemption acknowledged; checkpoint and exit to be resumed")


class DummyPreemptContext(PreemptContext):
    """Preemption for a single process outside a job: only this process's flag counts."""

    def __init__(
        self,
        distributed: DistributedContext | None = None,
        preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    ) -> None:
        super().__init__(distributed or DummyDistributedContext(), preempt_mode)
