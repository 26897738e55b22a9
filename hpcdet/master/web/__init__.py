"""The web status pages: server-rendered HTML, refreshed live by a small poller.

Every page renders complete without JavaScript; ``static/poll.js`` then refetches the
page's JSON endpoint and re-renders its table body. Nothing is loaded from outside the
master (clusters often have no internet access).
"""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint("web", __name__)

# The page modules register their routes on ``bp``; imported for that effect.
from hpcdet.master.web import (  # noqa: E402
    cluster,
    experiment,
    experiments,
    identity,
    models,
    queue,
    trial,
)

__all__ = ["bp", "cluster", "experiment", "experiments", "identity", "models", "queue", "trial"]
