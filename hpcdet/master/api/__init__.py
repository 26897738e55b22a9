"""The REST API blueprint, mounted at ``/api/v1``."""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint("api", __name__, url_prefix="/api/v1")

# Route modules register themselves on ``bp`` when imported.
from hpcdet.master.api import (  # noqa: E402,F401
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
