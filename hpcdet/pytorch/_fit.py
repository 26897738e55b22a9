"""``hpcdet.pytorch.Trainer``: Determined's Trainer API over hpcdet's training loop.

Two ways in, one loop (:class:`~hpcdet.pytorch._trainer.TrialController`):

* ``Trainer(trial, context).fit(max_length=Epoch(1), ...)`` in a script, as in
  Determined 0.38 (``context`` from :func:`hpcdet.pytorch.init`);
* ``Trainer(TrialClass, core_context).run()``, what the harness does for a
  ``model_def:Trial`` entrypoint: it builds the trial and fits it with the experiment
  config's ``searcher`` length, ``min_validation_period``, ``min_checkpoint_period``,
  ``scheduling_unit``, ``checkpoint_policy`` and ``perform_initial_validation``, as
  Determined's harness does.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any

from hpcdet.core import Context
from hpcdet.pytorch._context import PyTorchTrialContext
from hpcdet.pytorch._instantiate import instantiate_trial
from hpcdet.pytorch._trainer import FitPlan, Outcome, Progress, TrialController, seed_everything
from hpcdet.pytorch._trial import PyTorchTrial
from hpcdet.pytorch._units import Batch, Epoch, TrainUnit, never, searcher_length

logger = logging.getLogger(__name__)

POLICIES = ("best", "all", "none")
DEFAULT_SCHEDULING_UNIT = 100


class Trainer:
    """Trains a :class:`PyTorchTrial`: validates, checkpoints, reports and stops on time.

    Example (a script entrypoint, on a cluster or locally)::

        with hpcdet.pytorch.init() as context:
            trial = MyTrial(context)
            trainer = hpcdet.pytorch.Trainer(trial, context)
            trainer.fit(max_length=hpcdet.pytorch.Epoch(2),
                        validation_period=hpcdet.pytorch.Batch(100),
                        latest_checkpoint=hpcdet.get_cluster_info().latest_checkpoint)

    ``Trainer(MyTrial, core_context).run()`` (a class and a Core API context) is the
    harness's form: it builds the trial and takes every setting from the experiment config.
    """

    def __init__(
        self,
        trial: PyTorchTrial | type[PyTorchTrial],
        context: PyTorchTrialContext | Context,
    ) -> None:
        if isinstance(trial, type):
            if not isinstance(context, Context):
                raise TypeError("Trainer(TrialClass, ...) takes a Core API context (hpcdet.core)")
            self.context = _context_from_core(trial, context)
            self.trial: PyTorchTrial = instantiate_trial(
                trial, self.context, self.context.get_hparams()
            )
        else:
            if not isinstance(context, PyTorchTrialContext):
                raise TypeError(
                    "Trainer(trial, context) takes the PyTorchTrialContext of "
                    "hpcdet.pytorch.init(), not " + type(context).__name__
                )
            self.trial, self.context = trial, context
        self._controller: TrialController | None = None

    @property
    def progress(self) -> Progress:
        """Where training stands (batches, records, last validation and checkpoint)."""
        return self._controller.progress if self._controller is not None else Progress()

    def configure_profiler(
        self,
        sync_timings: bool = True,
        enabled: bool = False,
        begin_on_batch: int = 0,
        end_after_batch: int | None = None,
    ) -> None:
        """Deprecated in Determined 0.38 and a no-op there too: use
        ``fit(profiling_enabled=True)`` (and the config's ``profiling`` window)."""
        logger.error(
            "`trainer.configure_profiler` has been replaced with "
            "`fit(..., profiling_enabled=True)` and will be removed in a future release."
        )

    def fit(
        self,
        checkpoint_period: TrainUnit | None = None,
        validation_period: TrainUnit | None = None,
        max_length: TrainUnit | None = None,
        reporting_period: TrainUnit = Batch(100),  # noqa: B008 - immutable in use
        checkpoint_policy: str = "best",
        latest_checkpoint: str | None = None,
        step_zero_validation: bool = False,
        test_mode: bool = False,
        profiling_enabled: bool = False,
    ) -> Outcome:
        """Train, validating every ``validation_period`` and checkpointing every
        ``checkpoint_period`` (``Batch``/``Epoch`` periods or schedules; default: only at
        the end), reporting training metrics and progress every ``reporting_period``, up
        to ``max_length`` (``Batch(n)`` or ``Epoch(n)``). Determined's rules apply:

        * in a job, ``max_length`` defaults to the config's ``searcher.max_length`` (or
          ``max_time`` in ``time_metric``) with a FutureWarning, a mismatch with an ASHA
          searcher's ``max_time``/``time_metric`` is logged, ``test_mode`` is refused, and
          a missing ``latest_checkpoint`` while the trial has one is logged;
        * locally, ``max_length`` is required and ``checkpoint_policy="best"`` becomes
          ``"all"`` (there is no experiment to compare with).

        ``checkpoint_policy``: after a validation, checkpoint if it beats the experiment's
        best (``best``), always (``all``) or never (``none``). ``test_mode`` trains one
        batch, validates and checkpoints. Returns how training ended (COMPLETED, or
        STOPPED by a preemption, the searcher or ``context.set_stop_requested``).
        """
        if checkpoint_policy not in POLICIES:
            raise ValueError(
                f"checkpoint_policy must be best, all or none, not {checkpoint_policy!r}"
            )
        info = self.context._core.info
        config = self.context.get_experiment_config()
        searcher = config.get("searcher") or {}
        if info.trial_id is None:
            checkpoint_policy, max_length = _local_rules(
                checkpoint_policy, max_length, profiling_enabled
            )
        else:
            max_length = self._cluster_rules(max_length, latest_checkpoint, test_mode)
        plan = FitPlan(
            max_length=max_length,
            validation_period=validation_period or never(),
            checkpoint_period=checkpoint_period or never(),
            reporting_period=reporting_period,
            checkpoint_policy=checkpoint_policy,
            step_zero_validation=step_zero_validation,
            test_mode=test_mode,
            profiling_enabled=profiling_enabled and info.trial_id is not None,
            searcher_metric=searcher.get("metric"),
            smaller_is_better=searcher.get("smaller_is_better") is not False,
            average_training_metrics=_average_training_metrics(config),
            latest_checkpoint=latest_checkpoint,
        )
        return self._fit(plan)

    def run(self) -> Outcome:
        """Fit with every setting from the experiment config (the harness's path for a
        ``model_def:Trial`` entrypoint); resumes from the trial's latest checkpoint."""
        info = self.context._core.info
        return self._fit(plan_from_config(
            self.context.get_experiment_config(),
            self.context.get_hparams(),
            latest_checkpoint=info.latest_checkpoint,
        ))

    def _fit(self, plan: FitPlan) -> Outcome:
        self._controller = TrialController(self.trial, self.context, plan)
        return self._controller.run()

    def _cluster_rules(
        self, max_length: TrainUnit | None, latest_checkpoint: str | None, test_mode: bool
    ) -> TrainUnit:
        if test_mode:
            raise ValueError("test_mode is only supported in local training mode.")
        info = self.context._core.info
        config = self.context.get_experiment_config()
        if latest_checkpoint is None and info.latest_checkpoint is not None:
            logger.warning(
                "latest_checkpoint has not been configured. Pause/resume training will not "
                "be able to continue from latest checkpoint. Did you mean to set "
                "`fit(latest_checkpoint=info.latest_checkpoint)'?"
            )
        if max_length is None:
            max_length = searcher_length(
                config.get("searcher") or {}, _global_batch_size(self.context.get_hparams())
            )
            warnings.warn(
                "Configuring `max_length` from the experiment config's searcher, which "
                "Determined deprecated in 0.38.0: set `fit(max_length=X)` directly.",
                FutureWarning,
                stacklevel=3,
            )
        _check_length(max_length)
        check_searcher_length(config, max_length)
        return max_length


def plan_from_config(
    config: Mapping[str, Any], hparams: Mapping[str, Any], *, latest_checkpoint: str | None
) -> FitPlan:
    """The fit() arguments Determined's harness derives from an experiment config."""
    searcher = config.get("searcher") or {}
    gbs = _global_batch_size(hparams)
    policy = config.get("checkpoint_policy") or "best"
    if policy not in POLICIES:
        raise ValueError(f"checkpoint_policy must be best, all or none, not {policy!r}")
    return FitPlan(
        max_length=searcher_length(searcher, gbs),
        validation_period=_config_period(config, "min_validation_period", gbs),
        checkpoint_period=_config_period(config, "min_checkpoint_period", gbs),
        reporting_period=Batch(_positive_int(config, "scheduling_unit", DEFAULT_SCHEDULING_UNIT)),
        checkpoint_policy=str(policy),
        step_zero_validation=bool(config.get("perform_initial_validation", False)),
        profiling_enabled=bool((config.get("profiling") or {}).get("enabled")),
        searcher_metric=searcher.get("metric"),
        smaller_is_better=searcher.get("smaller_is_better") is not False,
        average_training_metrics=_average_training_metrics(config),
        latest_checkpoint=latest_checkpoint,
    )


def check_searcher_length(config: Mapping[str, Any], max_length: TrainUnit) -> None:
    """Log (as Determined does) when ``max_length`` differs from an ASHA searcher's
    ``max_time`` in ``time_metric``: the search would then misjudge the trial's progress."""
    searcher = config.get("searcher") or {}
    time_metric = searcher.get("time_metric")
    if time_metric is None:
        return
    max_time = searcher.get("max_time")
    expected = {"batches": Batch, "epochs": Epoch}.get(str(time_metric))
    if expected is None:
        logger.warning(
            "`searcher.time_metric` must be either 'batches' or 'epochs' for training with "
            f"PyTorchTrials, but got {time_metric}. Training will proceed with {max_length} "
            "but may result in unexpected behavior."
        )
    elif type(max_length) is not expected or max_length.value != max_time:
        logger.warning(
            f"`max_length` passed into `fit()` method ({max_length}) does not match "
            "`searcher.max_time` and `searcher.time_metric` from the experiment config "
            f"({expected.__name__}(value={max_time})). This may result in unexpected "
            "hyperparameter search behavior."
        )


def _context_from_core(trial_class: type[PyTorchTrial], core: Context) -> PyTorchTrialContext:
    seed_everything(core.info.trial_seed)
    optimizations = (core.info.experiment_config or {}).get("optimizations") or {}
    frequency = _positive_int(optimizations, "aggregation_frequency", 1)
    context_class = trial_class.trial_context_class
    return context_class(core, aggregation_frequency=frequency)


def _local_rules(
    policy: str, max_length: TrainUnit | None, profiling_enabled: bool
) -> tuple[str, TrainUnit]:
    if policy == "best":
        logger.warning(
            "checkpoint_policy='best' is not supported in local training mode. "
            "Falling back to 'all'."
        )
        policy = "all"
    if max_length is None:
        raise ValueError("max_length must be defined in local training mode.")
    _check_length(max_length)
    if profiling_enabled:
        logger.warning("Profiling is not supported in local training mode.")
    return policy, max_length


def _check_length(max_length: Any) -> None:
    if not isinstance(max_length, Batch | Epoch) or not isinstance(max_length.value, int):
        raise TypeError(
            "max_length must either be a hpcdet.pytorch.Batch(int) or "
            f"hpcdet.pytorch.Epoch(int), not {max_length!r}"
        )


def _config_period(config: Mapping[str, Any], key: str, gbs: int | None) -> TrainUnit:
    raw = config.get(key)
    return never() if raw is None else TrainUnit.from_config(raw, key, gbs)


def _global_batch_size(hparams: Mapping[str, Any]) -> int | None:
    value = hparams.get("global_batch_size")
    return int(value) if value else None


def _average_training_metrics(config: Mapping[str, Any]) -> bool:
    return bool((config.get("optimizations") or {}).get("average_training_metrics", True))


def _positive_int(section: Mapping[str, Any], key: str, default: int) -> int:
    value = section.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be an int >= 1, not {value!r}")
    return value
