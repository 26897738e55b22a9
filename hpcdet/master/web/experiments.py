"""``/``: the experiments, filtered and paginated on the server, refreshed live.

The rows come from :mod:`hpcdet.master.experiments.experiment_list`, as
``GET /api/v1/experiments``'s
do, so the page and the API agree; ``static/experiments.js`` then polls that endpoint with
the same filters, order, offset and limit, and keeps polling (an experiment submitted later
appears without a reload). Query: ``state``, ``owner``, ``label``, ``name`` (a part of the
name), ``archived``, ``sort`` (a column: id, name, state, owner, progress, start, end, best)
and ``order`` (asc/desc), ``page`` (1-based) and ``per_page`` (default 50, at most 500). A
bad value is a 400 page naming the parameter and what is allowed, with the form kept. Rows
the user may change have a checkbox for the batch actions (``static/experiments.js``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from flask import render_template, request, url_for

from hpcdet.master.api.common import db, settings
from hpcdet.master.experiments.experiment_list import (
    EXPERIMENT_STATES,
    SORT_KEYS,
    BadParameter,
    ListFilters,
    Listing,
    ListOrder,
    filters_from,
    list_experiments,
    order_from,
    wants_archived,
)
from hpcdet.master.models import Experiment
from hpcdet.master.security.authz import ANONYMOUS, changing_workspaces, is_admin, visible
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import number_text, percent, poll_seconds, state_word, time_text
from hpcdet.master.web.identity import page_user

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 500
PER_PAGE_CHOICES = (20, 50, 100, 200, 500)
MAX_PAGE = 1_000_000  # times MAX_PER_PAGE stays within the API's offset limit
# The sortable columns in table order: (sort key, header text).
SORT_HEADERS = (("id", "ID"), ("name", "Name"), ("state", "State"), ("owner", "Owner"),
                ("progress", "Progress"), ("best", "Best metric"))
NO_EXPERIMENTS = "No experiments yet: det experiment create CONFIG CONTEXT"
NONE_MATCH = "No experiments match these filters."


@dataclass(frozen=True)
class PageArgs:
    """The page's validated query: filters and which page of how many rows."""

    filters: ListFilters
    order: ListOrder
    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


@bp.get("/")
def index() -> tuple[str, int]:
    """One page of experiments; 400 (form kept, no table) for a bad query parameter."""
    args, errors = read_args(request.args)
    if args is None:
        return render_template("index.html", page="experiments", errors=errors,
                               form=_raw_form(request.args), **_helpers()), 400
    seen = visible(settings(), page_user(), Experiment.owner, Experiment.workspace_id)
    listing = list_experiments(db(), args.filters, offset=args.offset, limit=args.per_page,
                               visible=seen, order=args.order)
    changer = modify_rule()
    return render_template("index.html", page="experiments", errors=[], form=_form(args),
                           experiments=listing.experiments, pager=pager(args, listing),
                           api_url=api_url(args), offset=args.offset,
                           poll_seconds=poll_seconds(), sort_links=sort_links(args),
                           modify_rule=changer, may_change=may_change(changer),
                           empty_text=_empty_text(args), **_helpers()), 200


def modify_rule() -> dict[str, Any]:
    """Whom the page's user may change experiments of, for the batch checkboxes (the rule
    of :func:`hpcdet.master.security.authz.access`, embedded for experiments.js too)."""
    actor = page_user()
    admin = is_admin(settings(), actor)
    workspaces = [] if admin else changing_workspaces(db(), actor)
    return {"actor": actor, "admin": admin, "workspaces": workspaces}


