"""The web status pages: server-rendered HTML, refreshed live by a small poller.

Every page renders complete without JavaScript; ``static/poll.js`` then refetches the
page's JSON endpoint and re-renders its table body. Nothing is loaded from outside the
master (clusters often have no internet access).
"""

from __future__ import annotations

# The page modules register their routes on ``bp``; imported for that effect.
from hpcdet.master.web import (
    checkpoints,
    cluster,
    compare,
    experiment,
    experiments,
    forking,
    formatting,
    health_banner,
    identity,
    models,
    queue,
    sign_in_link,
    task,
    tasks,
    trial,
    trial_logs,
)
from hpcdet.master.web.blueprint import bp

# The state and time words every template uses (formatting.py: the "pages" area's block).
for _name in ("state_word", "state_badge", "time_tag", "or_dash"):
    bp.add_app_template_global(getattr(formatting, _name), _name)

__all__ = ["bp", "checkpoints", "cluster", "compare", "experiment", "experiments", "forking",
           "formatting", "health_banner", "identity", "models", "queue", "sign_in_link",
           "task", "tasks", "trial", "trial_logs"]
