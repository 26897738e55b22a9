"""The experiment page (``/experiments/<id>``) and what it draws (``.../metrics``, ``.../rungs``).

Experiments are created through the API and their trials by the real searcher (the
reconciler, on the scripted scheduler); validations arrive through the trials' metrics route.
"""

from __future__ import annotations

import html as htmllib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, create, job_token
from sqlalchemy import event, select, update

from hpcdet.expconf import without_nulls
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Experiment, Job, Metric, Trial
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.web.experiment import flat_hparams, log_hparams, value_text
from hpcdet.master.web.formatting import number_text, state_word, time_text

NASTY = "<b>x</b>&\"'"
ESCAPED = "&lt;b&gt;x&lt;/b&gt;&amp;&#34;&#39;"
YAML_NASTY = "'<b>x</b>&\"'''"  # NASTY as a single-quoted YAML scalar
EXTERNAL = re.compile(r"https?://")
GRID = f"""\
name: {YAML_NASTY}
description: {YAML_NASTY}
labels: [{YAML_NASTY}, tuned]
entrypoint: python3 train.py
reproducibility: {{experiment_seed: 42}}
hyperparameters:
  lr: {{type: categorical, vals: [0.1, 0.01, 0.001]}}
  opt:
    kind: {{type: categorical, vals: [{YAML_NASTY}]}}
    momentum: 0.9
searcher: {{name: grid, metric: loss}}
"""
ASHA = """\
name: asha
entrypoint: python3 train.py
reproducibility: {experiment_seed: 42}
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 0.1}
searcher: {name: adaptive_asha, metric: loss, time_metric: epochs, max_time: 4, max_trials: 4,
           divisor: 2, mode: aggressive, max_concurrent_trials: 4}
"""
# Validation losses of the grid's three trials by step: the second trial's 0.4 is the best.
LOSSES = ({10: 0.9, 20: 0.7, 30: 0.6}, {10: 0.8, 20: 0.4, 30: 0.5}, {10: 1.0, 20: 0.95})


# --- seeding -----------------------------------------------------------------------------

def trials_of(app: Flask, exp_id: int) -> list[Trial]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return list(session.scalars(select(Trial).where(Trial.experiment_id == exp_id)
                                    .order_by(Trial.id)))


def report(client: FlaskClient, trial: Trial, group: str, steps: int,
           metrics: dict[str, float]) -> None:
    response = client.post(f"/api/v1/trials/{trial.id}/metrics", json={
        "group": group, "reports": [{"steps_completed": steps, "metrics": metrics}]},
        headers={"Authorization": f"Bearer {job_token(trial)}"})
    assert response.status_code == 200, response.get_json()


def started(client: FlaskClient, reconciler: Reconciler, config: str) -> int:
    """An experiment whose searcher has created its trials (and submitted their jobs)."""
    response = create(client, config)
    assert response.status_code == 201, response.get_json()
    reconciler.cycle()
    return int(response.get_json()["experiment"]["id"])


def grid_experiment(app: Flask, client: FlaskClient, reconciler: Reconciler) -> tuple[
        int, list[Trial]]:
    """The grid experiment, its 3 trials with LOSSES, and training losses of the first."""
    exp_id = started(client, reconciler, GRID)
    trials = trials_of(app, exp_id)
    assert len(trials) == 3
    for trial, losses in zip(trials, LOSSES, strict=True):
        for steps, loss in losses.items():
            report(client, trial, "validation", steps, {"loss": loss, "acc": 1 - loss})
    for steps in (5, 15):
        report(client, trials[0], "training", steps, {"loss": 2.0 / steps})
    return exp_id, trials


def slurm_jobs(app: Flask, trial_id: int) -> list[str]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return [str(j) for j in session.scalars(select(Job.job_id).where(
            Job.trial_id == trial_id).order_by(Job.id))]


# --- reading the page --------------------------------------------------------------------

def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.data
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def rows(html: str) -> dict[int, tuple[bool, list[str]]]:
    """Trial id -> (row marked best, its cells' inner HTML)."""
    flat = html.replace("\n", "")
    found = re.findall(r'<tr data-trial-id="(\d+)"( class="best")?>(.*?)</tr>', flat)
    return {int(tid): (bool(best), re.findall(r"<td[^>]*>(.*?)</td>", cells))
            for tid, best, cells in found}