def may_change(rule: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """Whether the page's user may change an experiment (its JSON shape), by ``rule``."""
    def check(exp: Mapping[str, Any]) -> bool:
        return bool(rule["admin"] or exp["owner"] in (rule["actor"], ANONYMOUS)
                    or exp.get("workspace_id") in rule["workspaces"])
    return check


def read_args(args: Mapping[str, str]) -> tuple[PageArgs | None, list[str]]:
    """The page's query, or None and one message per bad parameter."""
    parsers: dict[str, Callable[[Mapping[str, str]], Any]] = {
        "filters": filters_from, "order": order_from, "page": _page, "per_page": _per_page}
    values: dict[str, Any] = {}
    errors: list[str] = []
    for name, parse in parsers.items():
        try:
            values[name] = parse(args)
        except BadParameter as exc:
            errors.append(_in_words(exc, args))
    return (None, errors) if errors else (PageArgs(**values), [])


def _in_words(exc: BadParameter, args: Mapping[str, str]) -> str:
    """The page's words for a bad parameter: an unknown state names the states as the
    filter shows them ("Active", "Stopping (error)"), not the API's names."""
    if exc.param != "state":
        return str(exc)
    words = ", ".join(state_word(state) for state in EXPERIMENT_STATES)
    return f"state: there is no experiment state {args.get('state')!r}; choose one of {words}"


def _page(args: Mapping[str, str]) -> int:
    return whole_number("page", args.get("page"), 1, 1, MAX_PAGE)


def _per_page(args: Mapping[str, str]) -> int:
    return whole_number("per_page", args.get("per_page"), DEFAULT_PER_PAGE, 1, MAX_PER_PAGE)


def whole_number(param: str, raw: str | None, default: int, lo: int, hi: int | None) -> int:
    """``raw`` as an integer in ``lo..hi`` (no ``hi``: unbounded); empty gives ``default``."""
    if raw is None or raw.strip() == "":
        return default
    allowed = f"a whole number from {lo} to {hi}" if hi else f"a whole number, {lo} or more"
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < lo or (hi is not None and value > hi):
        raise BadParameter(param, f"must be {allowed} (got {raw!r})")
    return value


def filter_values(filters: ListFilters, **more: Any) -> dict[str, Any]:
    """The filters (and ``more``) as query string values, those not given left out."""
    values = {"state": filters.state, "owner": filters.owner, "label": filters.label,
              "name": filters.name, "archived": "true" if filters.archived else None, **more}
    return {key: value for key, value in values.items() if value is not None}


def query_args(args: PageArgs, page: int) -> dict[str, Any]:
    """The page's query string values for ``page``, defaults left out (short links)."""
    return filter_values(
        args.filters, **order_values(args.order),
        per_page=args.per_page if args.per_page != DEFAULT_PER_PAGE else None,
        page=page if page != 1 else None)


def order_values(order: ListOrder) -> dict[str, Any]:
    """``sort`` and ``order`` as query values; the default order (newest first) left out."""
    if order == ListOrder():
        return {}
    return {"sort": order.key, "order": "desc" if order.descending else "asc"}


def sort_links(args: PageArgs) -> dict[str, dict[str, Any]]:
    """Per sort key: the header's link (the first page, in the other direction when the
    column is the current one) and its ``aria-sort`` (None for the other columns)."""
    links: dict[str, dict[str, Any]] = {}
    for key in SORT_KEYS:
        current = args.order.key == key
        wanted = ListOrder(key, not args.order.descending) if current else \
            order_from({"sort": key})
        query = filter_values(args.filters, **order_values(wanted),
                              per_page=args.per_page if args.per_page != DEFAULT_PER_PAGE
                              else None)
        links[key] = {"href": url_for("web.index", **query),
                      "aria": (("descending" if args.order.descending else "ascending")
                               if current else None)}
    return links


def api_url(args: PageArgs) -> str:
    """``GET /api/v1/experiments`` for the same rows, which the script polls."""
    return url_for("api.list_experiments",
                   **filter_values(args.filters, **order_values(args.order),
                                   offset=args.offset, limit=args.per_page))


def pager(args: PageArgs, listing: Listing) -> dict[str, Any]:
    """The range text and the Previous/Next links (None where there is no such page).

    Past the end, Previous goes to the last page that has rows.
    """
    last = max(1, math.ceil(listing.total / args.per_page))
    previous = min(args.page - 1, last)
    past_end = args.page > last
    return {"text": range_text(args.offset, len(listing.experiments), listing.total),
            "previous": (url_for("web.index", **query_args(args, previous))
                         if args.page > 1 else None),
            "next": (url_for("web.index", **query_args(args, args.page + 1))
                     if args.offset + args.per_page < listing.total else None),
            # Past the end: say so and link to the last page that has rows.
            "past_end": past_end, "last_page": last,
            "last": url_for("web.index", **query_args(args, last)) if past_end else None}


def range_text(offset: int, shown: int, total: int) -> str:
    """``Showing 51–100 of 1,000``; experiments.js says the same (keep them alike)."""
    if total == 0:
        return "No experiments."
    if shown == 0:
        return f"This page is past the end: {total:,} experiment{'s' if total != 1 else ''} in all."
    return f"Showing {offset + 1:,}–{offset + shown:,} of {total:,}"


def _empty_text(args: PageArgs) -> str:
    f = args.filters
    filtered = f.state or f.owner or f.label or f.name or args.page > 1
    return NONE_MATCH if filtered else NO_EXPERIMENTS


def _form(args: PageArgs) -> dict[str, Any]:
    f = args.filters
    return {"state": f.state or "", "owner": f.owner or "", "label": f.label or "",
            "name": f.name or "", "archived": f.archived, "per_page": str(args.per_page),
            **order_values(args.order)}


def _raw_form(args: Mapping[str, str]) -> dict[str, Any]:
    """The values as typed, to show them again next to what is wrong with them."""
    state = (args.get("state") or "").strip().upper()
    return {"state": state if state in EXPERIMENT_STATES else "",
            "owner": args.get("owner") or "", "label": args.get("label") or "",
            "name": args.get("name") or "",
            "archived": wants_archived(args.get("archived")),
            "per_page": args.get("per_page") or str(DEFAULT_PER_PAGE)}


def _helpers() -> dict[str, Any]:
    return {"states": EXPERIMENT_STATES, "per_page_choices": PER_PAGE_CHOICES,
            "sort_headers": SORT_HEADERS,
            "time_text": time_text, "number_text": number_text, "percent": percent,
            "label_href": label_href(url_for("web.index"))}


def label_href(base: str) -> Callable[[str], str]:
    """``/?label=L`` links; built without a url_for per label (500 rows have many)."""
    def href(label: str) -> str:
        return f"{base}?{urlencode({'label': label})}"
    return href
