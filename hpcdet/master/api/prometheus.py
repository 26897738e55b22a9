"""``GET /metrics``: the master's Prometheus metrics, for whom ``metrics.allow`` names.

Outside ``/api/v1``, where Prometheus looks by default. Refusals answer in the common error
shape: 404 when ``metrics.enabled`` is false, 401 without (valid) credentials, 403 for a
user who is not a cluster admin, 503 when the token file is unusable (named, with why).
"""

from __future__ import annotations

import hmac
from pathlib import Path

from flask import Blueprint, Response, jsonify

from hpcdet.master.api.auth import bearer_token, current_user
from hpcdet.master.api.common import db, settings
from hpcdet.master.api.refusals import http_status, refusal_body
from hpcdet.master.errors import (
    DomainError,
    Forbidden,
    NotFound,
    Unauthenticated,
    Unavailable,
)
from hpcdet.master.monitoring.exposition import CONTENT_TYPE, render
from hpcdet.master.security import authz
from hpcdet.master.settings.monitoring import MetricsSettings
from hpcdet.private_files import UnsafeFileError, check_private_file

bp = Blueprint("prometheus", __name__)
# A scrape token is a line of text; anything longer is not one.
MAX_TOKEN_BYTES = 4096


@bp.get("/metrics")
def metrics() -> Response:
    """Every metric in the Prometheus text format (docs/admin/metrics.md)."""
    _authorize(settings().metrics)
    return Response(render(db()), content_type=CONTENT_TYPE,
                    headers={"Cache-Control": "no-store"})


@bp.errorhandler(DomainError)
def _refused(exc: DomainError) -> Response:
    """A refusal in the API's error shape (not the web pages' HTML: a scraper reads it)."""
    response = jsonify(refusal_body(exc))
    response.status_code = http_status(exc)
    if response.status_code == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="hpcdet metrics"'
    return response


def _authorize(config: MetricsSettings) -> None:
    """Return if the caller may scrape; raise the refusal otherwise."""
    if not config.enabled:
        raise NotFound("not_found", "metrics are off on this master (master.yaml "
                       "metrics.enabled: false)")
    presented = bearer_token()
    if "token" in config.allow and presented and config.token_file:
        if hmac.compare_digest(presented.encode(), scrape_token(config.token_file)):
            return
        if "admins" not in config.allow:
            raise Unauthenticated("unauthorized", "the bearer token is not this master's "
                                  "scrape token (master.yaml metrics.token_file)")
    if "admins" not in config.allow:
        raise Unauthenticated("unauthorized", "send the scrape token: Authorization: Bearer "
                              "<content of master.yaml metrics.token_file>")
    actor = current_user()
    if not authz.is_admin(settings(), actor):
        raise Forbidden("forbidden", f"only a cluster admin (master.yaml auth.admins) or the "
                        f"scrape token may read the metrics; {actor!r} is not one")


def scrape_token(path: str) -> bytes:
    """The scrape token in ``path``: a file of the master's user that nobody else can read
    (else 503, naming the file and what is wrong with it)."""
    try:
        check_private_file(path, "token file")
        token = Path(path).read_bytes()[:MAX_TOKEN_BYTES + 1].strip()
    except UnsafeFileError as exc:
        raise Unavailable("metrics_token_file", f"metrics.token_file: {exc}") from None
    except OSError as exc:
        raise Unavailable("metrics_token_file", f"metrics.token_file: cannot read {path}: "
                          f"{exc.strerror}") from None
    if not token or len(token) > MAX_TOKEN_BYTES:
        raise Unavailable("metrics_token_file", f"metrics.token_file: {path} must hold one "
                          f"token of 1 to {MAX_TOKEN_BYTES} bytes")
    return token
