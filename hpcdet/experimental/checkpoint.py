"""Determined's ``determined.experimental.checkpoint``: the checkpoint class and its enums.

Determined's documentation imports it beside the client, as in
``from determined.experimental import checkpoint, client`` and then sorts with
``checkpoint.CheckpointSortBy.TRIAL_ID``; the same names live here (see docs/sdk.md).
"""

from __future__ import annotations

from hpcdet.experimental._checkpoint import Checkpoint
from hpcdet.experimental._enums import CheckpointSortBy, CheckpointState, DownloadMode, OrderBy

# Determined's older (deprecated) name for the order of checkpoint listings.
CheckpointOrderBy = OrderBy

__all__ = ["Checkpoint", "CheckpointOrderBy", "CheckpointSortBy", "CheckpointState",
           "DownloadMode"]
