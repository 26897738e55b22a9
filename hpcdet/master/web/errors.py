"""Errors in the browser are HTML pages in the site's layout, with the status code kept.

The API (everything under ``/api/``) answers JSON in the common error shape
(:mod:`hpcdet.master.api.errors`); every other path is a page, so an unknown path, a bad id
(``/experiments/abc``, an id beyond 64 bits) or an error a page view raises answers an HTML
page saying what went wrong and where to go instead.
"""

from __future__ import annotations

from flask import Response, render_template, request

from hpcdet.master.db import MAX_DB_INT

TITLES = {400: "Bad request", 401: "Sign-in needed", 403: "Not allowed", 404: "Not found",
          405: "Method not allowed", 409: "Conflict", 413: "Too large", 500: "Internal error",
          503: "Unavailable"}
# Pages whose path ends in an id: what a bad id there should have been.
ID_PAGES = {"/experiments/": "experiment", "/trials/": "trial"}


def wants_page() -> bool:
    """Whether the request is a browser page's (HTML errors), not the API's (JSON)."""
    return not request.path.startswith("/api/") and request.path != "/api"


def error_page(status: int, message: str | None = None) -> Response:
    """The HTML error page for ``status``; ``message`` says what was wrong (else a default)."""
    text = message or default_message(status)
    html = render_template("error.html", page=None, status=status,
                           title=TITLES.get(status, "Error"), message=text)
    return Response(html, status=status, mimetype="text/html")


def default_message(status: int) -> str:
    """What a status means on this site, with the path named for a 404."""
    if status == 404:
        for prefix, kind in ID_PAGES.items():
            if request.path.startswith(prefix):
                return (f"No {kind} at {request.path}: {kind} ids are whole numbers from 0 to "
                        f"{MAX_DB_INT}, and this one is not, or there is no such {kind}.")
        return f"There is no page at {request.path}."
    if status == 405:
        return f"{request.path} does not take {request.method} requests."
    if status >= 500:
        return "The master failed to answer this page; its log says why."
    return TITLES.get(status, "The request could not be answered.")
