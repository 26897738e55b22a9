"""Profiling reports from the real Core API reach the real master (served over HTTP here)."""

from __future__ import annotations

import json
import pathlib
import threading
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create
from werkzeug.serving import WSGIRequestHandler, make_server

import hpcdet.core
from hpcdet.cli.trial_profile import profile_text
from hpcdet.core import _context
from hpcdet.master.models import Trial
from hpcdet.master.security.tokens import hash_token
from hpcdet.states import State

TOKEN = "profiling-token"


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


@pytest.fixture
def trial_id(app: Flask, client: FlaskClient) -> int:
    exp_id = create(client).get_json()["experiment"]["id"]
    with app.app_context():
        from hpcdet.master.api.common import db
        from hpcdet.master.transitions import transition

        trial = Trial(experiment_id=exp_id, hparams={}, seed=1, token=hash_token(TOKEN))
        db().add(trial)
        transition(db(), trial, State.QUEUED, cause="test")
        db().commit()
        return trial.id


@pytest.fixture
def in_job(app: Flask, trial_id: int, tmp_path: pathlib.Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process is the only rank of ``trial_id``, its master served on a free port."""
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    (tmp_path / ".token").write_text(TOKEN)
    trial = {"master_url": f"http://127.0.0.1:{server.server_port}", "experiment_id": 1,
             "trial_id": trial_id, "trial_seed": 1, "hparams": {},
             "checkpoint_dir": str(tmp_path / "ckpt"), "token_file": ".token",
             "experiment_config": {"entrypoint": "python3 train.py"}}
    (tmp_path / "trial.json").write_text(json.dumps(trial))
    monkeypatch.setenv("DET_TRIAL_INFO", str(tmp_path / "trial.json"))
    monkeypatch.setenv("DET_JOB_DIR", str(tmp_path))
    monkeypatch.setenv("HPCDET_PREEMPT_POLL_SECONDS", "3600")
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield
    finally:
        _context.close_open_contexts()
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.mark.usefixtures("in_job")
def test_profiling_reports_are_stored_and_read_back(client: FlaskClient, trial_id: int) -> None:
    with hpcdet.core.init() as core:
        core.profiler.on(sampling_interval=3600)
        for batch in range(3):
            core.profiler.set_batch(batch)
            with core.profiler.timing("train_batch"):
                pass
    answer = client.get(f"/api/v1/trials/{trial_id}/metrics?group=profiling").get_json()
    [report] = answer["metrics"]
    assert (report["group"], report["steps_completed"]) == ("profiling", 2)
    assert report["metrics"]["timing.train_batch.count"] == 3
    assert report["metrics"]["system.memory_used_bytes"] > 0
    text = profile_text(answer["metrics"])
    assert "train_batch  3" in text and "system.memory_used_bytes" in text


def test_an_unknown_group_names_profiling_among_the_valid_ones(
    client: FlaskClient, trial_id: int
) -> None:
    response = client.get(f"/api/v1/trials/{trial_id}/metrics?group=timings")
    assert response.status_code == 400
    message = response.get_json()["error"]["message"]
    assert message == "group: must be one of training, validation, profiling"
