"""The one-line secret files the master writes into a job's directory: a trial's token
(``trial.json``'s ``token_file``) and a task's secret (TensorBoard's, behind the proxy)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def read_secret(path: Path, what: str, error: Callable[[str], Exception]) -> str:
    """The secret in ``path``, stripped; ``error(message)`` (naming ``what`` and the path)
    is raised when the file cannot be read or holds nothing."""
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    if not secret:
        raise error(f"{what} {path} is empty")
    return secret
