"""The trial page ``/trials/<id>``: facts, Slurm jobs, charts' data, checkpoints, history, logs."""

from __future__ import annotations

import datetime as dt
import html as html_lib
import json
import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from log_seed import add_experiment, add_job, add_trial, sessions
from sqlalchemy.orm import Session

from hpcdet.master.models import Checkpoint, Metric, StateChange, Trial, TrialLog
from hpcdet.master.web.formatting import number_text

NASTY = "<b>x</b>&\"'"
ESCAPED = "&lt;b&gt;x&lt;/b&gt;&amp;&#34;&#39;"
EXTERNAL = re.compile(r"https?://")
AT = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc)
CONFIG: dict[str, Any] = {"resources": {"slots_per_trial": 2}, "slurm": {"slots_per_node": 1},
                          "searcher": {"name": "single", "metric": "validation_loss"}}
# (group, step, name, value); the archived row was rolled back by a later run: never shown.
METRICS = [("training", 10, "loss", 0.9), ("training", 10, "accuracy", 0.5),
           ("training", 20, "loss", 0.7), ("training", 20, "accuracy", 0.6),
           ("validation", 20, "validation_loss", 0.75), ("validation", 20, "accuracy", 0.55),
           ("profiling", 20, "gpu_util", 99.0)]


def page(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.data
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def body_rows(html: str, tbody_id: str) -> list[str]:
    """The rows of ``tbody#tbody_id``, line breaks removed."""
    match = re.search(rf'<tbody id="{tbody_id}">(.*?)</tbody>', html, re.S)
    assert match, f"no tbody#{tbody_id}"
    return re.findall(r"<tr[^>]*>(.*?)</tr>", match.group(1).replace("\n", ""))


def options(html: str, select_id: str) -> list[tuple[str, bool]]:
    """(value, selected) of each option of ``select#select_id``."""
    match = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', html, re.S)
    assert match, f"no select#{select_id}"
    return [(value, bool(selected)) for value, selected in
            re.findall(r'<option value="([^"]*)"( selected)?>', match.group(1))]


def script_data(html: str) -> Any:
    match = re.search(r'<script type="application/json" id="trial-data">(.*?)</script>', html,
                      re.S)
    assert match
    return json.loads(match.group(1))


def log_lines(html: str) -> list[str]:
    """The text of each log line in ``pre#logs``, prefix included, unescaped."""
    match = re.search(r'<pre class="logs" id="logs"[^>]*>(.*?)</pre>', html, re.S)
    assert match
    spans = re.findall(r'<span class="line[^"]*"[^>]*><time class="at" [^>]*>[^<]*</time> '
                       r'<span class="rank">(.*?)</span> (.*?)\n</span>', match.group(1), re.S)
    return [html_lib.unescape(f"{prefix} {text}") for prefix, text in spans]


def add_rows(session: Session, trial: Trial) -> None:
    """Metrics, checkpoints and state history of ``trial``."""
    session.add_all(Metric(trial_id=trial.id, group=group, steps_completed=step, name=name,
                           value=value, reported_at=AT) for group, step, name, value in METRICS)
    session.add(Metric(trial_id=trial.id, group="training", steps_completed=30, name="ghost",
                       value=1.0, archived=True))
    session.add_all([
        Checkpoint(uuid="ck-10", trial_id=trial.id, steps_completed=10, state="DELETED",
                   validation_metrics=None, reported_at=AT),
        Checkpoint(uuid="ck-20", trial_id=trial.id, steps_completed=20, reported_at=AT,
                   validation_metrics={"accuracy": 0.55, "validation_loss": 0.75})])
    session.add_all(StateChange(entity_kind="trial", entity_id=trial.id, from_state=old,
                                to_state=new, cause=cause, actor="system", at=AT)
                    for old, new, cause in [(None, "QUEUED", "created"),
                                            ("QUEUED", "RUNNING", f"job 102 started {NASTY}")])


def add_logs(session: Session, trial: Trial) -> None:
    """Rank 0 and 1 lines on two nodes, a batch-script line, stderr, a nasty line, 210 more."""
    rows = [(0, "node3", "stdout", "rank zero says hi"), (1, "node4", "stderr", "rank one warns"),
            (None, "node3", "stdout", "batch script line"), (1, "node4", "stdout", NASTY)]
    rows = [(0, "node3", "stdout", f"filler {i}") for i in range(210)] + rows
    session.add_all(TrialLog(trial_id=trial.id, job_id="102", rank=rank, node=node,
                             stream=stream, line=line) for rank, node, stream, line in rows)


@pytest.fixture
def trial_id(app: Flask) -> int:
    """A running trial of two ranks, its second Slurm job on node[3-4], with everything seeded."""
    with sessions(app).begin() as session:
        exp = add_experiment(session, {**CONFIG, "name": NASTY})
        exp.name = NASTY
        trial = add_trial(session, exp)
        trial.hparams = {"lr": 0.1, "layers": [64, 32]}
        trial.seed, trial.steps_completed, trial.restarts = 4242, 20, 1
        trial.best_validation = {"steps_completed": 20,
                                 "metrics": {"accuracy": 0.55, "validation_loss": 0.75}}
        trial.latest_validation = trial.best_validation
        add_job(session, trial, "101", "node[1-2]", native_state="NODE_FAIL", exit_code=1,
                active=False)
        add_job(session, trial, "102", "node[3-4]", native_state="RUNNING", requeues=2)
        add_rows(session, trial)
        add_logs(session, trial)
        return trial.id


def test_facts_show_the_trial_its_experiment_and_its_validations(client: FlaskClient,
                                                                 trial_id: int) -> None:
    html = page(client, f"/trials/{trial_id}")
    facts = re.search(r'<dl class="facts" id="facts">(.*?)</dl>', html, re.S)
    assert facts
    text = facts.group(1)
    assert ('<span class="state state-RUNNING" title="RUNNING" data-trial-state>'
            'Running</span>') in text
    assert 'href="/experiments/' in text and ESCAPED in text and NASTY not in html
    assert '<dd data-fact="hparams">layers=[64, 32], lr=0.1</dd>' in text
    assert '<dd data-fact="seed">4242</dd>' in text
    assert '<dd data-fact="steps_completed">20</dd>' in text
    assert '<dd data-fact="restarts">1</dd>' in text
    # The searcher metric comes first, then the others by name.
    assert ('<dd data-fact="best_validation">step 20: validation_loss 0.75, accuracy 0.55</dd>'
            in text)
    assert '<dd data-fact="job_ids">101, 102</dd>' in text
    assert '<dd data-fact="nodes">node[3-4]</dd>' in text
    assert '<dd data-fact="pending" hidden></dd>' in text  # not QUEUED: no reason shown
    assert not EXTERNAL.search(html)
    assert re.search(r'<script src="/static/trial\.js\?v=[0-9a-f]{12}" defer></script>', html)


def test_jobs_table_lists_every_slurm_job_with_run_state_nodes_exit_and_requeues(
        client: FlaskClient, trial_id: int) -> None:
    rows = body_rows(page(client, f"/trials/{trial_id}"), "jobs")
    assert len(rows) == 2
    assert rows[0].startswith("<td>101</td><td>1</td><td>NODE_FAIL</td><td>node[1-2]</td>"
                              "<td>1</td><td>0</td>")
    assert rows[1].startswith("<td>102</td><td>2</td><td>RUNNING</td><td>node[3-4]</td>"
                              "<td></td><td>2</td>")


def test_checkpoints_and_state_history_tables(client: FlaskClient, trial_id: int) -> None:
    html = page(client, f"/trials/{trial_id}")
    checkpoints = body_rows(html, "checkpoints")
    # Deleted: greyed, no marks, no download; the active one is the best and the latest.
    at = ('<td><time datetime="2026-03-04T05:06:07Z" title="2026-03-04T05:06:07Z">'
          "2026-03-04 05:06:07 UTC</time></td>")
    assert checkpoints == [
        '<td><code class="uuid">ck-10</code></td><td>10</td>'
        '<td><span class="state state-DELETED" title="DELETED">Deleted</span></td>'
        "<td>—</td><td>—</td>"
        '<td><span class="live">files deleted</span></td>' + at + '<td>—</td>',
        '<td><code class="uuid">ck-20</code> <span class="label-tag mark-best" '
        'data-mark="best">best</span> <span class="label-tag mark-latest" '
        'data-mark="latest">latest</span></td><td>20</td>'
        '<td><span class="state state-ACTIVE" title="ACTIVE">Active</span></td>'
        "<td>validation_loss 0.75, accuracy 0.55</td><td>—</td>"
        '<td><a href="/checkpoints/ck-20/download" download="ck-20.tar" data-download>'
        "Download .tar</a></td>" + at + "<td>—</td>"]
    assert '<tr data-checkpoint="ck-10" data-checkpoint-state="DELETED" class="ckpt ' \
        'ckpt-deleted">' in html
    history = body_rows(html, "history")
    assert len(history) == 2
    assert history[0].startswith(
        '<td></td><td><span class="state state-QUEUED" title="QUEUED">Queued</span>')
    assert '<span class="state state-RUNNING" title="RUNNING">Running</span>' in history[1]
    assert f"<td>job 102 started {ESCAPED}</td><td>system</td>" in history[1]


def test_metric_selects_list_each_groups_names_with_the_right_default(
        client: FlaskClient, trial_id: int) -> None:
    html = page(client, f"/trials/{trial_id}")
    # Archived ("ghost") and profiling rows are not chart metrics.
    assert options(html, "training-metric") == [("accuracy", False), ("loss", True)]
    assert options(html, "validation-metric") == [("accuracy", False),
                                                  ("validation_loss", True)]
    assert '<div id="training-chart" data-group="training">' in html
    assert "The latest training report, at step 20:\nloss 0.7, accuracy 0.6." in html


def test_training_default_is_the_first_name_without_loss(app: Flask,
                                                         client: FlaskClient) -> None:
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session, CONFIG))
        session.add_all(Metric(trial_id=trial.id, group="training", steps_completed=1,
                               name=name, value=1.0) for name in ("zeta", "beta"))
        trial_id = trial.id
    html = page(client, f"/trials/{trial_id}")
    assert options(html, "training-metric") == [("beta", True), ("zeta", False)]
    assert options(html, "validation-metric") == [("", False)]
    assert "No validation metrics yet." in html


