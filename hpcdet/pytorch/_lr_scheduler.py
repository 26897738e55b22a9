"""``LRScheduler``: a torch LR scheduler plus when the trainer should step it."""

from __future__ import annotations

import enum
from typing import Any


class LRScheduler:
    """Wraps a ``torch.optim.lr_scheduler`` object with a :class:`StepMode`.

    Made by ``context.wrap_lr_scheduler(scheduler, step_mode)``; the trainer steps it
    (unless ``MANUAL_STEP``) and saves it in checkpoints.
    """

    class StepMode(enum.Enum):
        """When the trainer calls ``scheduler.step()``."""

        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(self, scheduler: Any, step_mode: LRScheduler.StepMode, frequency: int = 1):
        if not isinstance(step_mode, LRScheduler.StepMode):
            raise TypeError(f"step_mode must be an LRScheduler.StepMode, not {step_mode!r}")
        if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
            raise ValueError(f"frequency must be an int >= 1, not {frequency!r}")
        self._scheduler = scheduler
        self._step_mode = step_mode
        self._frequency = frequency

    @property
    def scheduler(self) -> Any:
        """The wrapped torch scheduler."""
        return self._scheduler

    @property
    def step_mode(self) -> LRScheduler.StepMode:
        return self._step_mode

    @property
    def frequency(self) -> int:
        """Step every ``frequency`` batches, epochs or optimizer steps."""
        return self._frequency

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> list[float]:
        return list(self._scheduler.get_last_lr())

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = self._scheduler.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._scheduler.load_state_dict(state_dict)


StepMode = LRScheduler.StepMode
