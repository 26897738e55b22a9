"""What the master sends over the wire, and how little: compressed answers, fingerprinted
static files with long cache lifetimes, and ETag/304 for repeated reads (docs/performance.md,
"Page weight").

:func:`install` adds both to the Flask app. It is Flask's ``after_request``, not an ASGI
middleware, because the Flask app is where the pages and the API are answered and where a
response says whether it is streamed (a followed log, a download) or a static file; the
two routes the ASGI app answers itself are left alone on purpose: the proxy passes a
notebook's bytes as the notebook sent them, and the metric reports' fast path answers a
few bytes.
"""

from __future__ import annotations

from flask import Flask

from hpcdet.master.transfer import static_urls, wire


def install(app: Flask) -> None:
    """Fingerprint ``app``'s static files and shape every answer (module doc)."""
    static_urls.install(app)
    wire.install(app)
