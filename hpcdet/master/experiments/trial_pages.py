"""One page of an experiment's trials, sorted in SQL, and the counts around it.

What ``GET /api/v1/experiments/<id>/trials`` and the experiment page read: a search of
10,000 trials is never loaded whole. The page is one ``ORDER BY ... LIMIT`` query (ties
broken by trial id, so pages neither skip nor repeat trials), the total and the counts by
state one ``GROUP BY``. Sort keys and directions use Determined's words too
(``SORT_BY_BEST_VALIDATION_METRIC``, ``ORDER_BY_DESC``), as its
``GetExperimentTrials`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Float, Select, case, cast, func, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from hpcdet.master.models import Trial
from hpcdet.master.reports.searcher_metric import SearcherMetric

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

# The sort keys: ours, then Determined's ``sortBy`` words for the same thing.
SORT_KEYS: dict[str, str] = {
    "id": "id", "state": "state", "best_validation_metric": "best_validation_metric",
    "steps": "steps",
    "SORT_BY_ID": "id", "SORT_BY_STATE": "state",
    "SORT_BY_BEST_VALIDATION_METRIC": "best_validation_metric",
    "SORT_BY_BATCHES_PROCESSED": "steps",
}
# ``orderBy``: descending or not.
ORDER_WORDS: dict[str, bool] = {"asc": False, "desc": True,
                                "ORDER_BY_ASC": False, "ORDER_BY_DESC": True}
METRIC_KEY = "best_validation_metric"


class BadParameter(ValueError):
    """A query parameter that names no sort key or direction; the text names it."""


@dataclass(frozen=True)
class TrialOrder:
    """A sort key and direction; ``descending`` None: the key's own default (ascending,
    and for the searcher metric best first, whichever way ``smaller_is_better`` says)."""

    key: str = "id"
    descending: bool | None = None

    def is_descending(self, metric: SearcherMetric) -> bool:
        if self.descending is not None:
            return self.descending
        return self.key == METRIC_KEY and not metric.smaller_is_better


@dataclass(frozen=True)
class TrialPage:
    """The trials of one page, in order, and how many the experiment has in all."""

    trials: list[Trial]
    offset: int
    limit: int
    total: int

    def pagination(self) -> dict[str, int]:
        """Determined's ``pagination`` object: ``endIndex`` is one past the last shown."""
        start = min(self.offset, self.total)
        return {"offset": self.offset, "limit": self.limit, "total": self.total,
                "startIndex": start, "endIndex": start + len(self.trials)}


def order_from(sort_by: str | None, order_by: str | None, *,
               default: TrialOrder = TrialOrder()) -> TrialOrder:
    """The order that ``sortBy`` and ``orderBy`` name; ``default`` where neither is given."""
    if not sort_by and not order_by:
        return default
    key = SORT_KEYS.get(sort_by or default.key)
    if key is None:
        raise BadParameter(f"sortBy: must be one of {', '.join(SORT_KEYS)} (got {sort_by!r})")
    if not order_by:
        return TrialOrder(key)
    if order_by not in ORDER_WORDS:
        raise BadParameter(f"orderBy: must be one of {', '.join(ORDER_WORDS)} "
                           f"(got {order_by!r})")
    return TrialOrder(key, ORDER_WORDS[order_by])


def trial_page(session: Session, exp_id: int, metric: SearcherMetric, order: TrialOrder, *,
               offset: int, limit: int) -> TrialPage:
    """The trials ``offset`` to ``offset + limit`` of the experiment in ``order``."""
    query = ordered(select(Trial).where(Trial.experiment_id == exp_id),
                    session.get_bind().dialect.name, metric, order)
    trials = list(session.scalars(query.offset(offset).limit(limit)))
    if offset == 0 and len(trials) < limit:  # all of them: no need to count
        return TrialPage(trials, offset, limit, len(trials))
    total = session.scalar(select(func.count()).select_from(Trial)
                           .where(Trial.experiment_id == exp_id))
    return TrialPage(trials, offset, limit, int(total or 0))


def ordered(query: Select[Any], dialect: str, metric: SearcherMetric,
            order: TrialOrder) -> Select[Any]:
    """``query`` (over trials) sorted by ``order``, then by id; trials without a value of
    the searcher metric sort last either way."""
    descending = order.is_descending(metric)
    if order.key == METRIC_KEY:
        value = metric_value(dialect, metric)
        if value is None:
            return query.order_by(Trial.id)
        return query.order_by(value.is_(None), value.desc() if descending else value.asc(),
                              Trial.id)
    column = {"id": Trial.id, "state": Trial.state, "steps": Trial.steps_completed}[order.key]
    return query.order_by(column.desc() if descending else column.asc(), Trial.id)


def metric_value(dialect: str, metric: SearcherMetric) -> ColumnElement[Any] | None:
    """SQL: the searcher metric's value in the trial's best validation, NULL where it is
    absent or not a JSON number (as :meth:`SearcherMetric.value_in`); None without a metric.

    SQLite's JSON paths cannot quote a ``"``, so such a name has no value there.
    """
    if metric.name is None:
        return None
    if dialect == "postgresql":
        element = type_coerce(Trial.best_validation, JSONB)[("metrics", metric.name)]
        return case((func.jsonb_typeof(element) == "number", cast(element.astext, Float)))
    if '"' in metric.name:
        return None
    path = f'$.metrics."{metric.name}"'
    return case((func.json_type(Trial.best_validation, path).in_(("integer", "real")),
                 func.json_extract(Trial.best_validation, path)))


def state_counts(session: Session, exp_id: int) -> dict[str, int]:
    """How many trials the experiment has in each state (states with none left out)."""
    rows = session.execute(select(Trial.state, func.count()).where(Trial.experiment_id == exp_id)
                           .group_by(Trial.state))
    return {str(state): int(count) for state, count in rows}


def best_trial_id(session: Session, exp_id: int, metric: SearcherMetric) -> int | None:
    """The trial with the best value of the searcher metric; ties to the lowest id."""
    value = metric_value(session.get_bind().dialect.name, metric)
    if value is None:
        return None
    best = value.asc() if metric.smaller_is_better else value.desc()
    found = session.scalar(select(Trial.id).where(Trial.experiment_id == exp_id,
                                                  value.is_not(None))
                           .order_by(best, Trial.id).limit(1))
    return None if found is None else int(found)


def order_values(order: TrialOrder) -> dict[str, Any]:
    """``sortBy``/``orderBy`` query values for ``order`` (a default direction left out)."""
    values: dict[str, Any] = {"sortBy": order.key}
    if order.descending is not None:
        values["orderBy"] = "desc" if order.descending else "asc"
    return values
