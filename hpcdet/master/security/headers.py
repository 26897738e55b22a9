"""Response headers that keep a browser from misusing what the master serves.

- Every answer: ``X-Content-Type-Options: nosniff`` (a trial's log downloaded as text, or a
  JSON answer holding a user's strings, is never run as a script or page).
- Every HTML page: a Content-Security-Policy that runs only the master's own scripts
  (``script-src 'self'``: an injected ``<script>`` or ``onerror=`` would not run even if
  escaping failed somewhere), fetches only from the master, and lets no other site frame the
  page (``frame-ancestors 'none'``, and ``X-Frame-Options: DENY`` for older browsers: a framed
  page's buttons could be clicked by a hidden overlay); and ``Referrer-Policy: same-origin``
  (a page's address, with its filters, does not leave the master).

Inline ``style`` attributes stay allowed (the progress bars' widths); the pages have no
inline scripts (their data is in ``<script type="application/json">`` blocks, which are not
run). The proxied services under ``/proxy/`` are served by the ASGI app, not Flask: their
own headers reach the browser unchanged.
"""

from __future__ import annotations

from flask import Flask, Response

PAGE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
               "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
               "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def install(app: Flask) -> None:
    """Add the headers to every answer the Flask app gives."""
    app.after_request(_add_headers)


def _add_headers(response: Response) -> Response:
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    if response.mimetype == "text/html":
        response.headers.setdefault("Content-Security-Policy", PAGE_POLICY)
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
    return response
