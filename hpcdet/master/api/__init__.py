"""The REST API blueprint, mounted at ``/api/v1``."""

from __future__ import annotations

# Route modules register themselves on ``bp`` when imported.
from hpcdet.master.api import (  # noqa: F401
    allocations,
    checkpoints,
    commands,
    experiment_edits,
    experiment_metrics,
    experiments,
    groups,
    harness_signals,
    jobs,
    lifecycle,
    logs,
    master_info,
    metric_series,
    models,
    notebooks,
    openapi,
    pools,
    shells,
    tasks,
    templates,
    tensorboards,
    trials,
    unmanaged,
    user_admin,
    users,
    workspaces,
)
from hpcdet.master.api.blueprint import bp as bp  # what app.py registers
