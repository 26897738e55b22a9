"""Checkpoints on the pages: the browser's download route and the experiment page's list.

``/checkpoints/<uuid>/download`` streams the same tar as the API's
``/api/v1/checkpoints/<uuid>/download``. It exists because the API, on an open master, reads
the user from the ``X-Hpcdet-User`` header, which a plain link cannot send; this route
reads the page's user instead (the SameSite=Strict sign-in cookie or web session, which a
link from another site does not carry) and applies the same read check as every page (an
unseen checkpoint is as unknown: 404). Failures are HTML pages, not JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import render_template, request
from sqlalchemy import select

from hpcdet.master.api.checkpoints import checkpoint_tar, storage_dir
from hpcdet.master.api.common import db
from hpcdet.master.api.refusals import http_status
from hpcdet.master.errors import DomainError
from hpcdet.master.experiments import checkpoint_marks
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.reports.checkpoint_gc import ACTIVE
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import number_text, time_text
from hpcdet.master.web.identity import page_sees

PAGE_SIZE = 20
MAX_PAGE_DIGITS = 6  # more digits: past the end (int() of a huge one is slow)
UUID_MAX = 64  # Checkpoint.uuid's length
PAGE_ARG = "checkpoints_page"  # the query parameter of the experiment's checkpoint list


@bp.get("/checkpoints/<uuid>/download")
def checkpoint_download(uuid: str) -> Any:
    """The checkpoint's files as a tar, for the signed-in user who may see its experiment."""
    found = db().get(Checkpoint, uuid) if len(uuid) <= UUID_MAX else None
    exp = None if found is None else db().scalars(
        select(Experiment).join(Trial, Trial.experiment_id == Experiment.id)
        .where(Trial.id == found.trial_id)).one()
    if found is None or exp is None or not page_sees(exp.owner, exp.workspace_id):
        return _failed(uuid, 404, f"checkpoint {uuid} not found")
    try:
        return checkpoint_tar(found, exp)
    except DomainError as exc:  # deleted (410), files missing (404), outside the roots (403)
        return _failed(uuid, http_status(exc), exc.message)


def _failed(uuid: str, status: int, message: str) -> tuple[str, int]:
    return render_template("checkpoint_download.html", page="experiments", uuid=uuid,
                           error=message), status


@bp.get("/experiments/<int:exp_id>/checkpoints")
def experiment_checkpoints_page(exp_id: int) -> tuple[str, int]:
    """The experiment's checkpoint list alone (what the experiment page's script refetches
    while the experiment runs; a page of its own without JavaScript too)."""
    exp = db().get(Experiment, exp_id)
    if exp is None or not page_sees(exp.owner, exp.workspace_id):
        return render_template("experiment_checkpoints.html", page="experiments", exp=None,
                               exp_id=exp_id), 404
    return render_template("experiment_checkpoints.html", page="experiments", exp=exp,
                           **list_context(exp)), 200


def list_context(exp: Experiment) -> dict[str, Any]:
    """What templates/_experiment_checkpoints.html needs besides ``exp``."""
    return {"checkpoints": experiment_checkpoints(exp, page_number(PAGE_ARG)),
            "metric": SearcherMetric.of(exp.config), "checkpoints_page_arg": PAGE_ARG,
            **template_helpers()}


def page_number(name: str) -> int:
    """``?<name>=N`` as a page number from 1 (not a number: 1; a huge one: past the end,
    which the list shows as its last page)."""
    raw = request.args.get(name, "")
    if not (raw.isascii() and raw.isdigit()):
        return 1
    return max(1, int(raw)) if len(raw) <= MAX_PAGE_DIGITS else 10**MAX_PAGE_DIGITS


def experiment_checkpoints(exp: Experiment, page: int) -> dict[str, Any]:
    """One page of the experiment's checkpoints across its trials: ACTIVE ones with a
    searcher-metric validation best first, then the others newest first, deleted last.

    ``{"rows", "page", "pages", "total"}``; a page past the end shows the last page.
    """
    rows = list(db().scalars(select(Checkpoint).join(Trial, Trial.id == Checkpoint.trial_id)
                             .where(Trial.experiment_id == exp.id)))
    metric = SearcherMetric.of(exp.config)
    rows = best_first(rows, metric)
    total = len(rows)
    pages = max(1, -(-total // PAGE_SIZE))
    page = min(page, pages)
    shown = rows[(page - 1) * PAGE_SIZE:page * PAGE_SIZE]
    latest = {trial_id: checkpoint_marks.latest_uuid(c for c in rows if c.trial_id == trial_id)
              for trial_id in {c.trial_id for c in shown}}
    marked = checkpoint_marks.marked(shown, exp.config, storage_dir(exp.config), latest)
    best = checkpoint_marks.best_uuid(rows, metric)
    for body in marked:  # the best of the whole experiment, not of this page
        body["best"] = body["uuid"] == best
    return {"rows": marked, "page": page, "pages": pages, "total": total}


def best_first(rows: list[Checkpoint], metric: SearcherMetric) -> list[Checkpoint]:
    """ACTIVE checkpoints with a searcher-metric validation best first, then the others
    newest first, deleted last (the experiment's list and the registry's picker)."""
    return sorted(rows, key=lambda c: _rank(c, metric))


def _rank(c: Checkpoint, metric: SearcherMetric) -> tuple[int, float, float]:
    value = metric.value_in(c.validation_metrics)
    deleted = c.state != ACTIVE
    if not deleted and value is not None:
        return (0, metric.key(value), -c.reported_at.timestamp())
    return (2 if deleted else 1, -float(c.steps_completed), -c.reported_at.timestamp())


def size_text(size: int | None) -> str:
    """Bytes for people: ``812 B``, ``1.5 KiB``, ``2.3 GiB`` (``—`` when unknown)."""
    if size is None:
        return "—"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def metric_text(checkpoint: Mapping[str, Any]) -> str:
    """``validation_loss 0.25, accuracy 0.9`` (the searcher metric first), ``—`` if none."""
    values = checkpoint.get("validation_metrics") or {}
    first = checkpoint.get("searcher_metric")
    names = sorted(values, key=lambda name: (name != first, name))
    return ", ".join(f"{name} {number_text(values[name])}" for name in names) or "—"


def template_helpers() -> dict[str, Any]:
    """What templates/_checkpoints.html calls, for the pages that include it."""
    return {"size_text": size_text, "ckpt_metric_text": metric_text, "time_text": time_text}
