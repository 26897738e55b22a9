"""TensorBoard event files, written with ``tensorboard``'s own writer.

``tensorboard.summary.writer`` and its protobufs import in a fraction of the time
``torch.utils.tensorboard`` takes (which imports torch first, then this same writer):
docs/tensorboard.md has the measurement. One :class:`RunWriter` per trial directory.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol


class ScalarWriter(Protocol):
    """What the syncer writes through: scalars into one run directory."""

    def add_scalar(self, tag: str, value: float, step: int, wall_time: float | None) -> None:
        """One point of the ``tag`` curve."""

    def flush(self) -> None:
        """Make what was added visible to TensorBoard."""

    def close(self) -> None:
        """Flush and release the file."""


class RunWriter:
    """A :class:`ScalarWriter` appending to an event file in ``logdir``."""

    def __init__(self, logdir: Path) -> None:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        logdir.mkdir(parents=True, exist_ok=True)
        self._writer: Any = EventFileWriter(str(logdir))

    def add_scalar(self, tag: str, value: float, step: int, wall_time: float | None) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        summary = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
        self._writer.add_event(Event(wall_time=wall_time or time.time(), step=step,
                                     summary=summary))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