def test_embedded_data_is_what_the_api_answers(client: FlaskClient, trial_id: int) -> None:
    """trial.js compares later answers with these to see whether anything changed."""
    data = script_data(page(client, f"/trials/{trial_id}"))
    assert data["answer"] == client.get(f"/api/v1/trials/{trial_id}").get_json()
    # The charts start from the downsampled series of each chart's default metric.
    for group, name in (("training", "loss"), ("validation", "validation_loss")):
        api = client.get(f"/api/v1/trials/{trial_id}/metrics/series?group={group}"
                         f"&name={name}&max_points=500").get_json()
        assert data["series"][group] == api
    assert [(p["batches"], p["value"]) for p in data["series"]["training"]["series"][0][
        "points"]] == [(10, 0.9), (20, 0.7)]
    assert data["searcher_metric"] == "validation_loss"
    assert data["urls"] == {"trial": f"/api/v1/trials/{trial_id}",
                            "metrics": f"/api/v1/trials/{trial_id}/metrics",
                            "series": f"/api/v1/trials/{trial_id}/metrics/series",
                            "logs": f"/api/v1/trials/{trial_id}/logs",
                            "logs_text": f"/trials/{trial_id}/logs.txt",
                            "checkpoint_download": "/checkpoints/UUID/download"}
    assert data["facts_seconds"] == 5 and data["log_seconds"] == 2
    assert data["log_filter"] == {"rank": None, "stream": None, "q": ""}
    last = client.get(f"/api/v1/trials/{trial_id}/logs?tail=1").get_json()["last_id"]
    assert data["last_log_id"] == last


