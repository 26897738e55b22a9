"""The Python SDK (``hpcdet.experimental.client``, Determined's ``determined.experimental
.client``) against a real app (in process, httpx.WSGITransport), the scripted scheduler and a
real database: create from Python, list trials, top checkpoint, download, register, metrics.
"""

from __future__ import annotations

import uuid as uuidlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from lifecycle_helpers import session_of, trial_of
from master_helpers import CONFIG, job_token

from hpcdet.experimental import client
from hpcdet.experimental.errors import NotFoundException, SDKError
from hpcdet.master.models import Experiment, Trial, TrialLog
from hpcdet.master.scheduling.reconciler import Reconciler


@pytest.fixture
def sdk(app: Flask, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DET_USER_TOKEN", raising=False)
    client.login("http://localhost:8080", user="alice", transport=httpx.WSGITransport(app=app))
    return client


def _report(app: Flask, flask_client: Any, trial_id: int, steps: int, loss: float) -> str:
    """A validation and a checkpoint directory, reported as the harness would."""
    with session_of(app) as session:
        trial = session.get_one(Trial, trial_id)
        root = Path(session.get_one(Experiment, trial.experiment_id)
                    .config["checkpoint_storage"]["host_path"])
        auth = {"Authorization": f"Bearer {job_token(trial)}"}
    for group, name in (("training", "loss"), ("validation", "validation_loss")):
        flask_client.post(f"/api/v1/trials/{trial_id}/metrics", headers=auth, json={
            "group": group, "reports": [{"steps_completed": steps, "metrics": {name: loss}}]})
    uuid = str(uuidlib.uuid4())
    (root / uuid).mkdir(parents=True)
    (root / uuid / "model.pt").write_bytes(b"weights %d" % steps)
    response = flask_client.post(f"/api/v1/trials/{trial_id}/checkpoints", headers=auth,
                                 json={"uuid": uuid, "steps_completed": steps})
    assert response.status_code == 201, response.get_json()
    return uuid


def test_the_sdk_round_trip(sdk: Any, app: Flask, client: Any, reconciler: Reconciler,
                            fake: FakeSchedulerBackend, tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "train.py").write_text("print('hi')\n")
    exp = sdk.create_experiment(CONFIG, model_dir)
    assert exp.state == sdk.ExperimentState.ACTIVE and exp.config["name"] == "unit"
    assert [e.id for e in sdk.list_experiments()] == [exp.id]
    reconciler.cycle()
    trials = exp.list_trials()
    assert [t.id for t in trials] == [trial_of(app, exp.id).id]
    trial = trials[0]
    assert trial.experiment_id == exp.id and trial.hparams["lr"] == 0.1
    with pytest.raises(NotFoundException, match="no checkpoint"):
        exp.top_checkpoint()
    worse = _report(app, client, trial.id, 10, 0.5)
    best = _report(app, client, trial.id, 20, 0.25)
    assert exp.top_checkpoint().uuid == best
    assert trial.top_checkpoint().uuid == best
    assert exp.top_checkpoint("validation_loss", smaller_is_better=False).uuid == worse
    # Determined's default order: by the searcher metric, best first.
    assert [c.uuid for c in exp.list_checkpoints()] == [best, worse]
    assert [c.uuid for c in exp.list_checkpoints(sdk.CheckpointSortBy.BATCH_NUMBER,
                                                 sdk.OrderBy.DESC, max_results=1)] == [best]
    ckpt = sdk.get_checkpoint(best)
    assert ckpt.state == sdk.CheckpointState.ACTIVE and ckpt.training.trial_id == trial.id
    path = ckpt.download(tmp_path / "got", mode=sdk.DownloadMode.MASTER)
    assert (Path(path) / "model.pt").read_bytes() == b"weights 20"
    with pytest.raises(SDKError, match="is not empty"):
        ckpt.download(tmp_path / "got")
    model = sdk.create_model("digits", description="a model")
    version = model.register_version(best)
    assert (version.version, version.checkpoint.uuid) == (1, best)
    assert sdk.get_model("digits").get_version().checkpoint.uuid == best
    assert [v.version for v in model.list_versions()] == [1]
    validation = list(sdk.stream_trials_validation_metrics([trial.id]))
    assert [(m.steps_completed, m.metrics) for m in validation] == [
        (10, {"validation_loss": 0.5}), (20, {"validation_loss": 0.25})]
    assert [m.group for m in trial.iter_metrics("training")] == ["training", "training"]


def test_errors_are_the_sdks_own(sdk: Any) -> None:
    with pytest.raises(NotFoundException, match="not found") as caught:
        sdk.get_experiment(999)
    assert caught.value.__cause__ is None and caught.value.status == 404
    with pytest.raises(SDKError, match="no passwords"):
        sdk.login("http://localhost:8080", password="secret")
    assert sdk.whoami().username == "alice"


def test_determined_doc_snippets_conveniences(sdk: Any, app: Flask, client: Any,
                                               reconciler: Reconciler, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """What Determined's documented snippets rely on (tests/compat/test_sdk_workflow.py):
    ``from ... import checkpoint``, the default checkpoint orders, a second download()
    of a checkpoint already there, Trial.iter_logs and Model.get_versions."""
    from hpcdet.experimental import checkpoint as checkpoint_module

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "train.py").write_text("print('hi')\n")
    exp = sdk.create_experiment(CONFIG, model_dir)
    reconciler.cycle()
    (trial,) = exp.list_trials()
    worse = _report(app, client, trial.id, 10, 0.5)
    best = _report(app, client, trial.id, 20, 0.25)
    assert [c.uuid for c in trial.list_checkpoints()] == [best, worse]
    assert [c.uuid for c in exp.list_checkpoints(checkpoint_module.CheckpointSortBy.TRIAL_ID,
                                                 sdk.OrderBy.DESC)] == [worse, best]

    monkeypatch.chdir(tmp_path)
    ckpt = sdk.get_checkpoint(best)
    first = ckpt.download()
    assert first == f"checkpoints/{best}"
    with pytest.raises(SDKError, match="is not empty"):  # not a checkpoint: refused
        ckpt.download()
    (Path(first) / "metadata.json").write_text("{}")
    (Path(first) / "model.pt").write_bytes(b"kept")
    assert ckpt.download() == first  # a checkpoint is there: reused, as Determined does
    assert (Path(first) / "model.pt").read_bytes() == b"kept"
    assert ckpt.download(force=True) == first
    assert (Path(first) / "model.pt").read_bytes() == b"weights 20"

    with session_of(app) as session:
        session.add_all(TrialLog(trial_id=trial.id, stream="stdout", line=f"line {i}")
                        for i in range(3))
        session.commit()
    lines = list(trial.iter_logs())  # the master's own lines (job pending...) first
    assert lines[-3:] == ["line 0", "line 1", "line 2"] and lines == list(trial.logs())
    assert list(trial.iter_logs(head=2)) == lines[:2]
    assert list(trial.iter_logs(tail=1)) == ["line 2"]
    with pytest.raises(SDKError, match="mutually exclusive"):
        list(trial.iter_logs(follow=True, tail=1))
    with session_of(app) as session:  # follow returns once the trial has ended
        session.get_one(Trial, trial.id).state = "COMPLETED"
        session.commit()
    assert list(trial.iter_logs(follow=True, interval=0.01)) == lines

    model = sdk.create_model("digits")
    model.register_version(best)
    with pytest.warns(FutureWarning, match="list_versions"):
        assert [v.version for v in model.get_versions()] == [1]


def test_default_order_follows_the_searcher_direction() -> None:
    from hpcdet.experimental._sorting import sort_checkpoints

    rows = [{"uuid": "a", "searcher_metric_value": 0.5},
            {"uuid": "b", "searcher_metric_value": None},
            {"uuid": "c", "searcher_metric_value": 0.9}]
    assert [r["uuid"] for r in sort_checkpoints(rows, None, None)] == ["a", "c", "b"]
    assert [r["uuid"] for r in sort_checkpoints(rows, None, None, False)] == ["c", "a", "b"]
    assert [r["uuid"] for r in sort_checkpoints(rows, None, client.OrderBy.ASC, False)] == [
        "a", "c", "b"]
