"""``/``: the recent experiments with their state."""

from __future__ import annotations

from flask import render_template
from sqlalchemy import select

from hpcdet.master.api.common import db
from hpcdet.master.models import Experiment
from hpcdet.master.web import bp


@bp.get("/")
def index() -> str:
    """Recent experiments with their state."""
    rows = db().scalars(select(Experiment).where(Experiment.archived.is_(False))
                        .order_by(Experiment.id.desc()).limit(100)).all()
    return render_template("index.html", experiments=rows, page="experiments")
