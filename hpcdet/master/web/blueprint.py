"""The web pages' blueprint: its own module, so that a page module imports it without
importing the package (whose ``__init__`` imports every page module)."""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint("web", __name__)