def embedded(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="experiment-data">(.*?)</script>',
                      html, re.S)
    assert match, "the page embeds its data"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def header(html: str) -> list[str]:
    """The header cells' text (a sortable column's link and order arrow left out)."""
    head = re.search(r'<tr id="trials-head">(.*?)</tr>', html.replace("\n", ""))
    assert head
    cells = re.findall(r"<th[^>]*>(.*?)</th>", head.group(1))
    return [re.sub(r"<[^>]+>", "", re.sub(r'<span aria-hidden="true">.*?</span>', "", c)).strip()
            for c in cells]


def state_badge(state: str) -> str:
    return f'<span class="state state-{state}" title="{state}">{state_word(state)}</span>'


# --- the page ----------------------------------------------------------------------------

def test_trials_table_has_hparam_columns_best_values_jobs_and_the_best_trial(
        app: Flask, client: FlaskClient, reconciler: Reconciler) -> None:
    exp_id, trials = grid_experiment(app, client, reconciler)
    html = page(client, f"/experiments/{exp_id}")
    assert header(html) == ["Trial", "State", "lr", "opt.kind", "opt.momentum", "Steps",
                            "Best loss", "Restarts", "Slurm job ID"]
    table = rows(html)
    by_best = [trials[1], trials[0], trials[2]]  # the default order: best loss first
    assert list(table) == [t.id for t in by_best]
    assert [best for best, _ in table.values()] == [True, False, False]
    for trial, (best, cells) in zip(by_best, table.values(), strict=True):
        link = f'<a href="/trials/{trial.id}">{trial.id}</a>'
        assert cells[0] == link + (' <span class="label-tag" data-best-mark>best</span>'
                                   if best else "")
        assert cells[1] == state_badge(trial.state)
        assert cells[2:5] == [str(trial.hparams["lr"]), ESCAPED, "0.9"]  # 0.1, 0.01, 0.001
        assert re.findall(r'<a href="/queue\?q=(\d+)"', cells[8]) == slurm_jobs(app, trial.id)
        assert slurm_jobs(app, trial.id)
    assert [cells[5:8] for _, cells in table.values()] == [
        ["30", "0.4", "0"], ["30", "0.6", "0"], ["20", "0.95", "0"]]
    assert sorted(t.hparams["lr"] for t in trials) == [0.001, 0.01, 0.1]
    assert "<th>Rung</th>" not in html


def test_facts_config_and_history_are_rendered_with_nasty_text_escaped(
        app: Flask, client: FlaskClient, reconciler: Reconciler) -> None:
    exp_id, _ = grid_experiment(app, client, reconciler)
    html = page(client, f"/experiments/{exp_id}")
    assert NASTY not in html and "<b>" not in html
    assert f"<h1>Experiment {exp_id}: {ESCAPED}</h1>" in html
    assert f'<dd data-fact="description">{ESCAPED}</dd>' in html
    assert (f'<dd data-fact="labels"><span class="label-tag">{ESCAPED}</span>'
            '<span class="label-tag">tuned</span></dd>') in html
    assert ('<span class="state state-ACTIVE" title="ACTIVE" data-experiment-state>'
            'Active</span>') in html
    assert '<dd data-fact="owner">alice</dd>' in html
    assert "grid, metric <code>loss</code>\n(smaller is better)" in html
    assert '<dd data-fact="ended_at">not yet</dd>' in html
    assert ('<dd data-fact="progress"><span class="progress" role="progressbar" '
            'aria-label="Progress" aria-valuemin="0" aria-valuemax="100" aria-valuenow="0">'
            '<span style="width: 0%"></span></span> 0%</dd>') in html
    assert not EXTERNAL.search(html)
    config = re.search(r'<pre class="config" data-config="effective"[^>]*>(.*?)</pre>', html, re.S)
    assert config
    described = client.get(f"/api/v1/experiments/{exp_id}").get_json()["experiment"]
    # The effective config without its nulls; the submitted one above it, unfolded.
    assert yaml.safe_load(htmllib.unescape(config.group(1))) == without_nulls(described["config"])
    assert "null" not in config.group(1)
    submitted = re.search(r'<pre class="config" data-config="submitted"[^>]*>(.*?)</pre>', html,
                          re.S)
    assert submitted and "<details" not in html.split('data-config="submitted"')[0][-200:]
    history = re.search(r'<tbody id="history">(.*?)</tbody>', html.replace("\n", ""))
    assert history and f"<td>{state_badge('ACTIVE')}</td>" in history.group(1)
    assert "<td>alice</td>" in history.group(1)


