"""The experiments list that ``GET /api/v1/experiments`` and the ``/`` page both show.

One module builds it so that the page and the API never disagree: the same filters, the same
order (newest first) and the same ``best_metric`` per experiment. A listing costs a constant
number of SQL statements whatever the number of experiments: the count, the page of
experiments and, when the page is not empty, one query for all of its trials.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Float, cast, exists, func, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session, defer

from hpcdet.master.models import Experiment, Trial
from hpcdet.master.reports import serialize
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
    name: str | None = None  # a part of the name, any case


# ``sort=`` keys: the list's columns. ``best`` is the searcher metric's best value, which is
# computed per experiment from its trials (not a column), so it is ordered in Python.
SORT_COLUMNS: Mapping[str, Any] = {
    "id": Experiment.id, "name": Experiment.name, "state": Experiment.state,
    "owner": Experiment.owner, "progress": Experiment.progress,
    "start": Experiment.created_at, "end": Experiment.ended_at}
SORT_KEYS: tuple[str, ...] = (*SORT_COLUMNS, "best")


@dataclass(frozen=True)
class ListOrder:
    """How to order the list: by a ``SORT_KEYS`` key, descending or not (newest first)."""

    key: str = "id"
    descending: bool = True


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
                       archived=wants_archived(args.get("archived")),
                       name=(args.get("name") or "").strip() or None)


def order_from(args: Mapping[str, str]) -> ListOrder:
    """``sort`` (a SORT_KEYS key) and ``order`` (``asc``/``desc``; default: ``desc`` for id,
    start, end, progress and best, ``asc`` for the words) of query arguments."""
    key = (args.get("sort") or "id").strip().lower()
    if key not in SORT_KEYS:
        raise BadParameter("sort", f"unknown column {args.get('sort')!r} "
                                   f"(allowed: {', '.join(SORT_KEYS)})")
    raw = (args.get("order") or "").strip().lower()
    if raw not in ("", "asc", "desc"):
        raise BadParameter("order", f"must be asc or desc (got {args.get('order')!r})")
    descending = raw == "desc" if raw else key not in ("name", "state", "owner")
    return ListOrder(key, descending)


def list_experiments(session: Session, filters: ListFilters, *, offset: int, limit: int,
                     visible: Sequence[ColumnElement[bool]] = (),
                     order: ListOrder = ListOrder()) -> Listing:
    """Experiments matching ``filters`` in ``order`` (newest first), ``limit`` of them from
    ``offset``.

    ``visible``: conditions selecting the experiments the caller may see
    (:func:`hpcdet.master.security.authz.visible`); the others are neither listed nor counted.
    """
    conditions = [*visible, *_conditions(session, filters)]
    total = session.scalar(select(func.count(Experiment.id)).where(*conditions)) or 0
    query = (
        # Of the config only its searcher section (the metric) is read; the rest, the
        # original text and the search state are large and unused here: raise if touched.
        select(Experiment, Experiment.config["searcher"])
        .options(*(defer(column, raiseload=True) for column in (
            Experiment.config, Experiment.original_config, Experiment.searcher_state))))
    if order.key == "best":
        ids = best_ordered_ids(session, conditions, order.descending)[offset:offset + limit]
        found = {e.id: (e, searcher) for e, searcher in
                 session.execute(query.where(Experiment.id.in_(ids))).all()}
        rows = [found[i] for i in ids if i in found]
    else:
        rows = [(e, searcher) for e, searcher in session.execute(
            query.where(*conditions).order_by(*_sql_order(order)).offset(offset).limit(limit))]
    trials = _trial_validations(session, [e.id for e, _ in rows])
    return Listing(total, [_entry(e, searcher, trials.get(e.id, [])) for e, searcher in rows])


def _sql_order(order: ListOrder) -> list[Any]:
    """ORDER BY for a column key; empty ends last either way, ties newest first."""
    column = SORT_COLUMNS[order.key]
    first = (column.desc() if order.descending else column.asc()).nulls_last()
    return [first] if order.key == "id" else [first, Experiment.id.desc()]


def best_ordered_ids(session: Session, conditions: Sequence[ColumnElement[bool]],
                     descending: bool) -> list[int]:
    """The matching experiments' ids by their best searcher-metric value; those without one
    last, ties newest first. Reads only ids, searcher sections and trials' best validations.
    """
    rows = session.execute(select(Experiment.id, Experiment.config["searcher"])
                           .where(*conditions)).all()
    if session.get_bind().dialect.name == "postgresql":
        bests = _best_values_in_sql(session, dict(rows))
    else:
        trials = _trial_validations(session, [exp_id for exp_id, _ in rows])
        bests = {}
        for exp_id, searcher in rows:
            best = best_metric(SearcherMetric.of({"searcher": searcher}),
                               trials.get(exp_id, []))
            if best is not None:
                bests[exp_id] = best["value"]
    valued: list[tuple[float, int]] = []
    unvalued: list[int] = []
    for exp_id, _ in rows:
        value = bests.get(exp_id)
        if isinstance(value, int | float):
            valued.append((float(value), exp_id))
        else:
            unvalued.append(exp_id)
    # Larger values first when descending, and always newer (larger id) first among equals.
    valued.sort(key=lambda pair: (-pair[0] if descending else pair[0], -pair[1]))
    return [exp_id for _, exp_id in valued] + sorted(unvalued, reverse=True)


def _best_values_in_sql(session: Session, searchers: Mapping[int, Any]) -> dict[int, float]:
    """PostgreSQL: each experiment's best searcher-metric value over its trials' best
    validations, aggregated in the database (only JSON numbers count, as in
    :meth:`SearcherMetric.value_in`); one query per (metric, direction)."""
    groups: dict[SearcherMetric, list[int]] = defaultdict(list)
    for exp_id, searcher in searchers.items():
        metric = SearcherMetric.of({"searcher": searcher})
        if metric.name is not None:
            groups[metric].append(exp_id)
    out: dict[int, float] = {}
    for metric, exp_ids in groups.items():
        element = type_coerce(Trial.best_validation, JSONB)[("metrics", str(metric.name))]
        number = cast(element.astext, Float)
        best = (func.min if metric.smaller_is_better else func.max)(number).filter(
            func.jsonb_typeof(element) == "number")
        out |= {int(exp_id): float(value) for exp_id, value in session.execute(
            select(Trial.experiment_id, best).where(Trial.experiment_id.in_(exp_ids))
            .group_by(Trial.experiment_id)) if value is not None}
    return out


def _conditions(session: Session, filters: ListFilters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.name:
        pattern = "%" + re.sub(r"([\\%_])", r"\\\1", filters.name) + "%"
        conditions.append(Experiment.name.ilike(pattern, escape="\\"))
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
                       exp_ids: Iterable[int]) -> dict[int, list[tuple[int, Any]]]:
    """``(trial id, best_validation)`` of every trial of the experiments, in one query.

    Of each best validation only its ``metrics`` are read (``{"metrics": {...}}``): decoding
    whole best validations took most of a list's time at 10,000 trials
    (bench/metrics_scale.py). A JSON path into the value itself would lose true/false on
    SQLite (JSON_EXTRACT answers 1/0).
    """
    ids = list(exp_ids)
    if not ids:
        return {}
    rows = session.execute(select(Trial.experiment_id, Trial.id, Trial.best_validation["metrics"])
                           .where(Trial.experiment_id.in_(ids)))
    out: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    for exp_id, trial_id, metrics in rows:
        out[exp_id].append((trial_id, {"metrics": metrics}))
    return out


def _entry(exp: Experiment, searcher: Any, trials: list[tuple[int, Any]]) -> dict[str, Any]:
    body = serialize.experiment(exp, len(trials))
    body["best_metric"] = best_metric(SearcherMetric.of({"searcher": searcher}), trials)
    return body


def best_metric(metric: SearcherMetric,
                trials: Iterable[tuple[int, Any]]) -> dict[str, Any] | None:
    """The best value of the searcher metric over the trials' best validations, or None.

    ``trials`` are ``(trial id, best_validation)``; ties go to the lowest trial id, as in
    :func:`hpcdet.master.experiments.trial_pages.best_trial_id`.
    """
    best = metric.best_of(trials)
    if metric.name is None or best is None:
        return None
    trial_id, value = best
    return {"name": metric.name, "value": value, "trial_id": trial_id,
            "smaller_is_better": metric.smaller_is_better}
