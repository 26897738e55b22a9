"""``/``: the experiments, filtered and paginated on the server, refreshed live.

The rows come from :mod:`hpcdet.master.experiments.experiment_list`, as
``GET /api/v1/experiments``'s
do, so the page and the API agree; ``static/experiments.js`` then polls that endpoint with
the same filters, offset and limit. Query: ``state``, ``owner``, ``label``, ``archived``,
``page`` (1-based) and ``per_page`` (default 50, at most 500). A bad value is a 400 page
naming the parameter and what is allowed, with the form kept.
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
    BadParameter,
    ListFilters,
    Listing,
    filters_from,
    list_experiments,
    wants_archived,
)
from hpcdet.master.models import Experiment
from hpcdet.master.security.authz import visible
from hpcdet.master.web import bp
from hpcdet.master.web.formatting import number_text, percent, poll_seconds, time_text
from hpcdet.master.web.identity import page_user

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 500
PER_PAGE_CHOICES = (20, 50, 100, 200, 500)
NO_EXPERIMENTS = "No experiments yet: det experiment create CONFIG CONTEXT"
NONE_MATCH = "No experiments match these filters."


@dataclass(frozen=True)
class PageArgs:
    """The page's validated query: filters and which page of how many rows."""

    filters: ListFilters
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
                               visible=seen)
    return render_template("index.html", page="experiments", errors=[], form=_form(args),
                           experiments=listing.experiments, pager=pager(args, listing),
                           api_url=api_url(args), offset=args.offset,
                           poll_seconds=poll_seconds(),
                           empty_text=_empty_text(args), **_helpers()), 200


def read_args(args: Mapping[str, str]) -> tuple[PageArgs | None, list[str]]:
    """The page's query, or None and one message per bad parameter."""
    parsers: dict[str, Callable[[Mapping[str, str]], Any]] = {
        "filters": filters_from, "page": _page, "per_page": _per_page}
    values: dict[str, Any] = {}
    errors: list[str] = []
    for name, parse in parsers.items():
        try:
            values[name] = parse(args)
        except BadParameter as exc:
            errors.append(str(exc))
    return (None, errors) if errors else (PageArgs(**values), [])


def _page(args: Mapping[str, str]) -> int:
    return whole_number("page", args.get("page"), 1, 1, None)


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
              "archived": "true" if filters.archived else None, **more}
    return {key: value for key, value in values.items() if value is not None}


def query_args(args: PageArgs, page: int) -> dict[str, Any]:
    """The page's query string values for ``page``, defaults left out (short links)."""
    return filter_values(
        args.filters, per_page=args.per_page if args.per_page != DEFAULT_PER_PAGE else None,
        page=page if page != 1 else None)


def api_url(args: PageArgs) -> str:
    """``GET /api/v1/experiments`` for the same rows, which the script polls."""
    return url_for("api.list_experiments",
                   **filter_values(args.filters, offset=args.offset, limit=args.per_page))


def pager(args: PageArgs, listing: Listing) -> dict[str, Any]:
    """The range text and the Previous/Next links (None where there is no such page).

    Past the end, Previous goes to the last page that has rows.
    """
    previous = min(args.page - 1, max(1, math.ceil(listing.total / args.per_page)))
    return {"text": range_text(args.offset, len(listing.experiments), listing.total),
            "previous": (url_for("web.index", **query_args(args, previous))
                         if args.page > 1 else None),
            "next": (url_for("web.index", **query_args(args, args.page + 1))
                     if args.offset + args.per_page < listing.total else None)}


def range_text(offset: int, shown: int, total: int) -> str:
    """``Showing 51–100 of 1,000``; experiments.js says the same (keep them alike)."""
    if total == 0:
        return "No experiments."
    if shown == 0:
        return f"No experiments on this page; {total:,} in all."
    return f"Showing {offset + 1:,}–{offset + shown:,} of {total:,}"


def _empty_text(args: PageArgs) -> str:
    f = args.filters
    filtered = f.state or f.owner or f.label or args.page > 1
    return NONE_MATCH if filtered else NO_EXPERIMENTS


def _form(args: PageArgs) -> dict[str, Any]:
    f = args.filters
    return {"state": f.state or "", "owner": f.owner or "", "label": f.label or "",
            "archived": f.archived, "per_page": str(args.per_page)}


def _raw_form(args: Mapping[str, str]) -> dict[str, Any]:
    """The values as typed, to show them again next to what is wrong with them."""
    state = (args.get("state") or "").strip().upper()
    return {"state": state if state in EXPERIMENT_STATES else "",
            "owner": args.get("owner") or "", "label": args.get("label") or "",
            "archived": wants_archived(args.get("archived")),
            "per_page": args.get("per_page") or str(DEFAULT_PER_PAGE)}


def _helpers() -> dict[str, Any]:
    return {"states": EXPERIMENT_STATES, "per_page_choices": PER_PAGE_CHOICES,
            "time_text": time_text, "number_text": number_text, "percent": percent,
            "label_href": label_href(url_for("web.index"))}


def label_href(base: str) -> Callable[[str], str]:
    """``/?label=L`` links; built without a url_for per label (500 rows have many)."""
    def href(label: str) -> str:
        return f"{base}?{urlencode({'label': label})}"
    return href
