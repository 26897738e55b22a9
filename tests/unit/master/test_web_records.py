"""Checkpoints, logs and the fork/continue forms on the pages (Flask test client): the page
download route streams the API's bytes, the log download and search, the experiment's
checkpoint list and its pages, and the forms' contents.
Chromium: tests/web/test_chromium_records.py.
"""

from __future__ import annotations

import datetime as dt
import html as html_lib
import sys
from pathlib import Path

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from log_seed import sessions

from hpcdet.master.models import Checkpoint, Experiment
from hpcdet.master.web.checkpoints import PAGE_SIZE, size_text
from hpcdet.master.web.trial_logs import log_level

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "web"))
from seed_records import NEEDLE, Seeded, seed_records  # noqa: E402

USER = {"X-Hpcdet-User": "tester"}


@pytest.fixture
def seeded(app: Flask, tmp_path: Path) -> Seeded:
    return seed_records(sessions(app), tmp_path / "ckpts")


def html(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.data[:500]
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def test_page_download_streams_the_api_tar(client: FlaskClient, seeded: Seeded) -> None:
    page = client.get(f"/checkpoints/{seeded.best}/download")
    api = client.get(f"/api/v1/checkpoints/{seeded.best}/download", headers=USER)
    assert page.status_code == api.status_code == 200
    assert page.data == api.data and len(page.data) > 10_000
    assert page.headers["Content-Disposition"] == f'attachment; filename="{seeded.best}.tar"'


@pytest.mark.parametrize("uuid, status", [("deleted", 410), ("nope", 404), ("x" * 5000, 404),
                                          ("%3Cb%3E", 404)])
def test_page_download_failures_are_html(client: FlaskClient, seeded: Seeded, uuid: str,
                                         status: int) -> None:
    target = seeded.deleted if uuid == "deleted" else uuid
    text = html(client, f"/checkpoints/{target}/download", status)
    assert "data-page-error" in text and "<b>" not in text


def test_trial_api_marks_checkpoints(client: FlaskClient, seeded: Seeded) -> None:
    listed = client.get(f"/api/v1/trials/{seeded.trial_id}", headers=USER).json["checkpoints"]
    marks = {c["uuid"]: (c["best"], c["latest"]) for c in listed}
    assert marks == {seeded.deleted: (False, False), seeded.best: (True, False),
                     seeded.latest: (False, True)}
    best = next(c for c in listed if c["uuid"] == seeded.best)
    assert best["size_bytes"] > 10_000 and best["storage_path"].endswith(seeded.best)
    assert best["searcher_metric_value"] == 0.2


def test_log_download_is_the_whole_filtered_log(client: FlaskClient, seeded: Seeded) -> None:
    whole = client.get(f"/trials/{seeded.trial_id}/logs.txt")
    assert whole.status_code == 200 and whole.mimetype == "text/plain"
    lines = whole.get_data(as_text=True).splitlines()
    assert len(lines) == seeded.log_lines
    assert lines[0] == "2026-11-26T09:00:00+00:00 [rank 0 node1 stderr] INFO: harness " \
        "starting rank 0"
    found = client.get(f"/trials/{seeded.trial_id}/logs.txt?q=BOOM&stream=stdout")
    assert found.get_data(as_text=True).splitlines()[0].endswith(NEEDLE.lower())
    assert len(found.get_data(as_text=True).splitlines()) == 1
    percent = client.get(f"/trials/{seeded.trial_id}/logs.txt?q=%25&rank=zz&stream=<b>")
    assert percent.status_code == 200 and percent.data == b""  # % is literal, not a wildcard
    assert html(client, "/trials/99999999999/logs.txt", 404)


def test_page_search_counts_on_the_server(client: FlaskClient, seeded: Seeded) -> None:
    text = html(client, f"/trials/{seeded.trial_id}?q=loss")
    assert "300 lines match “loss”; showing the last 200." in text
    long = html(client, f"/trials/{seeded.trial_id}?q=" + "a" * 5000)
    assert "No line matches" in long


def test_api_logs_search(client: FlaskClient, seeded: Seeded) -> None:
    url = f"/api/v1/trials/{seeded.trial_id}/logs"
    answer = client.get(f"{url}?q=Harness&tail=1", headers=USER).json
    assert answer["matched"] == 2 and answer["logs"][0]["line"] == "INFO: harness done"
    assert "matched" not in client.get(url, headers=USER).json
    assert client.get(f"{url}?q=" + "a" * 201, headers=USER).status_code == 400


def test_log_levels_by_words_not_stream() -> None:
    assert log_level("ERROR: failed") == "error"
    assert log_level("Traceback (most recent call last):") == "error"
    assert log_level("ValueError: bad") == "error"
    assert log_level("WARNING: slow") == "warning"
    assert log_level("INFO: error_rate=0.1") == ""


def test_size_text() -> None:
    assert [size_text(v) for v in (None, 0, 812, 1536, 5 * 1024**3)] == [
        "—", "0 B", "812 B", "1.5 KiB", "5.0 GiB"]


def test_experiment_checkpoints_best_first_and_paged(app: Flask, client: FlaskClient,
                                                     seeded: Seeded) -> None:
    at = dt.datetime(2026, 11, 26, 11, tzinfo=dt.timezone.utc)
    with sessions(app).begin() as session:  # more than two pages of unvalidated ones
        session.add_all(Checkpoint(uuid=f"extra-{i:03}", trial_id=seeded.trial_id,
                                   steps_completed=400 + i, reported_at=at,
                                   validation_metrics=None) for i in range(2 * PAGE_SIZE))
    first = html(client, f"/experiments/{seeded.exp_id}")
    order = [part.split('"')[0] for part in
             first.split('<tbody id="experiment-checkpoints">')[1].split('data-checkpoint="')[1:]]
    assert order[:3] == [seeded.best, seeded.latest, "extra-039"]
    assert len(order) == PAGE_SIZE and "Page 1 of 3" in first
    last = html(client, f"/experiments/{seeded.exp_id}?checkpoints_page=" + "9" * 400)
    assert "Page 3 of 3" in last and f'data-checkpoint="{seeded.deleted}"' in last
    assert "Page 1 of 3" in html(client, f"/experiments/{seeded.exp_id}?checkpoints_page=-1")


def test_fork_page_has_the_config_without_nulls(app: Flask, client: FlaskClient,
                                                seeded: Seeded) -> None:
    with sessions(app).begin() as session:
        exp = session.get_one(Experiment, seeded.exp_id)
        exp.config = {**exp.config, "description": None,
                      "checkpoint_storage": {**exp.config["checkpoint_storage"],
                                             "secret_key": "s3cr3t"}}
    text = html(client, f"/experiments/{seeded.exp_id}/fork")
    assert f'data-submit-url="/api/v1/experiments/{seeded.exp_id}/fork"' in text
    body = text.split('<textarea id="config-text"')[1].split(">", 1)[1].split("</textarea>")[0]
    config = yaml.safe_load(html_lib.unescape(body))
    assert "description" not in config and config["name"] == "records <b>demo</b>"
    assert "s3cr3t" not in text
    assert "records &lt;b&gt;demo&lt;/b&gt;" in text
    assert html(client, "/experiments/99999999999999999/fork", 404)


def test_continue_page_only_for_an_ended_single_trial(app: Flask, client: FlaskClient,
                                                      seeded: Seeded) -> None:
    text = html(client, f"/trials/{seeded.trial_id}/continue")
    assert f'data-submit-url="/api/v1/experiments/{seeded.exp_id}/continue"' in text
    assert "data-continue-trial" in html(client, f"/trials/{seeded.trial_id}")
    with sessions(app).begin() as session:
        session.get_one(Experiment, seeded.exp_id).searcher_name = "random"
    refused = html(client, f"/trials/{seeded.trial_id}/continue", 409)
    assert "fork the trial instead" in refused and "<textarea" not in refused
    assert "data-continue-trial" not in html(client, f"/trials/{seeded.trial_id}")
    forked = html(client, f"/trials/{seeded.trial_id}/fork")
    assert "type: const" in forked and "name: single" in forked


def test_checkpoint_list_page_alone(client: FlaskClient, seeded: Seeded) -> None:
    """What the experiment page's script refetches; a plain page without it."""
    text = html(client, f"/experiments/{seeded.exp_id}/checkpoints")
    assert text.count("<tr data-checkpoint=") == 3 and 'data-ended="1"' in text
    assert 'id="experiment-data"' not in text
    assert "data-not-found" in html(client, "/experiments/12345/checkpoints",
                                    404)