def test_chart_data_is_embedded_with_one_hparam_chart_per_hyperparameter(
        app: Flask, client: FlaskClient, reconciler: Reconciler) -> None:
    exp_id, trials = grid_experiment(app, client, reconciler)
    html = page(client, f"/experiments/{exp_id}")
    data = embedded(html)
    assert data["metrics"]["metric"] == "loss" and data["metrics"]["group"] == "validation"
    series = {s["trial_id"]: s["points"] for s in data["metrics"]["trials"]}
    assert sum(len(points) for points in series.values()) == 8
    assert [p["value"] for p in series[trials[1].id]] == [0.8, 0.4, 0.5]
    assert data["experiment"]["best_trial_id"] == trials[1].id
    assert data["experiment"]["name"] == NASTY and "config" not in data["experiment"]
    assert [t["id"] for t in data["trials"]] == [trials[1].id, trials[0].id, trials[2].id]
    assert data["pagination"] == {"offset": 0, "limit": 100, "total": 3, "startIndex": 0,
                                  "endIndex": 3}
    assert data["trials_url"] == (f"/api/v1/experiments/{exp_id}/trials?"
                                  "sortBy=best_validation_metric&offset=0&limit=100")
    assert data["rungs"] is None and data["poll_seconds"] == 5
    assert data["searcher_metric"] == {"name": "loss", "smaller_is_better": True}
    assert '<div id="validation-chart"' in html
    # One chart per hyperparameter that varies; the constant ones listed once, escaped.
    assert re.findall(r'<div class="hparam-chart" data-hparam="([^"]*)">', html) == ["lr"]
    assert re.findall(r'<code data-constant="([^"]*)">(.*?)</code>', html) == [
        ("opt.kind", f"opt.kind={ESCAPED}"), ("opt.momentum", "opt.momentum=0.9")]
    # Hidden until the script has drawn them (no empty boxes without JavaScript).
    assert '<section id="hparam-charts" aria-labelledby="hparam-charts-title" hidden>' in html
    scripts = re.findall(r'<script src="([^"?]+)\?v=[0-9a-f]{12}" defer>', html)
    assert scripts == ["/static/hpcdet.js", "/static/health.js", "/static/shortcuts.js",
                       "/static/chart.js", "/static/hparam_views.js", "/static/compare.js",
                       "/static/experiment.js", "/static/tensorboard.js", "/static/records.js"]
    # The cross-experiment comparison starts from the page's best trials.
    across = re.findall(r'href="/compare\?trials=([^"]*)" data-compare-across', html)
    assert [a.replace("%2C", ",") for a in across] == [
        f"{trials[1].id},{trials[0].id},{trials[2].id}"]


