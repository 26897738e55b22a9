"""POST /trials/<id>/progress: a single-trial experiment shows its trial's reported progress."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, create

from hpcdet.master.models import Experiment, Trial
from hpcdet.master.security.tokens import hash_token

TOKEN = "secret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RANDOM = ("name: r\nentrypoint: python3 train.py\nhyperparameters:\n  lr: 0.1\n"
          "searcher:\n  name: random\n  metric: loss\n  max_trials: 3\n")


def _trial(app: Flask, client: FlaskClient, config: str | None = None) -> tuple[int, int]:
    exp_id = (create(client, config) if config else create(client)).get_json()["experiment"]["id"]
    with app.app_context():
        from hpcdet.master.api.common import db

        trial = Trial(experiment_id=exp_id, state="RUNNING", hparams={}, seed=1,
                      token=hash_token(TOKEN))
        db().add(trial)
        db().commit()
        return exp_id, trial.id


def _progress(app: Flask, exp_id: int) -> float:
    with app.app_context():
        from hpcdet.master.api.common import db

        return float(db().get_one(Experiment, exp_id).progress)


def test_a_single_trials_progress_becomes_the_experiments(app: Flask,
                                                          client: FlaskClient) -> None:
    exp_id, trial_id = _trial(app, client)
    url = f"/api/v1/trials/{trial_id}/progress"
    assert client.post(url, json={"progress": 0.4}, headers=AUTH).status_code == 200
    assert _progress(app, exp_id) == pytest.approx(0.4)
    client.post(url, json={"progress": 0.2}, headers=AUTH)  # never backwards
    assert _progress(app, exp_id) == pytest.approx(0.4)


def test_a_search_keeps_the_searchers_progress(app: Flask, client: FlaskClient) -> None:
    exp_id, trial_id = _trial(app, client, RANDOM)
    response = client.post(f"/api/v1/trials/{trial_id}/progress", json={"progress": 0.9},
                           headers=AUTH)
    assert response.status_code == 200
    assert _progress(app, exp_id) == 0.0


@pytest.mark.parametrize("bad", [1.5, -0.1, "half", True, None])
def test_progress_outside_0_to_1_is_refused(app: Flask, client: FlaskClient, bad: object) -> None:
    _, trial_id = _trial(app, client)
    response = client.post(f"/api/v1/trials/{trial_id}/progress", json={"progress": bad},
                           headers=AUTH)
    assert "progress" in assert_error(response, 400, "bad_request")


def test_progress_needs_the_trials_token(app: Flask, client: FlaskClient) -> None:
    _, trial_id = _trial(app, client)
    response = client.post(f"/api/v1/trials/{trial_id}/progress", json={"progress": 0.5},
                           headers={"Authorization": "Bearer wrong"})
    assert response.status_code in (401, 403)
