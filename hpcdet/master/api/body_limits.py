"""Request body size limits per route, enforced before the body is read.

Each request gets ``request.max_content_length`` from the route it is for. A
``Content-Length`` over it is answered 413 (``payload_too_large`` in the common error
shape) before the view runs; a body without one stops being read at the limit (werkzeug
answers 413 too), before anything parses it. Routes without an entry get
``security.max_body_mb`` (1 MiB by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from flask import Flask, current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

MIB = 1024 * 1024
# A 95 MiB context grows by a third in base64, plus the config.
EXPERIMENT_CREATE_BYTES = 130 * MIB
# The harness sends metrics and checkpoint reports in batches; det sbatch a script and
# its environment.
REPORT_BYTES = 16 * MIB
ROUTE_LIMITS: Mapping[str, int] = MappingProxyType({
    "api.create_experiment": EXPERIMENT_CREATE_BYTES,
    "api.report_metrics": REPORT_BYTES,
    "api.report_checkpoint": REPORT_BYTES,
    "api.create_task": REPORT_BYTES,
    "api.create_command": EXPERIMENT_CREATE_BYTES,
    "api.create_notebook": EXPERIMENT_CREATE_BYTES,
})  # fmt: skip


def limit_for(endpoint: str | None, default_mb: int) -> int:
    """The body limit in bytes of ``endpoint``: its own, never below the default."""
    default = default_mb * MIB
    return max(ROUTE_LIMITS.get(endpoint or "", default), default)


def install(app: Flask) -> None:
    """Set every request's body limit from its route (see the module docstring)."""
    app.before_request(_apply_limit)


def _apply_limit() -> None:
    settings = current_app.config["HPCDET_SETTINGS"]
    limit = limit_for(request.endpoint, settings.hardening.max_body_mb)
    request.max_content_length = limit
    if request.content_length is not None and request.content_length > limit:
        # Refused before the view runs, whether or not it would read the body.
        raise RequestEntityTooLarge(f"the request body is over this route's limit of "
                                    f"{limit} bytes ({limit // MIB} MiB)")
