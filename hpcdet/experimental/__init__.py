"""Determined's ``determined.experimental``: the Python SDK (``from hpcdet.experimental
import client``) over the master's REST API, logged in as ``det`` is. See docs/sdk.md."""

from __future__ import annotations

from hpcdet.experimental import client
from hpcdet.experimental.client import (
    Checkpoint,
    CheckpointState,
    Determined,
    DownloadMode,
    Experiment,
    Model,
    ModelVersion,
    OrderBy,
    Trial,
    TrialMetrics,
)

__all__ = ["Checkpoint", "CheckpointState", "Determined", "DownloadMode", "Experiment", "Model",
           "ModelVersion", "OrderBy", "Trial", "TrialMetrics", "client"]
