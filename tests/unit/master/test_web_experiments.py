"""The experiments page ``/`` and the list it shares with ``GET /api/v1/experiments``."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error
from sqlalchemy import event, select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.web.formatting import number_text, percent, time_text

NASTY = "<b>x</b>&\"'"
ESCAPED = "&lt;b&gt;x&lt;/b&gt;&amp;&#34;&#39;"
ALLOWED = ("ACTIVE, PAUSED, STOPPING_COMPLETED, STOPPING_CANCELED, STOPPING_KILLED, "
           "STOPPING_ERROR, COMPLETED, CANCELED, ERROR")


def sessions(app: Flask) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = app.config["HPCDET_SESSION_FACTORY"]
    return factory


def add(session: Session, *, name: str = "exp", owner: str = "alice", state: str = "ACTIVE",
        labels: Sequence[str] = (), archived: bool = False, progress: float = 0.0,
        metric: str | None = "loss", smaller: bool | None = True,
        values: Sequence[float | None] = ()) -> int:
    """An experiment with one trial per value: its best validation of ``metric`` (None: none)."""
    config = {"searcher": {"name": "single", "metric": metric, "smaller_is_better": smaller}}
    exp = Experiment(name=name, owner=owner, state=state, labels=list(labels),
                     archived=archived, progress=progress, config=config,
                     original_config="", context=b"", searcher_name="single")
    session.add(exp)
    session.flush()
    session.add_all(Trial(experiment_id=exp.id, state="RUNNING", hparams={}, seed=1, token="t",
                          best_validation=None if value is None else {
                              "steps_completed": 10, "metrics": {str(metric): value, "acc": 7}})
                    for value in values)
    session.flush()
    return exp.id


def seed(app: Flask, **fields: Any) -> int:
    with session_scope(sessions(app)) as session:
        return add(session, **fields)


def seed_many(app: Flask, count: int, **fields: Any) -> list[int]:
    with session_scope(sessions(app)) as session:
        return [add(session, name=f"exp-{i}", **fields) for i in range(count)]


def trial_ids(app: Flask, exp_id: int) -> list[int]:
    with session_scope(sessions(app)) as session:
        return list(session.scalars(select(Trial.id).where(Trial.experiment_id == exp_id)
                                    .order_by(Trial.id)))


def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.data
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def row_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-experiment-id="(\d+)"', html)]


def row_of(html: str, exp_id: int) -> str:
    found = re.search(rf'<tr data-experiment-id="{exp_id}".*?</tr>', html, re.S)
    assert found, f"no row for experiment {exp_id}"
    return found.group().replace("\n", "")


def api(client: FlaskClient, query: str = "") -> dict[str, Any]:
    response = client.get(f"/api/v1/experiments{query}")
    assert response.status_code == 200, response.get_json()
    body: dict[str, Any] = response.get_json()
    return body


# ---- rows ---------------------------------------------------------------------------------


def test_a_row_shows_every_column(app: Flask, client: FlaskClient) -> None:
    exp_id = seed(app, name="mnist", owner="ann", state="PAUSED", labels=["cnn", "big"],
                  progress=0.425, values=[0.5, 0.25, None])
    html = page(client, "/")
    row = row_of(html, exp_id)
    assert (f'<td data-col="id"><a href="/experiments/{exp_id}">{exp_id}</a></td>'
            f'<td class="name" data-col="name"><a href="/experiments/{exp_id}">mnist</a></td>'
            ) in row
    assert '<span class="state state-PAUSED" title="PAUSED">Paused</span>' in row
    assert '<td data-col="owner">ann</td>' in row and 'data-state="PAUSED"' in row
    assert 'aria-valuenow="43"><span style="width: 43%"></span></span> 43%</td>' in row
    assert ">loss 0.25</td>" in row and "smaller is better" in row
    assert '<td data-col="trials">3</td>' in row  # trials, with or without a validation
    assert ('<a class="label-tag" href="/?label=cnn">cnn</a>'
            '<a class="label-tag" href="/?label=big">big</a>') in row
    assert re.search(r'<td data-col="start"><time datetime="20[^"]*Z" title="[^"]*">'
                     r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC</time></td>"
                     r'<td data-col="end">—</td></tr>$', row)
    assert 'http-equiv="refresh"' not in html
    assert re.search(r'<script src="/static/experiments\.js\?v=[0-9a-f]{12}" defer></script>', html)


def test_rows_are_newest_first_and_the_page_polls_the_same_rows(app: Flask,
                                                                client: FlaskClient) -> None:
    ids = seed_many(app, 3)
    html = page(client, "/")
    assert row_ids(html) == ids[::-1]
    assert ('<tbody id="experiments" data-api="/api/v1/experiments?offset=0&amp;limit=50" '
            'data-every="15"') in html
    assert "Showing 1–3 of 3" in html and "data-poll-status" in html


def test_an_empty_master_says_how_to_create_an_experiment(client: FlaskClient) -> None:
    html = page(client, "/")
    assert '<tr><td colspan="11">No experiments yet: det experiment create CONFIG CONTEXT' in html
    assert "<span data-range>No experiments.</span>" in html
    assert 'rel="next"' not in html and 'rel="prev"' not in html


def test_names_owners_and_labels_are_escaped(app: Flask, client: FlaskClient) -> None:
    exp_id = seed(app, name=NASTY, owner="o'neil", labels=[NASTY])
    html = page(client, "/?label=" + quote(NASTY))
    row = row_of(html, exp_id)
    assert f'<a href="/experiments/{exp_id}">{ESCAPED}</a></td>' in row
    assert '<td data-col="owner">o&#39;neil</td>' in row
    assert (f'<a class="label-tag" href="/?label=%3Cb%3Ex%3C%2Fb%3E%26%22%27">{ESCAPED}</a>'
            in row)
    assert NASTY not in html
    assert f'name="label" value="{ESCAPED}"' in html  # the filter as typed, escaped


# ---- best metric ------------------------------------------------------------------------


@pytest.mark.parametrize(("smaller", "values", "best", "index"), [
    (True, [0.5, 0.125, 0.25], 0.125, 1),
    (False, [0.5, 0.125, 0.75], 0.75, 2),
    (None, [3.0, 2.0], 2.0, 1),  # a missing flag means smaller is better
    (True, [0.25, 0.25], 0.25, 0),  # a tie goes to the first trial
])
def test_best_metric_is_the_best_of_the_trials_best_validations(
        app: Flask, client: FlaskClient, smaller: bool | None, values: list[float],
        best: float, index: int) -> None:
    exp_id = seed(app, metric="val_acc", smaller=smaller, values=[None, *values])
    best_id = trial_ids(app, exp_id)[index + 1]
    body = api(client)["experiments"][0]
    assert body["best_metric"] == {"name": "val_acc", "value": best, "trial_id": best_id,
                                   "smaller_is_better": smaller is not False}
    assert body["num_trials"] == len(values) + 1
    row = row_of(page(client, "/"), exp_id)
    assert f'data-best-trial="{best_id}"' in row
    assert f">val_acc {number_text(best)}</td>" in row
    assert ("larger is better" in row) is (smaller is False)


@pytest.mark.parametrize("fields", [
    {"values": []},  # no trials
    {"values": [None, None]},  # no validations yet
    {"metric": None, "values": [0.5]},  # no searcher metric
])
def test_no_best_metric_is_null_and_an_empty_cell(app: Flask, client: FlaskClient,
                                                  fields: dict[str, Any]) -> None:
    exp_id = seed(app, **fields)
    assert api(client)["experiments"][0]["best_metric"] is None
    row = row_of(page(client, "/"), exp_id)
    assert "data-best-trial" not in row and '</span> 0%</td><td data-col="best">—</td>' in row


def test_best_metric_ignores_other_metrics_and_non_numbers(app: Flask,
                                                           client: FlaskClient) -> None:
    with session_scope(sessions(app)) as session:
        exp_id = add(session, values=[0.5])
        session.add_all(Trial(experiment_id=exp_id, state="RUNNING", hparams={}, seed=1,
                              token="t", best_validation={"metrics": metrics})
                        for metrics in ({"loss": "0.1"}, {"loss": True}, {"acc": 0.01}))
    best = api(client)["experiments"][0]["best_metric"]
    assert best["value"] == 0.5 and api(client)["experiments"][0]["num_trials"] == 4


@pytest.mark.parametrize("smaller", [True, False])
def test_sorting_by_best_counts_only_numbers_of_the_searcher_metric(
        app: Flask, client: FlaskClient, smaller: bool) -> None:
    with session_scope(sessions(app)) as session:
        worse = add(session, name="worse", smaller=smaller, values=[0.5 if smaller else 0.3])
        # Non-numbers and other metrics that would win if they counted.
        session.add_all(Trial(experiment_id=worse, state="RUNNING", hparams={}, seed=1,
                              token="t", best_validation={"metrics": metrics})
                        for metrics in ({"loss": "0.1" if smaller else "0.9"}, {"loss": True},
                                        {"acc": 0.01 if smaller else 0.99}))
        better = add(session, name="better", smaller=smaller,
                     values=[0.3 if smaller else 0.5, None])
        add(session, name="none", smaller=smaller, values=[None])
    order = "asc" if smaller else "desc"
    names = [e["name"] for e in api(client, f"?sort=best&order={order}")["experiments"]]
    assert names == ["better", "worse", "none"]
    assert [e["id"] for e in api(client, f"?sort=best&order={order}&limit=1")[
        "experiments"]] == [better]


# ---- filters ------------------------------------------------------------------------------


@pytest.fixture
def varied(app: Flask) -> dict[str, int]:
    """Experiments with different states, owners and labels, by name."""
    specs: dict[str, dict[str, Any]] = {
        "a": {"state": "ACTIVE", "owner": "ann", "labels": ["cnn", "nlp-big"]},
        "b": {"state": "COMPLETED", "owner": "bob", "labels": ["nlp"]},
        "c": {"state": "COMPLETED", "owner": "ann", "labels": ["cnn"]},
        "d": {"state": "ERROR", "owner": "bob", "labels": []},
        "e": {"state": "COMPLETED", "owner": "ann", "labels": ["cnn"], "archived": True},
    }
    with session_scope(sessions(app)) as session:
        return {name: add(session, name=name, **spec) for name, spec in specs.items()}


@pytest.mark.parametrize(("query", "names"), [
    ("", "dcba"),
    ("state=COMPLETED", "cb"),
    ("state=completed", "cb"),
    ("owner=ann", "ca"),
    ("owner=an", ""),  # owners match exactly
    ("label=cnn", "ca"),
    ("label=nlp", "b"),  # a label is a whole element, not a substring of "nlp-big"
    ("label=cn", ""),
    ("state=COMPLETED&owner=ann&label=cnn", "c"),
    ("archived=true", "edcba"),
    ("archived=true&state=COMPLETED&owner=ann", "ec"),
])
def test_filters_select_the_same_rows_on_the_page_and_in_the_api(
        client: FlaskClient, varied: dict[str, int], query: str, names: str) -> None:
    expected = [varied[name] for name in names]
    html = page(client, f"/?{query}")
    assert row_ids(html) == expected
    body = api(client, f"?{query}")
    assert [e["id"] for e in body["experiments"]] == expected and body["total"] == len(names)


def test_the_form_keeps_the_filters_and_the_poll_url_has_them(
        client: FlaskClient, varied: dict[str, int]) -> None:
    html = page(client, "/?state=completed&owner=ann&label=cnn&archived=true&per_page=20")
    assert '<option value="COMPLETED" selected>Completed</option>' in html
    assert 'name="owner" value="ann"' in html and 'name="label" value="cnn"' in html
    assert 'name="archived" value="true" checked' in html
    assert '<option value="20" selected>20</option>' in html
    assert ('data-api="/api/v1/experiments?state=COMPLETED&amp;owner=ann&amp;label=cnn&amp;'
            'archived=true&amp;offset=0&amp;limit=20"') in html
    assert '<span class="label-tag">archived</span>' in row_of(html, varied["e"])
    assert "archived</span>" not in row_of(html, varied["c"])


def test_archived_are_hidden_unless_asked(client: FlaskClient, varied: dict[str, int]) -> None:
    html = page(client, "/")
    assert varied["e"] not in row_ids(html)
    assert 'name="archived" value="true">' in html  # unchecked


def test_no_match_says_so(client: FlaskClient, varied: dict[str, int]) -> None:
    html = page(client, "/?owner=nobody")
    assert '<tr><td colspan="11">No experiments match these filters.</td></tr>' in html
    assert 'data-empty="No experiments match these filters."' in html


# ---- pagination ---------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "shown", "text", "previous", "following"), [
    ("", range(120, 70, -1), "Showing 1–50 of 120", None, "/?page=2"),
    ("page=2", range(70, 20, -1), "Showing 51–100 of 120", "/", "/?page=3"),
    ("page=3", range(20, 0, -1), "Showing 101–120 of 120", "/?page=2", None),
    ("page=9", range(0), "This page is past the end: 120 experiments in all.", "/?page=3", None),
    ("per_page=500", range(120, 0, -1), "Showing 1–120 of 120", None, None),
    ("per_page=7&page=2&owner=alice", range(113, 106, -1), "Showing 8–14 of 120",
     "/?owner=alice&amp;per_page=7", "/?owner=alice&amp;per_page=7&amp;page=3"),
])
def test_pages_show_their_range_and_link_their_neighbours(
        app: Flask, client: FlaskClient, query: str, shown: range, text: str,
        previous: str | None, following: str | None) -> None:
    ids = seed_many(app, 120)
    html = page(client, f"/?{query}")
    assert row_ids(html) == [ids[n - 1] for n in shown]
    assert f"<span data-range>{text}</span>" in html
    prev_link = re.search(r'<a href="([^"]*)" rel="prev"', html)
    next_link = re.search(r'<a href="([^"]*)" rel="next"', html)
    assert (prev_link.group(1) if prev_link else None) == previous
    assert (next_link.group(1) if next_link else None) == following


def test_the_poll_url_asks_for_the_same_page(app: Flask, client: FlaskClient) -> None:
    ids = seed_many(app, 30)
    html = page(client, "/?per_page=20&page=2")
    url = re.search(r'data-api="([^"]*)"', html).group(1)  # type: ignore[union-attr]
    assert url == "/api/v1/experiments?offset=20&amp;limit=20" and 'data-offset="20"' in html
    body = api(client, "?offset=20&limit=20")
    assert [e["id"] for e in body["experiments"]] == row_ids(html) == ids[9::-1]
    assert body["total"] == 30


def test_counts_in_the_range_have_thousands_separators(app: Flask,
                                                       client: FlaskClient) -> None:
    with session_scope(sessions(app)) as session:
        session.add_all(Experiment(name="x", owner="o", state="ACTIVE", labels=[], config={},
                                   original_config="", context=b"", searcher_name="single")
                        for _ in range(1001))
    html = page(client, "/?page=20&per_page=50")
    assert "Showing 951–1,000 of 1,001" in html and 'href="/?page=21" rel="next"' in html


# ---- bad parameters -----------------------------------------------------------------------


# The 400 page names the states as the filter shows them, not the API's ACTIVE, ERROR, ...
WORDS = ("Active, Paused, Stopping, Canceling, Killing, Stopping (error), Completed, Canceled, "
         "Errored")


@pytest.mark.parametrize(("query", "message"), [
    ("state=nope", f"state: there is no experiment state &#39;nope&#39;; choose one of {WORDS}"),
    ("state=%3Cb%3E", "state: there is no experiment state &#39;&lt;b&gt;&#39;; choose one of "
                      f"{WORDS}"),
    ("page=0", "page: must be a whole number from 1 to 1000000 (got &#39;0&#39;)"),
    ("page=two", "page: must be a whole number from 1 to 1000000 (got &#39;two&#39;)"),
    ("per_page=10000", "per_page: must be a whole number from 1 to 500 (got &#39;10000&#39;)"),
    ("per_page=0", "per_page: must be a whole number from 1 to 500 (got &#39;0&#39;)"),
])
def test_a_bad_parameter_is_a_400_page_naming_it_with_the_form_kept(
        app: Flask, client: FlaskClient, query: str, message: str) -> None:
    seed(app)
    html = page(client, f"/?{query}&owner=alice", status=400)
    assert f'<p class="error" role="alert" data-error>{message}</p>' in html
    assert '<form class="filters"' in html and 'name="owner" value="alice"' in html
    assert 'id="experiments"' not in html and "data-experiment-id" not in html


def test_every_bad_parameter_is_named_at_once(client: FlaskClient) -> None:
    html = page(client, "/?state=x&page=-1&per_page=501", status=400)
    assert [m.split(":")[0] for m in re.findall(r"data-error>([^<]*)<", html)] == [
        "state", "page", "per_page"]
    assert '<option value="501" selected>501</option>' in html


def test_the_api_refuses_an_unknown_state_in_the_common_shape(client: FlaskClient) -> None:
    message = assert_error(client.get("/api/v1/experiments?state=RUNNING"), 400, "bad_request")
    assert message == ("query parameter state: unknown experiment state 'RUNNING' "
                       f"(allowed: {ALLOWED})")
    assert_error(client.get("/api/v1/experiments?limit=1001"), 400, "bad_request")


# ---- cost ---------------------------------------------------------------------------------


@contextmanager
def counted_statements(app: Flask) -> Iterator[list[str]]:
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    engine = app.config["HPCDET_ENGINE"]
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)


def statements_of(app: Flask, client: FlaskClient, url: str) -> int:
    # The health banner's record is read at most every 2 s: on a loaded host that can pass
    # between the two requests and add its read to the page's (a unit-tier run failed so).
    app.config["HPCDET_HEALTH_CACHE_SECONDS"] = 3600
    client.get(url)  # the first connection's own queries (and the health read) are not the page's
    with counted_statements(app) as statements:
        assert client.get(url).status_code == 200
    return len(statements)


@pytest.mark.parametrize("url", ["/", "/?per_page=500&label=l1", "/api/v1/experiments"])
def test_the_statements_per_request_do_not_grow_with_the_experiments(
        app: Flask, client: FlaskClient, url: str) -> None:
    seed_many(app, 10, labels=["l1"], values=[0.1, 0.2])
    few = statements_of(app, client, url)
    seed_many(app, 190, labels=["l1"], values=[0.1, 0.2, 0.3, 0.4])
    assert statements_of(app, client, url) == few == 3  # count, experiments, their trials


# ---- formatting (the same rules as hpcdet.js) ---------------------------------------------


@pytest.mark.parametrize(("value", "text"), [
    (None, ""), (2.0, "2"), (0, "0"), (0.123456, "0.1235"), (12345.678, "12350"),
    (-0.5, "-0.5"), (0.0001234, "1.234e-4"), (2.5e7, "25000000"), (2.5e7 + 0.5, "2.500e+7"),
    (1234567.0, "1234567"),
])
def test_number_text_writes_numbers_as_fmt_number_does(value: float | None,
                                                       text: str) -> None:
    assert number_text(value) == text


def test_percent_rounds_half_up_and_clamps() -> None:
    assert [percent(p) for p in (None, 0.0, 0.125, 0.994, 0.996, 1.5, -1)] == [
        0, 0, 13, 99, 100, 100, 0]


def test_time_text_is_utc() -> None:
    assert time_text("2026-11-21T16:58:06.376+02:00") == "2026-11-21 14:58:06"
    assert time_text(None) == ""


def test_the_script_is_served_and_builds_rows_without_html(client: FlaskClient) -> None:
    response = client.get("/static/experiments.js")
    script = response.get_data(as_text=True)
    response.close()
    assert response.status_code == 200 and response.mimetype == "text/javascript"
    assert "innerHTML" not in script and not re.search(r"https?://", script)
    assert '"use strict"' in script and "h.poll(" in script
