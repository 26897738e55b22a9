"""The one JSON error shape every API route answers with: every error raised under ``/api``
(a refusal of :mod:`hpcdet.master.errors` with its status from :mod:`.refusals`, Flask's
own, an unexpected one) is answered here; a page view's, as an HTML page.

The pages are a room above the API, so the HTML renderer is handed in by the app factory
(:class:`ErrorPages`) rather than imported from here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from hpcdet.dispatcher.transport import TransportUnavailableError
from hpcdet.errors import ConfigError, ValidationError
from hpcdet.master.api.refusals import HTTP_STATUS, error_body, http_status, refusal_body
from hpcdet.master.errors import DomainError

__all__ = ["HTTP_STATUS", "ErrorPages", "error_body", "http_status", "refusal_body",
           "register_error_handlers"]


@dataclass(frozen=True)
class ErrorPages:
    """How a browser page's error is answered: whether the request is a page's, and its page."""

    wants_page: Callable[[], bool]
    page: Callable[[int, str | None], Response]


def _respond(status: int, code: str, message: str, details: Sequence[str] = ()) -> Response:
    response = jsonify(error_body(status, code, message, details))
    response.status_code = status
    return response


_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 409: "conflict", 413: "payload_too_large"}


def _raised_by_a_view() -> bool:
    """Whether a route matched (so its own code raised the 404), not the URL map."""
    return request.url_rule is not None


def register_error_handlers(app: Flask, pages: ErrorPages) -> None:
    """Route every error raised under ``/api`` into the common shape; a page's, to ``pages``."""

    @app.errorhandler(DomainError)
    def _refused(exc: DomainError) -> Response:
        status = http_status(exc)
        if pages.wants_page():  # a page view that raised the refusal
            return pages.page(status, exc.message)
        return _respond(status, exc.code, exc.message, exc.details)

    @app.errorhandler(ConfigError)
    def _config_error(exc: ConfigError) -> Response:
        return _respond(400, "invalid_config", exc.title, exc.errors)

    @app.errorhandler(ValidationError)
    def _validation_error(exc: ValidationError) -> Response:
        return _respond(400, "bad_request", str(exc))

    @app.errorhandler(TransportUnavailableError)
    def _cluster_unreachable(exc: TransportUnavailableError) -> Response:
        # The login node (resource_manager.transport: ssh) is away: try again later.
        return _respond(503, "cluster_unreachable", str(exc))

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        if pages.wants_page():  # a browser page: an HTML page, the status kept
            page = pages.page(status, None if status in (404, 405) else exc.description)
            for name, value in exc.get_headers():
                if name.lower() != "content-type":
                    page.headers[name] = value
            return page
        message = exc.description or exc.name
        if status == 404 and request.path.startswith("/api/") and not _raised_by_a_view():
            message = (f"no such route: {request.method} {request.path} (every route: "
                       "GET /api/v1/openapi.json)")
        response = _respond(status, _HTTP_CODES.get(status, "error"), message)
        # Headers the status needs (405's Allow, RFC 9110), in the common body's response.
        for name, value in exc.get_headers():
            if name.lower() != "content-type":
                response.headers[name] = value
        return response

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        app.logger.exception("unhandled error")
        if pages.wants_page():
            return pages.page(500, None)
        return _respond(500, "internal", f"internal error: {type(exc).__name__}")
