"""The experiment page's trials table: one page of trials, sorted, with a pager.

A search of 10,000 trials shows ``per_page`` (100) of them, by default the best searcher
metric first (trial id order without a metric). Query parameters: ``sort`` (id, state,
best_validation_metric, steps), ``order`` (asc, desc), ``page`` (from 1) and ``per_page``
(1 to 1000). A bad one makes the page a 400 that names it, with the default page shown.
The script polls the same page of ``GET /api/v1/experiments/<id>/trials``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import url_for

from hpcdet.master.experiments import trial_pages
from hpcdet.master.experiments.experiment_list import BadParameter
from hpcdet.master.experiments.trial_pages import METRIC_KEY, TrialOrder
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.web.experiments import whole_number

DEFAULT_PER_PAGE = 100
MAX_PAGE = 1_000_000


@dataclass(frozen=True)
class TrialsArgs:
    """The table's validated query: its order and which page of how many rows."""

    order: TrialOrder
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


def default_order(metric: SearcherMetric) -> TrialOrder:
    """Best searcher metric first; trial id order for a search without a metric."""
    return TrialOrder(METRIC_KEY) if metric.name else TrialOrder()


def trials_args(args: Mapping[str, str], metric: SearcherMetric
                ) -> tuple[TrialsArgs, list[str]]:
    """The table's query from the page's, or the default one and a message per bad value."""
    default = TrialsArgs(default_order(metric))
    errors: list[str] = []
    values: dict[str, Any] = {}
    try:
        values["order"] = trial_pages.order_from(args.get("sort"), args.get("order"),
                                                 default=default.order)
    except trial_pages.BadParameter as exc:
        errors.append(str(exc).replace("sortBy", "sort").replace("orderBy", "order"))
    for name, hi in (("page", MAX_PAGE), ("per_page", trial_pages.MAX_LIMIT)):
        try:
            values[name] = whole_number(name, args.get(name), getattr(default, name), 1, hi)
        except BadParameter as exc:
            errors.append(str(exc))
    return (default, errors) if errors else (TrialsArgs(**values), [])


def query_values(args: TrialsArgs, metric: SearcherMetric, *, page: int) -> dict[str, Any]:
    """The page's query string for ``page`` of the same table, defaults left out."""
    values: dict[str, Any] = {}
    if args.order != default_order(metric):
        values["sort"] = args.order.key
        if args.order.descending is not None:
            values["order"] = "desc" if args.order.descending else "asc"
    if args.per_page != DEFAULT_PER_PAGE:
        values["per_page"] = args.per_page
    if page != 1:
        values["page"] = page
    return values


def sort_links(exp_id: int, args: TrialsArgs,
               metric: SearcherMetric) -> dict[str, dict[str, Any]]:
    """Per sort key: the header's link (page 1; the other direction when it is the current
    key) and its ``aria-sort`` (None for the other columns)."""
    links: dict[str, dict[str, Any]] = {}
    current_down = args.order.is_descending(metric)
    for key in ("id", "state", "steps", METRIC_KEY):
        current = args.order.key == key
        wanted = TrialOrder(key, not current_down) if current else TrialOrder(key)
        query = query_values(TrialsArgs(wanted, 1, args.per_page), metric, page=1)
        links[key] = {"href": url_for("web.experiment", exp_id=exp_id, **query),
                      "aria": ("descending" if current_down else "ascending") if current
                      else None}
    return links


def pager(exp_id: int, args: TrialsArgs, metric: SearcherMetric,
          pagination: Mapping[str, int]) -> dict[str, Any]:
    """The range text and the Previous/Next links (None where there is no such page), from
    the trial list's ``pagination``."""
    total, shown = pagination["total"], pagination["endIndex"] - pagination["startIndex"]
    last = max(1, math.ceil(total / args.per_page))

    def link(number: int) -> str:
        return url_for("web.experiment", exp_id=exp_id,
                       **query_values(args, metric, page=number))

    return {"text": range_text(args.offset, shown, total),
            "previous": link(min(args.page - 1, last)) if args.page > 1 else None,
            "next": link(args.page + 1) if args.offset + args.per_page < total else None,
            "last": link(last) if args.page > last else None, "last_page": last}


def range_text(offset: int, shown: int, total: int) -> str:
    """``Showing trials 1–100 of 10,000``; experiment.js says the same (keep them alike)."""
    if total == 0:
        return "No trials yet."
    if shown == 0:
        return f"This page is past the end: {total:,} trial{'s' if total != 1 else ''} in all."
    return f"Showing trials {offset + 1:,}–{offset + shown:,} of {total:,}"


def api_url(exp_id: int, args: TrialsArgs) -> str:
    """``GET /api/v1/experiments/<id>/trials`` for the same rows, which the script polls."""
    return url_for("api.list_trials", exp_id=exp_id, **trial_pages.order_values(args.order),
                   offset=args.offset, limit=args.per_page)