def test_logs_show_the_last_200_lines_with_rank_node_and_stream(client: FlaskClient,
                                                                trial_id: int) -> None:
    html = page(client, f"/trials/{trial_id}")
    lines = log_lines(html)
    assert len(lines) == 200
    assert lines[0] == "[rank 0 node3 stdout] filler 14"
    assert lines[-4:] == ["[rank 0 node3 stdout] rank zero says hi",
                          "[rank 1 node4 stderr] rank one warns",
                          "[node3 stdout] batch script line",
                          f"[rank 1 node4 stdout] {NASTY}"]
    assert f"</span> {ESCAPED}\n</span>" in html and NASTY not in html
    assert re.search(r'<span class="line stderr" id="log-\d+" data-log-id="\d+" data-rank="1" '
                     r'data-stream="stderr">', html)
    assert "The last 200 lines." in html


def test_rank_and_stream_filters(client: FlaskClient, trial_id: int) -> None:
    html = page(client, f"/trials/{trial_id}")
    assert options(html, "log-rank") == [("", True), ("0", False), ("1", False)]
    assert options(html, "log-stream") == [("", True), ("stdout", False), ("stderr", False),
                                           ("master", False)]
    rank_one = page(client, f"/trials/{trial_id}?rank=1")
    assert log_lines(rank_one) == ["[rank 1 node4 stderr] rank one warns",
                                   f"[rank 1 node4 stdout] {NASTY}"]
    assert options(rank_one, "log-rank") == [("", False), ("0", False), ("1", True)]
    assert script_data(rank_one)["log_filter"] == {"rank": 1, "stream": None, "q": ""}
    stderr = page(client, f"/trials/{trial_id}?stream=stderr&rank=")
    assert log_lines(stderr) == ["[rank 1 node4 stderr] rank one warns"]
    assert "The last 1 line on stderr." in stderr


