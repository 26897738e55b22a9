"""Errors the master's views raise; rendered in the common shape by ``api.errors``."""

from __future__ import annotations

from collections.abc import Sequence


class ApiError(Exception):
    """Raised by views and services; rendered as ``{"error": {...}, "status": N}``."""

    def __init__(self, status: int, code: str, message: str,
                 details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, list(details)
