"""The train context: report training and validation metrics, and early exits."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hpcdet.core._distributed import DistributedContext
from hpcdet.core._reporter import MetricsReporter
from hpcdet.job.early_exit import EarlyExitReason

GROUPS = ("training", "validation")
# Delivers an early exit to the master (or raises MasterError).
EarlyExitPoster = Callable[[EarlyExitReason], None]
# Asks the master for the experiment's best searcher metric so far (None: none yet).
BestValidationFetcher = Callable[[], "float | None"]
# Delivers the trial's progress, a fraction in [0, 1], to the master.
ProgressPoster = Callable[[float], None]


@dataclass(frozen=True)
class MetricsReport:
    """One validated report: the step it belongs to and its numbers."""

    group: str
    steps_completed: int
    metrics: dict[str, float]


def validate_metrics(steps_completed: Any, metrics: Any) -> dict[str, float]:
    """Check a report; returns the metrics as plain ints/floats.

    Values may be ints, floats, or anything with ``.item()`` giving one (a 0-d
    tensor, a numpy scalar). NaN, infinities and booleans are rejected: the searcher
    compares these numbers, and JSON cannot carry NaN.
    """
    if isinstance(steps_completed, bool) or not isinstance(steps_completed, int):
        raise ValueError(f"steps_completed must be an int, not {type(steps_completed).__name__}")
    if steps_completed < 0:
        raise ValueError(f"steps_completed must be >= 0, not {steps_completed}")
    if not isinstance(metrics, Mapping) or not metrics:
        raise ValueError("metrics must be a non-empty dict of {name: number}")
    return {_metric_name(name): _metric_value(name, value) for name, value in metrics.items()}


def _metric_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"metric names must be non-empty strings, not {name!r}")
    return name


def _metric_value(name: str, value: Any) -> float:
    raw = value
    if hasattr(value, "item") and not isinstance(value, numbers.Number | bool):
        try:
            value = value.item()  # 0-d tensors and numpy scalars
        except (ValueError, RuntimeError) as exc:
            raise ValueError(f"metric {name!r} must be a single number: {exc}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"metric {name!r} must be a number, not {type(raw).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"metric {name!r} must be finite, not {value}")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def check_progress(progress: Any) -> float:
    """``progress`` as a float in [0, 1]; ValueError otherwise (as Determined)."""
    if isinstance(progress, bool) or not isinstance(progress, numbers.Real):
        raise ValueError(f"progress must be a number between 0 and 1, not "
                         f"{type(progress).__name__}")
    value = float(progress)
    if not 0 <= value <= 1:
        raise ValueError(f"Progress should be between 0 and 1, not {progress}")
    return value


class TrainContext:
    """Reports metrics to the master; only the chief ships them.

    The other ranks validate their arguments and return: **reduce metrics across ranks
    first** (e.g. ``torch.distributed.all_reduce``) if every rank's data should count.
    Reports are batched and posted from a background thread; closing the core context
    ships whatever is left.

    Example::

        core_context.train.report_training_metrics(steps_completed=100, metrics={"loss": 0.3})
        core_context.train.report_validation_metrics(
            steps_completed=100, metrics={"validation_loss": 0.4, "accuracy": 0.91}
        )
    """

    def __init__(
        self,
        distributed: DistributedContext,
        reporter: MetricsReporter | None,
        early_exit: EarlyExitPoster | None = None,
        best_validation: BestValidationFetcher | None = None,
        progress: ProgressPoster | None = None,
        *,
        every_rank: bool = False,
    ) -> None:
        self._dist = distributed
        # Managed trials: only the chief ships (reduce first). Unmanaged ones (core_v2):
        # every rank with a reporter ships its own, as Determined does.
        self._ships = distributed.is_chief or every_rank
        self._reporter = reporter
        self._early_exit = early_exit
        self._best_validation = best_validation
        self._progress = progress
        self._latest_validation: MetricsReport | None = None
        self._steps_completed: int | None = None

    @property
    def latest_validation(self) -> MetricsReport | None:
        """The last validation report made through this context (on the chief)."""
        return self._latest_validation

    @property
    def steps_completed(self) -> int | None:
        """The largest ``steps_completed`` reported so far, None before any report."""
        return self._steps_completed

    def report_training_metrics(
        self,
        steps_completed: int,
        metrics: Mapping[str, Any],
        batch_metrics: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Report training metrics (e.g. the mean loss since the last report).

        ``batch_metrics`` (Determined's per-batch metrics, a list of dicts) are checked like
        ``metrics`` but not stored: hpcdet keeps one row per report.
        """
        for number, batch in enumerate(batch_metrics or ()):
            try:
                validate_metrics(steps_completed, batch)
            except ValueError as exc:
                raise ValueError(f"batch_metrics[{number}]: {exc}") from None
        self.report_metrics("training", steps_completed, metrics)

    def report_progress(self, progress: float) -> None:
        """Report how far training has come, a fraction from 0 to 1 (``steps / max_steps``).

        Optional; the master shows it as the experiment's progress when the experiment has
        one trial (searcher ``single``). Only the chief reports; a failed delivery is
        printed, not raised (progress is informational).
        """
        value = check_progress(progress)
        if self._dist.is_chief:
            self._ship_progress(value)

    def report_validation_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        """Report validation metrics; the searcher's ``metric`` must be among them."""
        self.report_metrics("validation", steps_completed, metrics)

    def report_metrics(self, group: str, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        """Report ``metrics`` in ``group`` (``training`` or ``validation``)."""
        if group not in GROUPS:
            raise ValueError(f"group must be one of {', '.join(GROUPS)}, not {group!r}")
        report = MetricsReport(group, steps_completed, validate_metrics(steps_completed, metrics))
        if not self._ships:
            return
        self._remember(report)
        self._ship(report)

    def get_experiment_best_validation(self) -> float | None:
        """The best value of the searcher metric reported by any trial of the experiment
        so far (Determined's API); None before any, outside a job, and on other ranks."""
        if self._best_validation is None or not self._dist.is_chief:
            return None
        return self._best_validation()

    def report_early_exit(self, reason: EarlyExitReason | str) -> None:
        """Tell the master why the trial's code stops before the searcher asked it to.

        ``reason`` is an :class:`EarlyExitReason` (or its name or value as text). With
        ``INVALID_HP`` the searcher replaces the trial without spending its budget;
        raising ``hpcdet.InvalidHP`` from a script the harness runs reports it for you.
        Exit (0) after reporting. Only the chief reports; on the other ranks this only
        checks ``reason``. Transient master errors are retried for a few minutes, then
        MasterError is raised.

        Example::

            if hparams["hidden"] % hparams["heads"]:
                core_context.train.report_early_exit(hpcdet.core.EarlyExitReason.INVALID_HP)
                sys.exit(0)
        """
        parsed = EarlyExitReason.parse(reason)
        if self._dist.is_chief:
            self._ship_early_exit(parsed)

    def set_status(self, status: str) -> None:
        """Say what the trial is working on, in a short line (Determined's call).

        The chief prints it to the trial's log (``hpcdet core: status: ...``); Determined
        showed it in its web UI, hpcdet's pages show the log. Other ranks do nothing.
        """
        if not isinstance(status, str):
            raise TypeError(f"status must be a str, not {type(status).__name__}")
        if self._dist.is_chief:
            print(f"hpcdet core: status: {status}", file=sys.stderr, flush=True)

    def flush(self) -> None:
        """Block until every report so far has reached the master."""
        if self._reporter is not None:
            self._reporter.flush()

    def close(self) -> None:
        """Ship what is queued and stop the background thread."""
        if self._reporter is not None:
            self._reporter.close()

    def _remember(self, report: MetricsReport) -> None:
        if report.group == "validation":
            self._latest_validation = report
        self._steps_completed = max(self._steps_completed or 0, report.steps_completed)

    def _ship(self, report: MetricsReport) -> None:
        if self._reporter is not None:
            self._reporter.report(report.group, report.steps_completed, report.metrics)

    def _ship_early_exit(self, reason: EarlyExitReason) -> None:
        if self._early_exit is not None:
            self._early_exit(reason)

    def _ship_progress(self, progress: float) -> None:
        if self._progress is not None:
            self._progress(progress)


class DummyTrainContext(TrainContext):
    """Metrics and early exits of a run outside a hpcdet job: printed to stderr by the chief."""

    def __init__(self, distributed: DistributedContext) -> None:
        super().__init__(distributed, reporter=None)

    def _ship(self, report: MetricsReport) -> None:
        values = " ".join(f"{k}={v:.6g}" for k, v in report.metrics.items())
        line = f"hpcdet core (dummy): {report.group} steps_completed={report.steps_completed}"
        print(f"{line} {values}", file=sys.stderr, flush=True)

    def _ship_early_exit(self, reason: EarlyExitReason) -> None:
        print(f"hpcdet core (dummy): early exit {reason.value}", file=sys.stderr, flush=True)

    def _ship_progress(self, progress: float) -> None:
        print(f"hpcdet core (dummy): progress {progress:.4g}", file=sys.stderr, flush=True)