def test_a_filter_beyond_the_slots_is_offered_and_junk_filters_mean_all(
        client: FlaskClient, trial_id: int) -> None:
    beyond = page(client, f"/trials/{trial_id}?rank=5")
    assert options(beyond, "log-rank")[-1] == ("5", True) and len(options(beyond, "log-rank")) == 7
    assert "No log lines yet." in beyond and script_data(beyond)["last_log_id"] == 0
    junk = page(client, f"/trials/{trial_id}?rank=%C2%B2&stream=%3Cb%3E")
    assert len(log_lines(junk)) == 200
    assert script_data(junk)["log_filter"] == {"rank": None, "stream": None, "q": ""}


def test_a_queued_trial_says_why_it_waits_in_words(app: Flask, client: FlaskClient) -> None:
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session, CONFIG), state="QUEUED")
        add_job(session, trial, "301", None, reason="Resources")
        trial_id = trial.id
    html = page(client, f"/trials/{trial_id}")
    assert ('<dd data-fact="pending">waiting for free resources (Resources)</dd>' in html)
    assert '<dd data-fact="nodes">none yet</dd>' in html
    assert "No checkpoints yet." in html and "No log lines yet." in html
    assert "No training metrics yet." in html


def test_unknown_trial_is_a_404_page_in_the_layout(client: FlaskClient) -> None:
    html = page(client, "/trials/999999", status=404)
    assert '<p class="error" role="alert" data-page-error>trial 999999 not found</p>' in html
    assert re.search(r'<link rel="stylesheet" href="/static/hpcdet\.css\?v=[0-9a-f]{12}">', html)
    assert "trial.js" not in html and 'id="trial-data"' not in html


def test_trial_script_is_served_and_loads_nothing_external(client: FlaskClient) -> None:
    response = client.get("/static/trial.js")
    assert response.status_code == 200 and response.mimetype == "text/javascript"
    text = response.get_data(as_text=True)
    response.close()
    assert not EXTERNAL.search(text) and "innerHTML" not in text


@pytest.mark.parametrize(("value", "text"), [
    (None, ""), (0.25, "0.25"), (1 / 3, "0.3333"), (1234.5678, "1235"), (123456.7, "123500"),
    (2e6, "2000000"), (7, "7"), (0.0001234, "1.234e-4"), (-3.5e7 + 0.5, "-3.500e+7"),
    ("n/a", "n/a")])
def test_numbers_are_written_as_the_pages_script_writes_them(value: Any, text: str) -> None:
    assert number_text(value) == text
