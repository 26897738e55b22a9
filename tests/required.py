"""Tests' rule for a component they need that is not here: skip locally, fail in CI.

A plain module (not a conftest) so that every tier's tests can import it by name:
``tests/`` is on ``sys.path`` for all of them (pytest inserts the rootdir conftest's folder).
"""

from __future__ import annotations

import os

import pytest


def require_all() -> bool:
    """Whether a missing component fails the test (CI, or ``HPCDET_REQUIRE_ALL=1``)."""
    return os.environ.get("CI") == "true" or os.environ.get("HPCDET_REQUIRE_ALL") == "1"


def missing(reason: str) -> None:
    """Skip locally, fail in CI."""
    if require_all():
        pytest.fail(f"required test component missing: {reason}", pytrace=False)
    pytest.skip(reason)
