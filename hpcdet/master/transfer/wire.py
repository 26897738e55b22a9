"""Every Flask answer, shaped for the wire: ETag/304 for repeated reads, gzip for text.

- **Conditional reads.** A ``GET`` answered 200 with JSON or HTML gets a weak ETag (a hash
  of the body) and ``Cache-Control: private, no-cache``: the browser keeps it and asks
  again with ``If-None-Match``, and an unchanged answer goes back as a bodiless 304. That is
  what the pages' pollers (experiments list, trials, queue, nodes, a trial's logs) send every
  few seconds, with no change in the scripts: ``fetch`` revalidates through the browser's
  cache. The view still runs (the hash is of its body); what an unchanged poll saves is the
  bytes and the browser's work. A static file's ETag is its content hash.
- **Compression.** A body of :data:`MIN_BYTES` or more of HTML, JSON, JavaScript, CSS or
  plain text is gzipped when the request's ``Accept-Encoding`` takes gzip, with
  ``Vary: Accept-Encoding``. Never a streamed answer (a followed log, a download: they go
  out as they are made, and a gzip stream would hold lines back), never one that already
  has a ``Content-Encoding``, never a partial (206) one, and never a page that holds a
  secret (the web session's CSRF token: :func:`keep_uncompressed`), since a compressed
  page that also echoes what a request sent (a search) leaks the secret through its length
  (BREACH). Static files are sent pre-gzipped (:mod:`hpcdet.master.transfer.static_urls`).

gzip only, not brotli: brotli would take a compiled package into the master's
dependencies for about a fifth fewer bytes than gzip on these pages, and gzip is in the
standard library.
"""

from __future__ import annotations

import gzip
import hashlib

from flask import Flask, Response, g, request

from hpcdet.master.transfer import static_urls

MIN_BYTES = 1024
COMPRESSIBLE = frozenset({"text/html", "application/json", "text/javascript",
                          "application/javascript", "text/css", "text/plain"})
CONDITIONAL = frozenset({"text/html", "application/json"})
# Level 6 (zlib's default): within a few per cent of 9's size at about half its CPU.
LEVEL = 6


SECRET_FLAG = "hpcdet_secret_in_body"


def keep_uncompressed() -> None:
    """The answer being made holds a secret: send it uncompressed (module doc)."""
    setattr(g, SECRET_FLAG, True)


def install(app: Flask) -> None:
    """Shape every answer the Flask app gives (module doc)."""
    app.after_request(shape)


def shape(response: Response) -> Response:
    """ETag/304 first (on the body as the view made it), then compression."""
    static = _static_file()
    if request.method in ("GET", "HEAD") and response.status_code == 200:
        if static is not None:
            _static_cache(response, static)
        elif not response.is_streamed and response.mimetype in CONDITIONAL:
            response.set_etag(_digest(response.get_data()), weak=True)
            response.headers.setdefault("Cache-Control", "private, no-cache")
        if response.headers.get("ETag"):
            response.make_conditional(request.environ)
            if response.status_code == 304:
                _replace_body(response, b"")
    if response.status_code == 200 and response.mimetype in COMPRESSIBLE:
        response.vary.add("Accept-Encoding")
        if _accepts_gzip():
            _compress(response, static)
    return response


def _static_file() -> static_urls.StaticFile | None:
    if request.endpoint != "static":
        return None
    return static_urls.lookup((request.view_args or {}).get("filename", ""))


def _static_cache(response: Response, static: static_urls.StaticFile) -> None:
    """A fingerprinted URL is the file's bytes for good; any other keeps revalidating
    against the content hash (one ETag whether or not the body is gzipped)."""
    response.headers["ETag"] = f'W/"{static.digest}"'
    response.headers.pop("Last-Modified", None)
    if request.args.get("v") == static.digest:
        response.headers["Cache-Control"] = static_urls.IMMUTABLE


def _accepts_gzip() -> bool:
    return request.accept_encodings["gzip"] > 0


def _compress(response: Response, static: static_urls.StaticFile | None) -> None:
    if response.headers.get("Content-Encoding") or g.get(SECRET_FLAG):
        return  # the view compressed it itself (never twice), or it holds a secret
    if static is not None:
        body = static.gzipped
    else:
        if response.is_streamed or response.direct_passthrough:
            return
        data = response.get_data()
        if len(data) < MIN_BYTES:
            return
        body = gzip.compress(data, compresslevel=LEVEL, mtime=0)
    _replace_body(response, body)
    response.headers["Content-Encoding"] = "gzip"
    response.headers.pop("Accept-Ranges", None)


def _replace_body(response: Response, body: bytes) -> None:
    """Send ``body`` instead, closing the file a static answer had open."""
    old = response.response
    if hasattr(old, "close"):
        old.close()
    response.direct_passthrough = False
    response.set_data(body)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()
