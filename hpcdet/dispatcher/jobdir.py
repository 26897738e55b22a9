"""Prepare a trial's job directory on the shared filesystem (see docs/job-directory.md)."""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hpcdet.errors import ValidationError

TRIAL_INFO = "trial.json"
TOKEN_FILE = ".token"
CONTEXT_DIR = "context"
# A TLS master's certificate, for the job to verify the master with (DET_MASTER_CERT_FILE).
MASTER_CERT_FILE = "master-cert.pem"


def prepare_job_dir(job_dir: str | Path, *, context_tar: bytes | None,
                    trial_info: Mapping[str, Any], token: str | None,
                    master_cert: str | None = None) -> Path:
    """Create ``job_dir``, unpack the context (once) and write trial.json and the token.

    ``master_cert``: the PEM text of a TLS master's certificate, written to
    ``master-cert.pem`` for the job to verify the master with (``DET_MASTER_CERT_FILE``).
    """
    root = Path(job_dir)
    root.mkdir(parents=True, exist_ok=True)
    context = root / CONTEXT_DIR
    if context_tar is not None and not context.exists():
        _unpack(context_tar, context)
    _write_atomic(root / TRIAL_INFO, json.dumps(dict(trial_info), indent=2, sort_keys=True), 0o644)
    if token is not None:
        _write_atomic(root / TOKEN_FILE, token, 0o600)
    if master_cert is not None:
        _write_atomic(root / MASTER_CERT_FILE, master_cert, 0o644)
    return root


def _unpack(context_tar: bytes, dest: Path) -> None:
    partial = dest.with_name(dest.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(context_tar), mode="r:*") as tar:
            # The "data" filter refuses absolute paths, "..", device files and links that
            # point outside the destination: the tarball came over the network.
            tar.extractall(partial, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise ValidationError(f"the experiment context is not a valid tar archive: {exc}") from exc
    partial.rename(dest)


def _write_atomic(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    tmp.replace(path)


def context_size(context_tar: bytes) -> int:
    """Total bytes of the regular files in a context tarball."""
    try:
        with tarfile.open(fileobj=io.BytesIO(context_tar), mode="r:*") as tar:
            return sum(m.size for m in tar.getmembers() if m.isfile())
    except tarfile.TarError as exc:
        raise ValidationError(f"the experiment context is not a valid tar archive: {exc}") from exc
