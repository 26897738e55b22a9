"""The REST API's blueprint, mounted at ``/api/v1``: its own module, so that a route module
imports it without importing the package (whose ``__init__`` imports every route module).
"""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint("api", __name__, url_prefix="/api/v1")
