"""The web status page (server-rendered; grows into the full UI later)."""

from __future__ import annotations

from flask import Blueprint, render_template
from sqlalchemy import select

from hpcdet.master.api.common import db
from hpcdet.master.models import Experiment

bp = Blueprint("web", __name__)


@bp.get("/")
def index() -> str:
    """Recent experiments with their state."""
    rows = db().scalars(select(Experiment).where(Experiment.archived.is_(False))
                        .order_by(Experiment.id.desc()).limit(100)).all()
    return render_template("index.html", experiments=rows)
