"""The experiments list that ``GET /api/v1/experiments`` and the ``/`` page both show.

One module builds it so that the page and the API never disagree: the same filters, the same
order (newest first) and the same ``best_metric`` per experiment. A listing costs a constant
number of SQL statements whatever the number of experiments: the count, the page of
experiments and, when the page is not empty, one query for all of its trials.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, exists, func, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session, defer

from hpcdet.master.experiments import serialize
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.states import EXPERIMENT_TRANSITIONS, State

# In the order of the lifecycle (State's order), for the page's select and error messages.
EXPERIMENT_STATES: tuple[str, ...] = tuple(
    s.value for s in State if s in EXPERIMENT_TRANSITIONS)
ARCHIVED_YES = frozenset({"true", "1", "on", "yes"})


class BadParameter(ValueError):
    """A query parameter the listing cannot use; ``str()`` names it and what is allowed."""

    def __init__(self, param: str, problem: str) -> None:
        super().__init__(f"{param}: {problem}")
        self.param = param


@dataclass(frozen=True)
class ListFilters:
    """Which experiments to list: all given filters must hold."""

    state: str | None = None
    owner: str | None = None
    label: str | None = None
    archived: bool = False  # True: archived ones too


@dataclass(frozen=True)
class Listing:
    """One page of experiments (JSON shape) and how many match in all."""

    total: int
    experiments: list[dict[str, Any]]


def parse_state(raw: str | None) -> str | None:
    """An experiment state in any case, or None for empty; BadParameter names the allowed."""
    if not raw:
        return None
    state = raw.strip().upper()
    if state not in EXPERIMENT_STATES:
        raise BadParameter("state", f"unknown experiment state {raw!r} "
                                    f"(allowed: {', '.join(EXPERIMENT_STATES)})")
    return state


def wants_archived(raw: str | None) -> bool:
    """Whether ``archived=...`` asks for archived experiments too (true/1/on/yes)."""
    return (raw or "").strip().lower() in ARCHIVED_YES


def filters_from(args: Mapping[str, str]) -> ListFilters:
    """The filters in query arguments (a mapping of ``state``, ``owner``, ``label``...)."""
    return ListFilters(state=parse_state(args.get("state")),
                       owner=(args.get("owner") or "").strip() or None,
                       label=(args.get("label") or "").strip() or None,
                       archived=wants_archived(args.get("archived")))


def list_experiments(session: Session, filters: ListFilters, *, offset: int, limit: int,
                     visible: Sequence[ColumnElement[bool]] = ()) -> Listing:
    """Experiments matching ``filters``, newest first, ``limit`` of them from ``offset``.

    ``visible``: conditions selecting the experiments the caller may see
    (:func:`hpcdet.master.security.authz.visible`); the others are neither listed nor counted.
    """
    conditions = [*visible, *_conditions(session, filters)]
    total = session.scalar(select(func.count(Experiment.id)).where(*conditions)) or 0
    rows = session.execute(
        # Of the config only its searcher section (the metric) is read; the rest, the
        # original text and the search state are large and unused here: raise if touched.
        select(Experiment, Experiment.config["searcher"]).where(*conditions)
        .options(*(defer(column, raiseload=True) for column in (
            Experiment.config, Experiment.original_config, Experiment.searcher_state)))
        .order_by(Experiment.id.desc()).offset(offset).limit(limit)).all()
    trials = _trial_validations(session, [e.id for e, _ in rows])
    return Listing(total, [_entry(e, searcher, trials.get(e.id, [])) for e, searcher in rows])


def _conditions(session: Session, filters: ListFilters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.state:
        conditions.append(Experiment.state == filters.state)
    if filters.owner:
        conditions.append(Experiment.owner == filters.owner)
    if filters.label:
        conditions.append(has_label(session, filters.label))
    if not filters.archived:
        conditions.append(Experiment.archived.is_(False))
    return conditions


def has_label(session: Session, label: str) -> ColumnElement[bool]:
    """SQL: the experiment's ``labels`` list has ``label`` as one of its elements.

    JSON has no portable "array contains" operator: PostgreSQL's JSONB has ``@>`` (which its
    GIN indexes serve), SQLite has the ``json_each`` table function.
    """
    if session.get_bind().dialect.name == "postgresql":
        return type_coerce(Experiment.labels, JSONB).contains([label])
    element = func.json_each(Experiment.labels).table_valued("value")
    return exists(select(1).select_from(element).where(element.c.value == label))


def _trial_validations(session: Session,
                       exp_ids: Sequence[int]) -> dict[int, list[tuple[int, Any]]]:
    """``(trial id, best_validation)`` of every trial of the experiments, in one query."""
    if not exp_ids:
        return {}
    rows = session.execute(select(Trial.experiment_id, Trial.id, Trial.best_validation)
                           .where(Trial.experiment_id.in_(exp_ids)))
    out: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    for exp_id, trial_id, best in rows:
        out[exp_id].append((trial_id, best))
    return out


def _entry(exp: Experiment, searcher: Any, trials: list[tuple[int, Any]]) -> dict[str, Any]:
    body = serialize.experiment(exp, len(trials))
    body["best_metric"] = best_metric(SearcherMetric.of({"searcher": searcher}), trials)
    return body


def best_metric(metric: SearcherMetric,
                trials: Iterable[tuple[int, Any]]) -> dict[str, Any] | None:
    """The best value of the searcher metric over the trials' best validations, or None.

    ``trials`` are ``(trial id, best_validation)``; ties go to the lowest trial id, as in
    :func:`hpcdet.master.experiments.serialize.best_trial_id` (both use
    :meth:`SearcherMetric.best_of`).
    """
    best = metric.best_of(trials)
    if metric.name is None or best is None:
        return None
    trial_id, value = best
    return {"name": metric.name, "value": value, "trial_id": trial_id,
            "smaller_is_better": metric.smaller_is_better}