def test_an_experiment_before_its_first_trial(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    html = page(client, f"/experiments/{exp_id}")
    assert rows(html) == {}
    assert '<td colspan="6">No trials yet' in html
    assert 'class="hparam-chart"' not in html
    assert 'aria-labelledby="hparam-charts-title" hidden>' in html
    data = embedded(html)
    assert data["trials"] == [] and data["metrics"]["trials"] == []


def test_actions_are_shown_to_the_owner_only_on_a_master_that_names_users(
        app: Flask, client: FlaskClient) -> None:
    app.config["HPCDET_SETTINGS"] = replace(app.config["HPCDET_SETTINGS"], require_user=True)
    alice = {"X-Hpcdet-User": "alice"}
    client.post("/api/v1/workspaces", json={"name": "team"}, headers=alice)
    client.put("/api/v1/workspaces/team/members/bob", json={"role": "viewer"}, headers=alice)
    exp_id = create(client, workspace="team").get_json()["experiment"]["id"]
    client.set_cookie("hpcdet_user", "alice")
    owner = page(client, f"/experiments/{exp_id}")
    assert "<div class=\"actions\" data-actions>" in owner
    pause = re.search(r'<button[^>]*data-action="pause"[^>]*>', owner.replace("\n", " "))
    assert pause and " hidden" not in pause.group(0)
    assert f'data-action-url="/api/v1/experiments/{exp_id}/pause"' in owner
    client.set_cookie("hpcdet_user", "bob")
    other = page(client, f"/experiments/{exp_id}")
    assert "data-actions" not in other and "data-action=" not in other
    assert "Only alice, an editor of its workspace or an admin may pause" in other
    client.set_cookie("hpcdet_user", "carol")  # not in the workspace: as if it did not exist
    page(client, f"/experiments/{exp_id}", status=404)


def test_an_open_master_shows_the_actions_to_everybody(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    client.set_cookie("hpcdet_user", "bob")
    assert 'data-action="pause"' in page(client, f"/experiments/{exp_id}")


def test_an_unknown_experiment_is_a_404_page_in_the_layout(client: FlaskClient) -> None:
    html = page(client, "/experiments/999", status=404)
    assert "Experiment 999 not found" in html and 'role="alert"' in html
    assert re.search(r'<link rel="stylesheet" href="/static/hpcdet\.css\?v=[0-9a-f]{12}">', html)
    assert 'href="/cluster"' in html
    assert "experiment-data" not in html and "experiment.js" not in html


def test_an_asha_experiment_shows_the_rung_each_trial_reached(
        app: Flask, client: FlaskClient, reconciler: Reconciler) -> None:
    exp_id = started(client, reconciler, ASHA)
    first, second, third, fourth = trials_of(app, exp_id)
    report(client, first, "validation", 1, {"loss": 0.1, "epochs": 1})  # promoted to rung 1
    report(client, second, "validation", 1, {"loss": 0.5, "epochs": 1})  # stopped in rung 0
    reconciler.cycle()
    assert trials_of(app, exp_id)[1].stop_reason == "early_stopped"
    html = page(client, f"/experiments/{exp_id}")
    assert header(html)[-1] == "Rung"
    last = [cells[-1] for _, cells in rows(html).values()]
    assert [re.sub(r"<[^>]*>|^.*?>", "", cell) for cell in last] == [
        "2 of 3 (no result yet)", "1 of 3", "1 of 3 (no result yet)", "1 of 3 (no result yet)"]
    rung_cells = re.findall(r'<td data-rung="(\d)" title="([^"]*)">', html)
    assert rung_cells[0] == ("1", "bracket 1; this rung needs 2 units of searcher.max_time")
    answer = client.get(f"/api/v1/experiments/{exp_id}/rungs").get_json()
    assert embedded(html)["rungs"] == answer
    assert answer["searcher"] == "adaptive_asha"
    assert [(r["trial_id"], r["rung"], r["recorded"]) for r in answer["rungs"]] == [
        (first.id, 1, False), (second.id, 0, True), (third.id, 0, False), (fourth.id, 0, False)]


# --- GET /experiments/<id>/metrics and /rungs ---------------------------------------------

@contextmanager
def statements(app: Flask) -> Iterator[list[str]]:
    """The SQL statements run inside the block."""
    seen: list[str] = []
    engine = app.config["HPCDET_ENGINE"]

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_metrics_are_every_trials_series_of_the_searcher_metric(
        app: Flask, client: FlaskClient, reconciler: Reconciler) -> None:
    exp_id, trials = grid_experiment(app, client, reconciler)
    body = client.get(f"/api/v1/experiments/{exp_id}/metrics").get_json()
    assert body == {"metric": "loss", "group": "validation", "trials": [
        {"trial_id": trial.id, "points": [{"steps_completed": s, "value": v}
                                          for s, v in losses.items()]}
        for trial, losses in zip(trials, LOSSES, strict=True)]}
    acc = client.get(f"/api/v1/experiments/{exp_id}/metrics?name=acc").get_json()
    assert acc["metric"] == "acc"
    assert [p["value"] for p in acc["trials"][1]["points"]] == pytest.approx([0.2, 0.6, 0.5])
    training = client.get(f"/api/v1/experiments/{exp_id}/metrics?group=training&name=loss")
    assert training.get_json()["trials"] == [{"trial_id": trials[0].id, "points": [
        {"steps_completed": 5, "value": 0.4}, {"steps_completed": 15, "value": 2.0 / 15}]}]
    none = client.get(f"/api/v1/experiments/{exp_id}/metrics?name=nope").get_json()
    assert none == {"metric": "nope", "group": "validation", "trials": []}


def test_metrics_rolled_back_by_a_later_run_are_hidden(
        app: Flask, client: FlaskClient, reconciler: Reconciler) -> None:
    exp_id, trials = grid_experiment(app, client, reconciler)
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        session.execute(update(Metric).where(Metric.trial_id == trials[2].id,
                                             Metric.steps_completed == 20)
                        .values(archived=True))
        session.commit()
    body = client.get(f"/api/v1/experiments/{exp_id}/metrics").get_json()
    assert body["trials"][2] == {"trial_id": trials[2].id,
                                 "points": [{"steps_completed": 10, "value": 1.0}]}


def test_metrics_of_all_trials_are_read_in_one_query(
        app: Flask, client: FlaskClient, reconciler: Reconciler) -> None:
    exp_id, _ = grid_experiment(app, client, reconciler)
    with statements(app) as seen:
        body = client.get(f"/api/v1/experiments/{exp_id}/metrics").get_json()
    assert len(body["trials"]) == 3
    reading_metrics = [s for s in seen if re.search(r"\bFROM metrics\b", s)]
    assert len(reading_metrics) == 1, seen
    # The experiment, then the metrics (and the master's health for the answer's header).
    assert len([s for s in seen if "FROM cluster_snapshots" not in s]) == 2, seen


def test_metrics_errors(app: Flask, client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    assert_error(client.get("/api/v1/experiments/999/metrics"), 404, "not_found")
    for group in ("profiling", "bogus"):
        message = assert_error(client.get(f"/api/v1/experiments/{exp_id}/metrics?group={group}"),
                               400, "bad_request")
        assert message == "group: must be one of validation, training"
    assert_error(client.get("/api/v1/experiments/999/rungs"), 404, "not_found")


def test_rungs_of_other_searchers_are_empty(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    body = client.get(f"/api/v1/experiments/{exp_id}/rungs").get_json()
    assert body == {"searcher": "single", "rungs": []}


def test_an_experiment_without_a_searcher_metric_needs_a_name(
        app: Flask, client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        exp = session.get_one(Experiment, exp_id)
        exp.config = {**exp.config, "searcher": {"name": "single"}}
        session.commit()
    message = assert_error(client.get(f"/api/v1/experiments/{exp_id}/metrics"),
                           400, "bad_request")
    assert message.startswith("name:")
    assert client.get(f"/api/v1/experiments/{exp_id}/metrics?name=x").status_code == 200
    html = page(client, f"/experiments/{exp_id}")
    assert embedded(html)["metrics"] == {"metric": None, "group": "validation", "trials": []}


# --- the page's text helpers (no database) ------------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    (None, ""), (3, "3"), (2.0, "2"), (0.5, "0.5"), (123.456, "123.5"), (0.0012346, "0.001235"),
    (0.0001234, "1.234e-4"), (1234567.5, "1.235e+6"), (-0.25, "-0.25")])
def test_numbers_are_written_as_the_script_writes_them(value: float | None, text: str) -> None:
    assert number_text(value) == text


def test_hparam_values_and_nesting() -> None:
    flat = flat_hparams({"lr": 0.1, "opt": {"kind": "adam", "betas": {"b1": 0.9}}, "empty": {},
                         "layers": [1, 2], "flag": True, "none": None})
    assert flat == {"lr": 0.1, "opt.kind": "adam", "opt.betas.b1": 0.9, "empty": {},
                    "layers": [1, 2], "flag": True, "none": None}
    assert [value_text(flat[k]) for k in ("lr", "opt.kind", "empty", "layers", "flag", "none")] \
        == ["0.1", "adam", "{}", "[1, 2]", "true", ""]


def test_times_are_utc_without_the_zone() -> None:
    assert time_text("2026-11-21T15:04:05.123+01:00") == "2026-11-21 14:04:05"
    assert time_text(None) == ""


def test_log_hyperparameters_are_named_for_a_log_axis() -> None:
    space = {"lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
             "hidden": {"type": "int", "minval": 16, "maxval": 64}, "fixed": 3,
             "opt": {"decay": {"type": "log", "base": 10, "minval": -6, "maxval": -2},
                     "kind": {"type": "const", "val": "adam"}}}
    assert log_hparams(space) == ["lr", "opt.decay"]
