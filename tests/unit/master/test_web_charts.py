"""The charts' data: LTTB downsampling and ``GET /trials/<id>/metrics/series``, the experiment
metrics' ``max_points``/``trial_id``, and counters (batches, epochs, records) kept out of the
metric menus."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from log_seed import add_experiment, add_trial, sessions
from sqlalchemy import insert

from hpcdet.master.models import Metric
from hpcdet.master.reports import downsample
from hpcdet.master.reports.downsample import lttb

AT = dt.datetime(2026, 3, 4, 5, 0, 0, tzinfo=dt.timezone.utc)
CONFIG: dict[str, Any] = {"searcher": {"name": "single", "metric": "validation_loss"}}
STEPS = 10_000
SPIKE_STEP = 6_123


def wave(count: int) -> list[tuple[float, float]]:
    return [(float(i), math.sin(i / 50)) for i in range(count)]


def test_lttb_keeps_the_first_and_last_point_and_gives_n_points() -> None:
    points = wave(5000)
    out = lttb(points, 200)
    assert len(out) == 200
    assert out[0] == points[0] and out[-1] == points[-1]
    assert [p[0] for p in out] == sorted(p[0] for p in out)  # still in x order
    assert set(out) <= set(points)


def test_lttb_picks_the_spike() -> None:
    points = [(float(i), 1.0) for i in range(10_000)]
    points[7_777] = (7_777.0, 500.0)
    points[2_222] = (2_222.0, -80.0)
    out = lttb(points, 50)
    assert (7_777.0, 500.0) in out and (2_222.0, -80.0) in out


def test_lttb_leaves_a_short_series_alone() -> None:
    points = wave(10)
    assert lttb(points, 10) == points and lttb(points, 500) == points
    assert lttb(points, 2) == points  # fewer than 3 cannot keep both ends and a middle


@pytest.fixture
def long_trial(app: Flask) -> int:
    """A trial with 10,000 training steps of loss (a spike at SPIKE_STEP) and the counters."""
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session, CONFIG))
        rows: list[dict[str, Any]] = []
        for step in range(1, STEPS + 1):
            at = AT + dt.timedelta(seconds=step)
            loss = 1000.0 if step == SPIKE_STEP else 1.0 / step
            for name, value in (("loss", loss), ("batches", float(step)),
                                ("epochs", float(step // 100)), ("records", step * 32.0)):
                rows.append({"trial_id": trial.id, "group": "training", "steps_completed": step,
                             "name": name, "value": value, "reported_at": at})
        rows.append({"trial_id": trial.id, "group": "validation", "steps_completed": 100,
                     "name": "validation_loss", "value": 0.5, "reported_at": AT})
        session.execute(insert(Metric), rows)
        return trial.id


def series(client: FlaskClient, trial_id: int, query: str) -> Any:
    response = client.get(f"/api/v1/trials/{trial_id}/metrics/series?{query}")
    assert response.status_code == 200, response.data
    return response.get_json()


def test_a_long_series_comes_back_as_at_most_max_points(client: FlaskClient,
                                                        long_trial: int) -> None:
    answer = series(client, long_trial, "group=training&name=loss&max_points=100")
    assert answer["names"] == ["loss"]  # the counters are x axes, not metrics
    assert answer["counters"] == ["batches", "epochs", "records"]
    (loss,) = answer["series"]
    assert loss["name"] == "loss" and loss["rows"] == STEPS
    points = loss["points"]
    assert len(points) == 100
    assert points[0]["batches"] == 1 and points[-1]["batches"] == STEPS
    assert {"batches": SPIKE_STEP, "value": 1000.0} in [
        {"batches": p["batches"], "value": p["value"]} for p in points]
    spike = next(p for p in points if p["batches"] == SPIKE_STEP)
    assert spike["epochs"] == SPIKE_STEP // 100 and spike["records"] == SPIKE_STEP * 32
    assert spike["time"] == (AT + dt.timedelta(seconds=SPIKE_STEP)).timestamp()


def test_a_series_past_sample_above_is_sampled_one_row_a_bucket(
        client: FlaskClient, long_trial: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(downsample, "SAMPLE_ABOVE", 5_000)
    answer = series(client, long_trial, "group=training&name=loss&max_points=100")
    (loss,) = answer["series"]
    assert loss["rows"] == STEPS  # the span of steps: one row a step here
    points = loss["points"]
    assert len(points) == 100
    assert points[0]["batches"] == 1 and points[-1]["batches"] == STEPS
    steps = [p["batches"] for p in points]
    assert steps == sorted(set(steps))
    for point in points:  # each a real row of the series, with its counters and time
        step = point["batches"]
        assert point["value"] == (1000.0 if step == SPIKE_STEP else 1.0 / step)
        assert point["records"] == step * 32
        assert point["time"] == (AT + dt.timedelta(seconds=step)).timestamp()


def test_a_short_series_is_every_point(client: FlaskClient, long_trial: int) -> None:
    answer = series(client, long_trial, "group=validation&name=validation_loss")
    assert answer["names"] == ["validation_loss"] and answer["counters"] == []
    assert answer["series"][0]["points"] == [
        {"batches": 100, "value": 0.5, "time": AT.timestamp()}]
    assert series(client, long_trial, "group=validation")["series"] == []  # names only


def test_the_full_resolution_metrics_are_unchanged(client: FlaskClient, long_trial: int) -> None:
    body = client.get(f"/api/v1/trials/{long_trial}/metrics?group=training").get_json()
    assert len(body["metrics"]) == STEPS
    assert body["metrics"][SPIKE_STEP - 1]["metrics"]["loss"] == 1000.0


@pytest.mark.parametrize("query", ["max_points=2", "max_points=5001", "max_points=x",
                                   "group=bogus", "name=a&" * 25])
def test_bad_queries_are_400s_in_the_error_shape(client: FlaskClient, long_trial: int,
                                                 query: str) -> None:
    response = client.get(f"/api/v1/trials/{long_trial}/metrics/series?{query}")
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "bad_request"


def test_an_unknown_trial_is_a_404(client: FlaskClient) -> None:
    response = client.get("/api/v1/trials/999999/metrics/series?name=loss")
    assert response.status_code == 404 and response.is_json


def test_experiment_metrics_pick_trials_and_downsample(app: Flask, client: FlaskClient) -> None:
    with sessions(app).begin() as session:
        exp = add_experiment(session, CONFIG)
        trials = [add_trial(session, exp) for _ in range(3)]
        session.execute(insert(Metric), [
            {"trial_id": t.id, "group": "validation", "steps_completed": step,
             "name": "validation_loss", "value": 1.0 / step, "reported_at": AT}
            for t in trials for step in range(1, 301)])
        exp_id, ids = exp.id, [t.id for t in trials]
    base = f"/api/v1/experiments/{exp_id}/metrics"
    full = client.get(base).get_json()
    assert [len(t["points"]) for t in full["trials"]] == [300, 300, 300]
    picked = client.get(f"{base}?trial_id={ids[0]}&trial_id={ids[2]}&max_points=50").get_json()
    assert [t["trial_id"] for t in picked["trials"]] == [ids[0], ids[2]]
    assert all(len(t["points"]) == 50 for t in picked["trials"])
    assert picked["trials"][0]["points"][0] == {"steps_completed": 1, "value": 1.0}
    assert client.get(f"{base}?trial_id=abc").status_code == 400
    assert client.get(f"{base}?max_points=1").status_code == 400


def test_counters_are_not_in_the_trial_pages_metric_menus(client: FlaskClient,
                                                          long_trial: int) -> None:
    html = client.get(f"/trials/{long_trial}").get_data(as_text=True)
    menu = re.search(r'<select id="training-metric"[^>]*>(.*?)</select>', html, re.S)
    assert menu and re.findall(r'<option value="([^"]*)"', menu.group(1)) == ["loss"]
    latest = re.search(r"The latest training report, at step (\d+):\s*([^<]*)", html)
    assert latest and latest.group(1) == str(STEPS)
    assert "batches" not in latest.group(2) and "epochs" not in latest.group(2)
