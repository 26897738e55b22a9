"""Helpers shared by the master tests (a config, a context, a create call, a FAKE sudo)."""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flask import Flask
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


def queued_trial(app: Flask, token: str, config: dict[str, Any] | None = None) -> int:
    """A QUEUED trial of a new ACTIVE single-trial experiment, reporting with ``token``."""
    from hpcdet.master.db import make_session_factory
    from hpcdet.master.models import Experiment, Trial
    from hpcdet.master.security.tokens import hash_token
    from hpcdet.master.transitions import transition
    from hpcdet.states import State

    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        exp = Experiment(name="e", owner="o", config=config or {}, original_config="",
                         context=b"", searcher_name="single")
        session.add(exp)
        transition(session, exp, State.ACTIVE, cause="t")
        trial = Trial(experiment_id=exp.id, hparams={}, seed=0, token=hash_token(token))
        session.add(trial)
        transition(session, trial, State.QUEUED, cause="t")
        session.commit()
        return trial.id


class FakeSudo:
    """A FAKE of the command runner the run-as helper is started through: each
    ``sudo -n -u USER -- HELPER VERB ...`` is recorded; nothing runs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], *, timeout: float = 60,
                 stdin: bytes | None = None) -> str:
        self.calls.append(tuple(argv))
        return ""

    def users(self) -> set[str]:
        """The users something ran as (``-u USER``)."""
        return {call[call.index("-u") + 1] for call in self.calls}
