"""Helpers shared by the master tests (a config, a context, a create call)."""

from __future__ import annotations

import base64
import io
import tarfile
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

CONFIG = """\
name: unit
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
  hidden: {type: int, minval: 8, maxval: 64}
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 2}
slurm: {slots_per_node: 1}
"""


def make_context(files: dict[str, bytes] | None = None) -> str:
    """A base64 tar.gz context like the CLI sends."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in (files or {"train.py": b"print('hi')\n"}).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


def create(client: FlaskClient, config: str = CONFIG, **extra: Any) -> Any:
    body = {"config": config, "context": make_context(), **extra}
    return client.post("/api/v1/experiments", json=body, headers={"X-Hpcdet-User": "alice"})


def assert_error(response: Any, status: int, code: str) -> str:
    """The response is the API's one error shape with ``status`` and ``code``; its message."""
    body = response.get_json()
    assert response.status_code == status, body
    assert set(body) == {"error", "status"} and body["status"] == status
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    return str(body["error"]["message"])


def job_token(trial: Any) -> str:
    """A submitted trial's token as its job got it (the database holds only its hash)."""
    return (Path(trial.job_dir) / ".token").read_text().strip()
