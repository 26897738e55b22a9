"""Refuse a NUL character in a request's path or query before any route runs.

PostgreSQL's text types cannot hold U+0000; the database driver raises on any query
parameter that contains it, which a route would answer with 500 (``GET
/workspaces/a%00b``, ``?workspace=a%00b``). No name, id or filter hpcdet knows contains
one, so such a request is a 400 in the common error shape, on SQLite as on PostgreSQL.
JSON bodies are checked where they are parsed (:func:`hpcdet.master.api.common.json_body`).
"""

from __future__ import annotations

from flask import Flask, request

from hpcdet.master.errors import Invalid


def install(app: Flask) -> None:
    """Check every request's path and query string first."""
    app.before_request(_refuse_nul)


def _refuse_nul() -> None:
    if "\x00" in request.path:
        raise Invalid("bad_request", "the request path contains a NUL character (%00)")
    for name, value in request.args.items(multi=True):
        if "\x00" in name or "\x00" in value:
            shown = name.replace("\x00", "%00")
            raise Invalid("bad_request",
                          f"query parameter {shown}: contains a NUL character (%00)")
