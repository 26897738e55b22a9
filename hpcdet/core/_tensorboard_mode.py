"""``TensorboardMode``: Determined's ``core.init(tensorboard_mode=)`` values."""

from __future__ import annotations

import enum


class TensorboardMode(enum.Enum):
    """How TensorBoard files are handled (Determined's names and values).

    hpcdet collects no TensorBoard files from a trial: ``det tensorboard`` draws the
    metrics the master stores. Both modes are accepted and behave alike (as ``MANUAL``:
    nothing is written or uploaded for you).
    """

    AUTO = "AUTO"
    MANUAL = "MANUAL"
