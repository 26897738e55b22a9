"""Determined's SDK enums, with the values hpcdet's master speaks."""

from __future__ import annotations

import enum

from hpcdet.states import State

# Determined has two enums; hpcdet's master has one set of states for both (a trial's
# QUEUED/RUNNING included), so both names are that enum.
ExperimentState = State
TrialState = State


class OrderBy(enum.Enum):
    """Sort order; ``ASC``/``DESC`` are Determined's older aliases."""

    ASCENDING = "asc"
    ASC = "asc"
    DESCENDING = "desc"
    DESC = "desc"


class CheckpointState(enum.Enum):
    """A checkpoint's state. hpcdet's master has ACTIVE (files kept) and DELETED (files
    removed by garbage collection); Determined's COMPLETED is hpcdet's ACTIVE."""

    ACTIVE = "ACTIVE"
    COMPLETED = "ACTIVE"
    DELETED = "DELETED"


class CheckpointSortBy(enum.Enum):
    """What :meth:`Experiment.list_checkpoints` may sort by."""

    UUID = "uuid"
    TRIAL_ID = "trial_id"
    BATCH_NUMBER = "steps_completed"
    END_TIME = "reported_at"
    STATE = "state"
    SEARCHER_METRIC = "searcher_metric"


class TrialSortBy(enum.Enum):
    """What :meth:`Experiment.list_trials` may sort by (the master's ``sortBy``)."""

    ID = "id"
    STATE = "state"
    BEST_VALIDATION_METRIC = "best_validation_metric"
    BATCHES_PROCESSED = "steps"


class DownloadMode(enum.Enum):
    """Where :meth:`Checkpoint.download` reads the files: the storage path if readable,
    else the master (AUTO); the storage path only (DIRECT); the master only (MASTER)."""

    AUTO = "auto"
    DIRECT = "direct"
    MASTER = "master"
