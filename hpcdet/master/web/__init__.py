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
    checkpoints,
    cluster,
    experiment,
    experiments,
    forking,
    formatting,
    health_banner,
    identity,
    models,
    queue,
    sign_in_link,
    tasks,
    trial,
    trial_logs,
)

# The state and time words every template uses (formatting.py: the "pages" area's block).
for _name in ("state_word", "state_badge", "time_tag", "or_dash"):
    bp.add_app_template_global(getattr(formatting, _name), _name)

__all__ = ["bp", "checkpoints", "cluster", "experiment", "experiments", "forking", "formatting",
           "health_banner", "identity", "models", "queue", "sign_in_link",
           "tasks", "trial", "trial_logs"]
