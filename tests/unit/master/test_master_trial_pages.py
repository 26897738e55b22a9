"""Paged trials: ``GET /api/v1/experiments/<id>/trials`` (offset, limit, sortBy, orderBy,
pagination), the experiment answer's counts instead of trials, and the page's pager."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import insert
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Trial

STATES = ["COMPLETED", "ERROR", "RUNNING"]


def seed(app: Flask, trials: int, *, smaller_is_better: bool = True) -> int:
    """An experiment of ``trials`` trials: trial i has loss (i * 7) % trials, steps i % 5,
    states cycling; every 10th has no validation yet and the 5th a non-number."""
    factory: sessionmaker[Session] = app.config["HPCDET_SESSION_FACTORY"]
    config = {"searcher": {"name": "random", "metric": "loss",
                           "smaller_is_better": smaller_is_better}}
    with session_scope(factory) as session:
        exp = Experiment(name="paged", owner="anonymous", state="ACTIVE", config=config,
                         original_config="", context=b"", searcher_name="random")
        session.add(exp)
        session.flush()
        session.execute(insert(Trial), [
            {"experiment_id": exp.id, "state": STATES[i % 3], "seed": i, "token": "t",
             "hparams": {"i": i}, "steps_completed": i % 5,
             "best_validation": None if i % 10 == 9 else {"metrics": {
                 "loss": "high" if i == 4 else float((i * 7) % trials)}}}
            for i in range(trials)])
        return exp.id


def trials(client: FlaskClient, exp_id: int, query: str = "") -> dict[str, Any]:
    response = client.get(f"/api/v1/experiments/{exp_id}/trials{query}")
    assert response.status_code == 200, response.get_json()
    body: dict[str, Any] = response.get_json()
    return body


def test_the_experiment_answer_counts_trials_instead_of_listing_them(
        app: Flask, client: FlaskClient) -> None:
    exp_id = seed(app, 250)
    body = client.get(f"/api/v1/experiments/{exp_id}").get_json()
    assert "trials" not in body
    exp = body["experiment"]
    assert exp["num_trials"] == 250
    assert exp["trial_counts"] == {"COMPLETED": 84, "ERROR": 83, "RUNNING": 83}
    first = trials(client, exp_id, "?limit=1")["trials"][0]
    assert exp["best_trial_id"] == first["id"]  # loss 0 is trial 0's


def test_default_page_bounds_and_pagination(app: Flask, client: FlaskClient) -> None:
    exp_id = seed(app, 250)
    first = trials(client, exp_id)
    assert len(first["trials"]) == 100
    assert first["pagination"] == {"offset": 0, "limit": 100, "total": 250, "startIndex": 0,
                                   "endIndex": 100}
    last = trials(client, exp_id, "?offset=200&limit=100")
    assert last["pagination"] == {"offset": 200, "limit": 100, "total": 250,
                                  "startIndex": 200, "endIndex": 250}
    past = trials(client, exp_id, "?offset=300")
    assert past["trials"] == [] and past["pagination"]["startIndex"] == 250
    ids = [t["id"] for q in ("?limit=1000",) for t in trials(client, exp_id, q)["trials"]]
    paged = [t["id"] for offset in (0, 100, 200)
             for t in trials(client, exp_id, f"?offset={offset}")["trials"]]
    assert paged == ids == sorted(ids) and len(set(ids)) == 250


@pytest.mark.parametrize(("smaller", "expected_first"), [(True, 0.0), (False, 249.0)])
def test_sorted_by_the_searcher_metric_best_first_without_values_last(
        app: Flask, client: FlaskClient, smaller: bool, expected_first: float) -> None:
    exp_id = seed(app, 250, smaller_is_better=smaller)
    listed = trials(client, exp_id, "?sortBy=best_validation_metric&limit=1000")["trials"]
    values = [((t["best_validation"] or {}).get("metrics") or {}).get("loss") for t in listed]
    numbers = [v for v in values if isinstance(v, float)]
    assert values[0] == expected_first
    assert numbers == sorted(numbers, reverse=not smaller)
    assert values[len(numbers):].count(None) == 25 and "high" in values[len(numbers):]
    # The explicit direction is numeric; the unvalued stay last.
    asc = trials(client, exp_id, "?sortBy=SORT_BY_BEST_VALIDATION_METRIC&orderBy=ORDER_BY_ASC"
                 "&limit=3")["trials"]
    assert [t["best_validation"]["metrics"]["loss"] for t in asc] == [0.0, 1.0, 2.0]


def test_sorted_by_state_and_steps_ties_by_id(app: Flask, client: FlaskClient) -> None:
    exp_id = seed(app, 30)
    by_state = trials(client, exp_id, "?sortBy=state&orderBy=desc")["trials"]
    assert [t["state"] for t in by_state] == sorted((t["state"] for t in by_state),
                                                    reverse=True)
    running = [t["id"] for t in by_state if t["state"] == "RUNNING"]
    assert running == sorted(running)
    by_steps = trials(client, exp_id, "?sortBy=steps&orderBy=desc&limit=6")["trials"]
    assert [t["steps_completed"] for t in by_steps] == [4] * 6
    assert [t["id"] for t in by_steps] == sorted(t["id"] for t in by_steps)


@pytest.mark.parametrize(("query", "param"), [
    ("?offset=-1", "offset"), ("?offset=x", "offset"), ("?limit=0", "limit"),
    ("?limit=1001", "limit"), ("?sortBy=name", "sortBy"), ("?orderBy=up", "orderBy")])
def test_bad_parameters_are_400s_naming_them(app: Flask, client: FlaskClient, query: str,
                                             param: str) -> None:
    exp_id = seed(app, 3)
    response = client.get(f"/api/v1/experiments/{exp_id}/trials{query}")
    assert response.status_code == 400
    body = response.get_json()
    assert body["status"] == 400 and body["error"]["code"] == "bad_request"
    assert body["error"]["message"].startswith(f"query parameter {param}:")


def test_the_page_shows_one_sorted_page_with_a_pager(app: Flask, client: FlaskClient) -> None:
    exp_id = seed(app, 250)
    html = client.get(f"/experiments/{exp_id}").get_data(as_text=True)
    rows = re.findall(r'<tr data-trial-id="(\d+)"', html)
    assert len(rows) == 100
    assert rows[0] == str(trials(client, exp_id, "?sortBy=best_validation_metric&limit=1")
                          ["trials"][0]["id"])
    assert "Showing trials 1–100 of 250" in html
    assert f'href="/experiments/{exp_id}?page=2" rel="next"' in html
    assert 'data-trial-count="ERROR">83' in html
    assert 'aria-sort="ascending"><a class="sort"' in html  # best loss first
    second = client.get(f"/experiments/{exp_id}?sort=id&order=desc&page=3&per_page=100")
    text = second.get_data(as_text=True)
    assert "Showing trials 201–250 of 250" in text and 'rel="next"' not in text
    assert len(re.findall(r'<tr data-trial-id="', text)) == 50


def test_a_bad_page_query_is_a_400_page_naming_it(app: Flask, client: FlaskClient) -> None:
    exp_id = seed(app, 3)
    response = client.get(f"/experiments/{exp_id}?sort=name")
    assert response.status_code == 400
    assert re.search(r'data-error>sort: must be one of', response.get_data(as_text=True))
    assert client.get(f"/experiments/{exp_id}?per_page=0").status_code == 400
