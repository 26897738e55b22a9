"""The incremental copy of metrics into event files.

Each :meth:`Syncer.sync` asks the source, per trial and group, only for the steps after the
last one it wrote (the high-water mark starts unset: everything), so every point is written
once. A trial's run directory is ``trial_<id>/``; its scalars are ``training/<name>`` and
``validation/<name>`` at the report's ``steps_completed``, as Determined's TensorBoard
names them. A re-run that rolls a trial back to an earlier checkpoint reports steps at or
below the mark again: they are not written a second time (TensorBoard would draw the
curve back and forth); the curve goes on from the mark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from hpcdet.tensorboard.events import ScalarWriter
from hpcdet.tensorboard.source import GROUPS, MetricsSource


def run_dir(logdir: Path, trial_id: int) -> Path:
    """The run directory of ``trial_id`` (TensorBoard's run name ``trial_<id>``)."""
    return logdir / f"trial_{trial_id}"


class Syncer:
    """Copies the trials of ``experiment_ids`` and the ``trial_ids`` from ``source`` into
    event files under ``logdir``, through writers that ``open_writer`` makes per run."""

    def __init__(self, source: MetricsSource, logdir: Path, *,
                 experiment_ids: Sequence[int] = (), trial_ids: Sequence[int] = (),
                 open_writer: Callable[[Path], ScalarWriter]) -> None:
        self._source = source
        self._logdir = logdir
        self._experiment_ids = tuple(experiment_ids)
        self._trial_ids = tuple(trial_ids)
        self._open_writer = open_writer
        self._writers: dict[int, ScalarWriter] = {}
        # (trial, group) -> the last step written
        self._marks: dict[tuple[int, str], int] = {}

    def trials(self) -> list[int]:
        """The trials shown now: the experiments' (as they are now) and the named ones."""
        ids = self._source.trial_ids(self._experiment_ids) if self._experiment_ids else []
        return sorted(set(ids) | set(self._trial_ids))

    def sync(self) -> int:
        """Write what is new since the last call; the number of points written."""
        written = 0
        for trial_id in self.trials():
            for group in GROUPS:
                written += self._sync_group(trial_id, group)
        return written

    def _sync_group(self, trial_id: int, group: str) -> int:
        mark = self._marks.get((trial_id, group))
        reports = [r for r in self._source.reports(trial_id, group, mark)
                   if mark is None or r.steps_completed > mark]
        if not reports:
            return 0
        writer = self._writer(trial_id)
        points = 0
        for report in sorted(reports, key=lambda r: r.steps_completed):
            for name, value in sorted(report.metrics.items()):
                writer.add_scalar(f"{group}/{name}", value, report.steps_completed,
                                  report.wall_time)
                points += 1
        writer.flush()
        self._marks[(trial_id, group)] = max(r.steps_completed for r in reports)
        return points

    def _writer(self, trial_id: int) -> ScalarWriter:
        if trial_id not in self._writers:
            self._writers[trial_id] = self._open_writer(run_dir(self._logdir, trial_id))
        return self._writers[trial_id]

    def close(self) -> None:
        """Close every event file."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
